// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package nexovueexporter

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// BenchmarkRouting is the exporter's CPU per 10,000 samples with two rules
// and the default key against one key, on the same batch: 10,000 samples of
// 20 processes in three namespaces (eBPF-like, profilegen's defaults), each
// pushed through the sending queue (one consumer) and sent to a loopback
// server that reads and drops the body; an iteration ends when the batch's
// requests (1 with one key, 3 with rules) are answered. cpu-ns/10k-samples
// is the process's CPU time (user + system, getrusage) over the iterations,
// the server's reading included (the same in both).
//
//	go test -run '^$' -bench BenchmarkRouting -benchtime 200x ./exporter/nexovueexporter/
func BenchmarkRouting(b *testing.B) {
	done := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
		done <- struct{}{}
	}))
	defer srv.Close()

	const samples = 10_000
	src := benchBatch(samples)
	namespaces := []string{"payments", "search-eu", "kube-system"}
	for i, rp := range src.ResourceProfiles().All() {
		rp.Resource().Attributes().PutStr("k8s.namespace.name", namespaces[i%3])
	}
	for _, mode := range []string{"one-key", "rules"} {
		b.Run(mode, func(b *testing.B) {
			cfg := routingConfig(srv.URL)
			cfg.RetryConfig.Enabled = false
			q := exporterhelper.NewDefaultQueueConfig()
			q.NumConsumers = 1
			cfg.QueueConfig = configoptional.Some(q)
			requests := 3
			if mode == "one-key" {
				cfg.Routing.Rules = nil
				requests = 1
			}
			exp, err := NewFactory().(xexporter.Factory).CreateProfiles(context.Background(), exportertest.NewNopSettings(typ), cfg)
			require.NoError(b, err)
			require.NoError(b, exp.Start(context.Background(), componenttest.NewNopHost()))
			defer func() { require.NoError(b, exp.Shutdown(context.Background())) }()
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				pd := pprofile.NewProfiles()
				src.CopyTo(pd)
				before := processCPU(b)
				b.StartTimer()
				require.NoError(b, exp.ConsumeProfiles(context.Background(), pd))
				for range requests {
					<-done
				}
				b.StopTimer()
				cpu += processCPU(b) - before
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/10k-samples")
		})
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
