// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter // import "github.com/nexovue/otelcol-nexovue/exporter/profileviewexporter"

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/nexovue/otelcol-nexovue/exporter/profileviewexporter/internal/metadata"
)

type view struct {
	cfg       *Config
	set       exporter.Settings
	store     *store
	telemetry *metadata.TelemetryBuilder
	renders   chan struct{}
	server    *http.Server
	serveDone sync.WaitGroup
	// dropLogs limits the log lines of dropped profiles to one per second.
	dropLogMu   sync.Mutex
	lastDropLog time.Time
	suppressed  int
}

func newView(cfg *Config, set exporter.Settings) (*view, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &view{
		cfg: cfg,
		set: set,
		// The aggregates are held to half the cap: Go's collector (GOGC 100)
		// lets the heap grow to twice what is live before it collects.
		store:     newStore(cfg.Window, int64(cfg.MaxMemoryMiB)<<20/2, time.Now),
		telemetry: tb,
		renders:   make(chan struct{}, cfg.MaxConcurrentRenders),
	}, nil
}

func (v *view) start(ctx context.Context, host component.Host) error {
	ln, err := v.cfg.ToListener(ctx)
	if err != nil {
		return err
	}
	srv, err := v.cfg.ToServer(ctx, host.GetExtensions(), v.set.TelemetrySettings, v.handler())
	if err != nil {
		ln.Close()
		return err
	}
	srv.MaxHeaderBytes = int(v.cfg.MaxRequestBodySize)
	v.server = srv
	addr := ln.Addr().String()
	if !isLoopback(ln.Addr()) {
		v.set.Logger.Warn("The profile view listens on a non-loopback address: profiles reveal code paths and process details (function and file names, command lines, service names) to whoever reaches it; set auth (e.g. the bearertokenauth extension) or keep it on 127.0.0.1",
			zap.String("endpoint", addr))
	}
	v.set.Logger.Info("Profile view serving", zap.String("url", "http://"+addr+"/"))
	v.serveDone.Add(1)
	go func() {
		defer v.serveDone.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			v.set.Logger.Error("profile view server stopped", zap.Error(err))
		}
	}()
	return nil
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

func (v *view) shutdown(ctx context.Context) error {
	var err error
	if v.server != nil {
		err = v.server.Shutdown(ctx)
		v.serveDone.Wait()
	}
	v.telemetry.Shutdown()
	return err
}

// consume adds a batch to the window. It never fails: what it cannot keep is
// counted by reason, and malformed or too large profiles are logged.
func (v *view) consume(ctx context.Context, pd pprofile.Profiles) error {
	res := v.store.ingest(pd, v.cfg.MaxProfileBytes)
	v.telemetry.ExporterProfileviewSamplesKept.Add(ctx, res.kept)
	for reason, n := range map[string]int64{"malformed": res.malformed, "too_large": res.tooLarge, "memory_cap": res.memoryCap, "outside_window": res.outsideWindow} {
		if n > 0 {
			v.telemetry.ExporterProfileviewSamplesDropped.Add(ctx, n, metric.WithAttributes(attribute.String("reason", reason)))
		}
	}
	if len(res.reasons) > 0 {
		v.logDrops(res.reasons)
	}
	return nil
}

func (v *view) logDrops(reasons []string) {
	v.dropLogMu.Lock()
	defer v.dropLogMu.Unlock()
	if time.Since(v.lastDropLog) < time.Second {
		v.suppressed += len(reasons)
		return
	}
	v.lastDropLog = time.Now()
	v.set.Logger.Warn("Profile view dropped profiles (counted in otelcol_exporter_profileview_samples_dropped)",
		zap.String("first", reasons[0]), zap.Int("profiles", len(reasons)), zap.Int("not_logged_before", v.suppressed))
	v.suppressed = 0
}
