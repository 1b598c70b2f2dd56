// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver"

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/execsync"
	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/metadata"
)

// ExecSyncUnavailableMessage is the warning logged when exec_sync_per_second
// is above 0 but the program cannot be attached: the receiver then profiles
// as upstream does, short-lived processes mostly missing.
const ExecSyncUnavailableMessage = "exec_sync_per_second is set but processes cannot be synchronised at exec here: short-lived processes will mostly be missing from profiles"

// execSyncHook is what attachExecSync returns: the attached program.
type execSyncHook interface {
	State() (execsync.State, error)
	// Latency watches the last exec recorded (execsync.Hook.Latency).
	Latency(context.Context) (time.Duration, int, error)
	Close() error
}

// latencyEvery is how often the receiver watches an exec for
// otelcol_receiver_profiling_exec_sync_latency (a variable for the tests).
var latencyEvery = time.Second

// attachExecSync finds upstream's maps in this process and attaches the
// exec program. It refuses where the collector is not in the initial PID
// namespace: the kernel gives the program the initial namespace's PIDs, and
// upstream then translates the PIDs it reports itself.
func attachExecSync(perSecond uint64) (execSyncHook, error) {
	if ns, err := nestedPIDNamespace("/proc/self/status"); err != nil {
		return nil, err
	} else if ns {
		return nil, errors.New("the collector runs in a PID namespace of its own (run it with the host's: hostPID, --pid=host)")
	}
	maps, err := execsync.FindMaps()
	if err != nil {
		return nil, err
	}
	return execsync.Attach(maps, perSecond)
}

// nestedPIDNamespace reports whether the process whose status file is at path
// has more than one PID (NSpid): it is then in a PID namespace below the
// initial one.
func nestedPIDNamespace(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "NSpid:"); ok {
			return len(strings.Fields(v)) > 1, nil
		}
	}
	return false, fmt.Errorf("%s has no NSpid line", path)
}

// withExecSync passes upstream's part of the configuration to create and,
// with exec_sync_per_second above 0, wraps the receiver so that its Start
// attaches the exec program once upstream's maps exist.
func withExecSync(create xreceiver.CreateProfilesFunc, attach func(uint64) (execSyncHook, error)) xreceiver.CreateProfilesFunc {
	return func(ctx context.Context, set receiver.Settings, cfg component.Config, next xconsumer.Profiles) (xreceiver.Profiles, error) {
		c, ok := cfg.(*Config)
		if !ok {
			return nil, fmt.Errorf("profiling receiver: unexpected configuration type %T", cfg)
		}
		r, err := create(ctx, set, &c.Config, next)
		if err != nil || c.ExecSyncPerSecond == 0 {
			return r, err
		}
		tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
		if err != nil {
			return nil, err
		}
		return &execSyncReceiver{Profiles: r, logger: set.Logger, tb: tb, perSecond: uint64(c.ExecSyncPerSecond), attach: attach}, nil
	}
}

type execSyncReceiver struct {
	xreceiver.Profiles
	logger    *zap.Logger
	tb        *metadata.TelemetryBuilder
	perSecond uint64
	attach    func(uint64) (execSyncHook, error)
	hook      execSyncHook
	// stop ends the latency watch; done is closed when it has ended.
	stop context.CancelFunc
	done chan struct{}
}

var (
	outcomeSynchronised = metric.WithAttributes(attribute.String("outcome", "synchronised"))
	outcomeOverRate     = metric.WithAttributes(attribute.String("outcome", "over_rate"))
	outcomeMapFull      = metric.WithAttributes(attribute.String("outcome", "pid_events_full"))
	readAttrs           = map[int]metric.AddOption{
		execsync.Read:    metric.WithAttributes(attribute.String("read", "read")),
		execsync.Gone:    metric.WithAttributes(attribute.String("read", "gone")),
		execsync.NotRead: metric.WithAttributes(attribute.String("read", "not_read")),
	}
)

// Start starts upstream's receiver, then attaches the program. Where it
// cannot be attached the receiver runs as upstream's, with a warning.
func (r *execSyncReceiver) Start(ctx context.Context, h component.Host) error {
	if err := r.Profiles.Start(ctx, h); err != nil {
		return err
	}
	hook, err := r.attach(r.perSecond)
	if err != nil {
		r.logger.Warn(ExecSyncUnavailableMessage, zap.String("setting", "exec_sync_per_second"), zap.Error(err))
		return nil
	}
	r.hook = hook
	r.logger.Info("processes are synchronised when they exec", zap.Uint64("exec_sync_per_second", r.perSecond))
	watch, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stop, r.done = stop, make(chan struct{})
	go r.watchLatency(watch)
	return r.tb.RegisterReceiverProfilingExecSyncExecsCallback(func(_ context.Context, o metric.Int64Observer) error {
		st, err := hook.State()
		if err != nil {
			return err
		}
		o.Observe(int64(st.Synced), outcomeSynchronised)
		o.Observe(int64(st.Skipped), outcomeOverRate)
		o.Observe(int64(st.Failed), outcomeMapFull)
		return nil
	})
}

// watchLatency records, every latencyEvery, how long the last exec
// recorded took to be read, until ctx ends.
func (r *execSyncReceiver) watchLatency(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(latencyEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		d, outcome, err := r.hook.Latency(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.logger.Debug("exec sync latency", zap.Error(err))
			}
			continue
		}
		if attrs, ok := readAttrs[outcome]; ok {
			r.tb.ReceiverProfilingExecSyncSampled.Add(ctx, 1, attrs)
		}
		if outcome == execsync.Read {
			r.tb.ReceiverProfilingExecSyncLatency.Record(ctx, float64(d)/float64(time.Millisecond))
		}
	}
}

// Shutdown ends the latency watch and detaches the program before
// upstream's maps go.
func (r *execSyncReceiver) Shutdown(ctx context.Context) error {
	if r.stop != nil {
		r.stop()
		<-r.done
		r.stop = nil
	}
	var err error
	if r.hook != nil {
		err = r.hook.Close()
		r.hook = nil
	}
	r.tb.Shutdown()
	return errors.Join(err, r.Profiles.Shutdown(ctx))
}
