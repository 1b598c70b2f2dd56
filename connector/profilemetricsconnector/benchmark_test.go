// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilemetricsconnector

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/connector/profilemetricsconnector/internal/metadata"
)

// benchBatch is an eBPF-like batch of 10,000 samples: 20 processes of 10
// services, 400 distinct stacks 8 to 40 frames deep over 1,500 functions,
// one to three timestamps per sample.
func benchBatch() (pprofile.Profiles, int) { return benchBatchOf(false) }

// benchBatchOf is benchBatch with CPU samples, or with off-CPU samples shaped
// as the eBPF profiler sends them (off_cpu/nanoseconds, no period, one value
// per timestamp) over the same processes and stacks.
func benchBatchOf(offCPUSamples bool) (pprofile.Profiles, int) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := newBuilder()
	stacks := make([]int32, 400)
	for i := range stacks {
		fns := make([]string, 8+rng.IntN(33))
		for j := range fns {
			fns[j] = fmt.Sprintf("pkg%d.Function%d", rng.IntN(40), rng.IntN(1500))
		}
		stacks[i] = b.stack(fns...)
	}
	samples := 0
	for p := range 20 {
		sp := b.resource("service.name", fmt.Sprintf("svc-%d", p%10), "k8s.pod.name", fmt.Sprintf("pod-%d", p), "process.pid", fmt.Sprint(1000+p))
		if offCPUSamples {
			prof := b.profile(sp, "off_cpu", "nanoseconds", 0)
			for range 500 {
				durations := make([]int64, 1+rng.IntN(3))
				for i := range durations {
					durations[i] = 1_000 + rng.Int64N(100_000_000)
				}
				offCPU(prof, stacks[rng.IntN(len(stacks))], durations...)
				samples++
			}
			continue
		}
		prof := b.profile(sp, "samples", "count", 52_631_578)
		for range 500 {
			ebpf(prof, stacks[rng.IntN(len(stacks))], 1+rng.IntN(3))
			samples++
		}
	}
	return b.pd, samples
}

// BenchmarkConsume10kSamples: the cost of one batch of 10,000 samples
// (ConsumeProfiles; the interval's flush is measured separately).
func BenchmarkConsume10kSamples(b *testing.B) {
	pd, n := benchBatch()
	if n != 10_000 {
		b.Fatalf("%d samples", n)
	}
	for _, inclusive := range []bool{false, true} {
		b.Run(fmt.Sprintf("inclusive_time=%v", inclusive), func(b *testing.B) {
			benchConsume(b, testConfig(func(c *Config) { c.InclusiveTime = inclusive }), pd)
		})
	}
}

// BenchmarkConsume10kByType: one batch of 10,000 CPU samples against one of
// 10,000 off-CPU samples (same processes, stacks and timestamps per sample).
func BenchmarkConsume10kByType(b *testing.B) {
	for _, typ := range []string{"cpu", "off_cpu"} {
		pd, n := benchBatchOf(typ == "off_cpu")
		if n != 10_000 {
			b.Fatalf("%d samples", n)
		}
		b.Run(typ, func(b *testing.B) { benchConsume(b, testConfig(nil), pd) })
	}
}

// benchConsume measures ConsumeProfiles of pd by a connector with cfg.
func benchConsume(b *testing.B, cfg *Config, pd pprofile.Profiles) {
	c := newConnector(connectortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	ctx := context.Background()
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		if err := c.ConsumeProfiles(ctx, pd); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkFlush: one interval's flush after one 10,000-sample batch.
func BenchmarkFlush(b *testing.B) {
	pd, _ := benchBatch()
	cfg := testConfig(func(c *Config) { c.InclusiveTime = true })
	a := newAggregator(cfg, t0)
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		a.consume(pd, t0)
		a.flush(t0)
	}
	reportCPU(b, cpu)
}

// cpuTime is the process's user+system CPU time so far. On a shared machine
// the CPU time per op says more than the wall time (ns/op).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric(float64(cpuTime()-since)/float64(b.N), "cpu-ns/op")
}
