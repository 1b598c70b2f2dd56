// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilemetricsconnector

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

const (
	checkoutPod1 = "k8s.namespace.name=prod,k8s.pod.name=checkout-1,service.name=checkout,service.namespace=shop"
	checkoutPod2 = "k8s.namespace.name=prod,k8s.pod.name=checkout-2,service.name=checkout,service.namespace=shop"
	checkoutSvc  = "service.name=checkout,service.namespace=shop"
)

// ebpfBatch is shaped like the eBPF profiler's output: samples/count with a
// cpu/nanoseconds period of 50 ms (20 Hz), one timestamp per period, no
// values; an off_cpu profile next to it as upstream sends it (no period, one
// value in nanoseconds per timestamp); one process without a service.
func ebpfBatch() pprofile.Profiles {
	b := newBuilder()
	s1 := b.stack("hot", "work", "main")
	s2 := b.stack("cold", "work", "main")
	s3 := b.stack("hot", "helper", "main")

	sp := b.resource("service.name", "checkout", "service.namespace", "shop", "k8s.namespace.name", "prod", "k8s.pod.name", "checkout-1", "process.executable.name", "checkout")
	p := b.profile(sp, "samples", "count", 50_000_000)
	ebpf(p, s1, 10)
	ebpf(p, s2, 4)
	ebpf(p, s3, 2)
	off := b.profile(sp, "off_cpu", "nanoseconds", 0)
	offCPU(off, s1, 600_000_000, 400_000_000)
	offCPU(off, s2, 250_000_000)

	sp = b.resource("service.name", "checkout", "service.namespace", "shop", "k8s.namespace.name", "prod", "k8s.pod.name", "checkout-2")
	ebpf(b.profile(sp, "samples", "count", 50_000_000), s2, 5)

	sp = b.resource("process.executable.name", "anon")
	ebpf(b.profile(sp, "samples", "count", 50_000_000), s1, 3)
	return b.pd
}

func TestEBPFSamplesExact(t *testing.T) {
	a := newAggregator(testConfig(func(c *Config) { c.InclusiveTime = true }), t0)
	a.consume(ebpfBatch(), t0.Add(time.Second))
	got := values(a.flush(t0.Add(time.Minute)))
	want := map[string]float64{
		"profile.cpu.time{" + checkoutPod1 + "}": 0.8,
		"profile.cpu.time{" + checkoutPod2 + "}": 0.25,
		"profile.cpu.time{}":                     0.15,

		"profile.function.cpu.time{" + checkoutSvc + "}[hot]":  0.6,
		"profile.function.cpu.time{" + checkoutSvc + "}[cold]": 0.45,
		"profile.function.cpu.time{}[hot]":                     0.15,

		"profile.function.cpu.inclusive.time{" + checkoutSvc + "}[main]":   1.05,
		"profile.function.cpu.inclusive.time{" + checkoutSvc + "}[work]":   0.95,
		"profile.function.cpu.inclusive.time{" + checkoutSvc + "}[hot]":    0.6,
		"profile.function.cpu.inclusive.time{" + checkoutSvc + "}[cold]":   0.45,
		"profile.function.cpu.inclusive.time{" + checkoutSvc + "}[helper]": 0.1,
		"profile.function.cpu.inclusive.time{}[hot]":                       0.15,
		"profile.function.cpu.inclusive.time{}[work]":                      0.15,
		"profile.function.cpu.inclusive.time{}[main]":                      0.15,

		// Off-CPU time on its own metrics, never in CPU time.
		"profile.off_cpu.time{" + checkoutPod1 + "}":               1.25,
		"profile.function.off_cpu.time{" + checkoutSvc + "}[hot]":  1.0,
		"profile.function.off_cpu.time{" + checkoutSvc + "}[cold]": 0.25,
	}
	assertValues(t, want, got)
}

func assertValues(t *testing.T, want, got map[string]float64) {
	t.Helper()
	require.Equal(t, keys(want), keys(got))
	for k, v := range want {
		assert.InDelta(t, v, got[k], 1e-9, k)
	}
}

// pprofCPUBatch is shaped like the pprof receiver's CPU scrape: one profile
// samples/count and one cpu/nanoseconds of the same samples, period 10 ms.
func pprofCPUBatch(service string) pprofile.Profiles {
	b := newBuilder()
	s1 := b.stack("main.spin", "main.main")
	s2 := b.stack("runtime.mallocgc", "main.spin", "main.main")
	sp := b.resource("service.name", service, "server.address", "localhost")
	count := b.profile(sp, "samples", "count", 10_000_000)
	valued(count, s1, 3)
	valued(count, s2, 1)
	cpu := b.profile(sp, "cpu", "nanoseconds", 10_000_000)
	valued(cpu, s1, 30_000_000)
	valued(cpu, s2, 10_000_000)
	return b.pd
}

func TestPprofCPUExact(t *testing.T) {
	a := newAggregator(testConfig(nil), t0)
	a.consume(pprofCPUBatch("api"), t0)
	got := values(a.flush(t0.Add(time.Minute)))
	assertValues(t, map[string]float64{
		"profile.cpu.time{service.name=api}":                            0.04, // not 0.08: the count profile is the same samples
		"profile.function.cpu.time{service.name=api}[main.spin]":        0.03,
		"profile.function.cpu.time{service.name=api}[runtime.mallocgc]": 0.01,
	}, got)

	// A samples/count profile alone (no cpu/nanoseconds next to it) counts
	// values × period.
	b := newBuilder()
	sp := b.resource("service.name", "api")
	valued(b.profile(sp, "samples", "count", 10_000_000), b.stack("main.spin"), 7)
	a.consume(b.pd, t0)
	got = values(a.flush(t0.Add(2 * time.Minute)))
	assert.InDelta(t, 0.11, got["profile.cpu.time{service.name=api}"], 1e-9, "cumulative: 0.04 + 0.07")
}

// pprofHeapBatch is shaped like the pprof receiver's heap scrape: four
// profiles, one per sample type.
func pprofHeapBatch(service string, inuse, alloc int64) pprofile.Profiles {
	b := newBuilder()
	s1 := b.stack("main.alloc", "main.main")
	s2 := b.stack("bytes.growSlice", "main.main")
	sp := b.resource("service.name", service)
	valued(b.profile(sp, "inuse_objects", "count", 0), s1, 10)
	in := b.profile(sp, "inuse_space", "bytes", 0)
	valued(in, s1, inuse-24)
	valued(in, s2, 24)
	valued(b.profile(sp, "alloc_objects", "count", 0), s1, 99)
	valued(b.profile(sp, "alloc_space", "bytes", 0), s2, alloc)
	return b.pd
}

func TestPprofHeapExact(t *testing.T) {
	a := newAggregator(testConfig(nil), t0)
	a.consume(pprofHeapBatch("cache", 1024, 4096), t0)
	md := a.flush(t0.Add(time.Minute))
	pts := points(md)
	assertValues(t, map[string]float64{
		"profile.heap.memory.used{service.name=cache}":      1024,
		"profile.heap.memory.allocated{service.name=cache}": 4096,
	}, values(md))
	assert.True(t, pts["profile.heap.memory.used{service.name=cache}"].gauge)
	assert.False(t, pts["profile.heap.memory.allocated{service.name=cache}"].gauge)

	// The next scrape replaces the in-use value and adds the allocations;
	// two scrapes in one interval: the last in-use value counts.
	a.consume(pprofHeapBatch("cache", 2048, 100), t0)
	a.consume(pprofHeapBatch("cache", 512, 10), t0)
	assertValues(t, map[string]float64{
		"profile.heap.memory.used{service.name=cache}":      512,
		"profile.heap.memory.allocated{service.name=cache}": 4206,
	}, values(a.flush(t0.Add(2*time.Minute))))

	// No heap profile this interval: no gauge (the sum stays, cumulative).
	assertValues(t, map[string]float64{
		"profile.heap.memory.allocated{service.name=cache}": 4206,
	}, values(a.flush(t0.Add(3*time.Minute))))
}

// Two processes of one group: their in-use heaps add up.
func TestHeapInUseSumsProcesses(t *testing.T) {
	a := newAggregator(testConfig(func(c *Config) { c.GroupBy = []string{"service.name"} }), t0)
	for _, pod := range []string{"a", "b"} {
		pd := pprofHeapBatch("cache", 1000, 0)
		pd.ResourceProfiles().At(0).Resource().Attributes().PutStr("k8s.pod.name", pod)
		a.consume(pd, t0)
	}
	pd := pprofHeapBatch("cache", 3000, 0) // pod b again: replaces its 1000
	pd.ResourceProfiles().At(0).Resource().Attributes().PutStr("k8s.pod.name", "b")
	a.consume(pd, t0)
	assertValues(t, map[string]float64{
		"profile.heap.memory.used{service.name=cache}": 4000,
	}, values(a.flush(t0.Add(time.Minute))))
}

func TestGroupByOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		groupBy []string
		want    map[string]float64
	}{
		{"service.name", []string{"service.name"}, map[string]float64{
			"profile.cpu.time{service.name=checkout}":     1.05,
			"profile.off_cpu.time{service.name=checkout}": 1.25,
			"profile.cpu.time{}":                          0.15,
		}},
		{"k8s.namespace.name", []string{"k8s.namespace.name"}, map[string]float64{
			"profile.cpu.time{k8s.namespace.name=prod}":     1.05,
			"profile.off_cpu.time{k8s.namespace.name=prod}": 1.25,
			"profile.cpu.time{}":                            0.15,
		}},
		{"k8s.pod.name", []string{"k8s.pod.name"}, map[string]float64{
			"profile.cpu.time{k8s.pod.name=checkout-1}":     0.8,
			"profile.off_cpu.time{k8s.pod.name=checkout-1}": 1.25,
			"profile.cpu.time{k8s.pod.name=checkout-2}":     0.25,
			"profile.cpu.time{}":                            0.15,
		}},
		{"process.executable.name", []string{"process.executable.name"}, map[string]float64{
			"profile.cpu.time{process.executable.name=checkout}":     0.8,
			"profile.off_cpu.time{process.executable.name=checkout}": 1.25,
			"profile.cpu.time{process.executable.name=anon}":         0.15,
			"profile.cpu.time{}": 0.25,
		}},
		{"nothing", []string{}, map[string]float64{
			"profile.cpu.time{}":     1.2,
			"profile.off_cpu.time{}": 1.25,
		}},
		{"default", defaultGroupBy, map[string]float64{
			"profile.cpu.time{" + checkoutPod1 + "}":     0.8,
			"profile.cpu.time{" + checkoutPod2 + "}":     0.25,
			"profile.cpu.time{}":                         0.15,
			"profile.off_cpu.time{" + checkoutPod1 + "}": 1.25,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAggregator(testConfig(func(c *Config) { c.GroupBy = tc.groupBy; c.TopFunctions = 0 }), t0)
			a.consume(ebpfBatch(), t0)
			assertValues(t, tc.want, values(a.flush(t0.Add(time.Minute))))
		})
	}
}

// functionsBatch: service svc with functions f1..f5 whose self time is
// 5, 4, 3, 2, 1 periods of 100 ms.
func functionsBatch(svc string) pprofile.Profiles {
	b := newBuilder()
	sp := b.resource("service.name", svc)
	p := b.profile(sp, "samples", "count", 100_000_000)
	for i, fn := range []string{"f1", "f2", "f3", "f4", "f5"} {
		ebpf(p, b.stack(fn, "main"), 5-i)
	}
	return b.pd
}

func TestTopFunctionsAndOther(t *testing.T) {
	a := newAggregator(testConfig(func(c *Config) { c.TopFunctions = 2 }), t0)
	a.consume(functionsBatch("svc"), t0)
	assertValues(t, map[string]float64{
		"profile.cpu.time{service.name=svc}":                 1.5,
		"profile.function.cpu.time{service.name=svc}[f1]":    0.5,
		"profile.function.cpu.time{service.name=svc}[f2]":    0.4,
		"profile.function.cpu.time{service.name=svc}[other]": 0.6,
	}, values(a.flush(t0.Add(time.Minute))))

	// Next interval f5 is the hottest: it gets a series; f2 is in "other"
	// this time, its series keeps its cumulative value.
	b := newBuilder()
	p := b.profile(b.resource("service.name", "svc"), "samples", "count", 100_000_000)
	ebpf(p, b.stack("f5"), 10)
	ebpf(p, b.stack("f1"), 3)
	ebpf(p, b.stack("f2"), 1)
	a.consume(b.pd, t0)
	assertValues(t, map[string]float64{
		"profile.cpu.time{service.name=svc}":                 2.9,
		"profile.function.cpu.time{service.name=svc}[f1]":    0.8,
		"profile.function.cpu.time{service.name=svc}[f2]":    0.4,
		"profile.function.cpu.time{service.name=svc}[f5]":    1.0,
		"profile.function.cpu.time{service.name=svc}[other]": 0.7,
	}, values(a.flush(t0.Add(2*time.Minute))))
}

func TestTopFunctionsOff(t *testing.T) {
	a := newAggregator(testConfig(func(c *Config) { c.TopFunctions = 0 }), t0)
	a.consume(functionsBatch("svc"), t0)
	assertValues(t, map[string]float64{"profile.cpu.time{service.name=svc}": 1.5}, values(a.flush(t0.Add(time.Minute))))
}

func TestMaxSeriesOverflow(t *testing.T) {
	a := newAggregator(testConfig(func(c *Config) { c.MaxSeries = 3; c.TopFunctions = 0 }), t0)
	b := newBuilder()
	st := b.stack("f")
	for i, svc := range []string{"a", "b", "c", "d", "e"} {
		ebpf(b.profile(b.resource("service.name", svc), "samples", "count", 100_000_000), st, i+1)
	}
	a.consume(b.pd, t0)
	assertValues(t, map[string]float64{
		"profile.cpu.time{service.name=a}":                    0.1,
		"profile.cpu.time{service.name=b}":                    0.2,
		"profile.cpu.time{service.name=c}":                    0.3,
		"profile.cpu.time{otel.metric.overflow=true}":         0.9, // d and e
		"profile.metrics.overflow{otel.metric.overflow=true}": 2,
	}, values(a.flush(t0.Add(time.Minute))))
	assert.Equal(t, 3, a.countSeries())

	// The bound holds for the function series too: a's CPU series exists,
	// its new function series (f1 and "other") overflow.
	a.cfg.TopFunctions = 1
	a.consume(functionsBatch("a"), t0)
	assertValues(t, map[string]float64{
		"profile.cpu.time{service.name=a}":                     1.6,
		"profile.cpu.time{service.name=b}":                     0.2,
		"profile.cpu.time{service.name=c}":                     0.3,
		"profile.cpu.time{otel.metric.overflow=true}":          0.9,
		"profile.function.cpu.time{otel.metric.overflow=true}": 1.5,
		"profile.metrics.overflow{otel.metric.overflow=true}":  4,
	}, values(a.flush(t0.Add(2*time.Minute))))
	assert.Equal(t, 3, a.countSeries())
}

func TestDeltaTemporality(t *testing.T) {
	a := newAggregator(testConfig(func(c *Config) { c.Temporality = TemporalityDelta; c.TopFunctions = 1 }), t0)
	a.consume(functionsBatch("svc"), t0)
	md := a.flush(t0.Add(time.Minute))
	for k, p := range points(md) {
		assert.True(t, p.delta, k)
	}
	dp := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints().At(0)
	assert.Equal(t, t0, dp.StartTimestamp().AsTime().UTC())
	assert.Equal(t, t0.Add(time.Minute), dp.Timestamp().AsTime().UTC())

	a.consume(functionsBatch("svc"), t0)
	a.consume(functionsBatch("svc"), t0)
	md = a.flush(t0.Add(2 * time.Minute))
	assertValues(t, map[string]float64{
		"profile.cpu.time{service.name=svc}":                 3.0,
		"profile.function.cpu.time{service.name=svc}[f1]":    1.0,
		"profile.function.cpu.time{service.name=svc}[other]": 2.0,
	}, values(md))
	dp = md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints().At(0)
	assert.Equal(t, t0.Add(time.Minute), dp.StartTimestamp().AsTime().UTC())

	// Nothing new: nothing sent.
	assert.Equal(t, 0, a.flush(t0.Add(3*time.Minute)).DataPointCount())
}

func TestCumulativeStartAndExpiry(t *testing.T) {
	a := newAggregator(testConfig(func(c *Config) { c.TopFunctions = 0; c.SeriesExpiry = 2 * time.Minute }), t0)
	a.consume(functionsBatch("old"), t0.Add(10*time.Second))
	a.flush(t0.Add(time.Minute))
	a.consume(functionsBatch("new"), t0.Add(110*time.Second))
	md := a.flush(t0.Add(2 * time.Minute))
	assertValues(t, map[string]float64{
		"profile.cpu.time{service.name=old}": 1.5,
		"profile.cpu.time{service.name=new}": 1.5,
	}, values(md))
	for _, rm := range md.ResourceMetrics().All() {
		dp := rm.ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints().At(0)
		name, _ := rm.Resource().Attributes().Get("service.name")
		want := map[string]time.Time{"old": t0.Add(10 * time.Second), "new": t0.Add(110 * time.Second)}[name.Str()]
		assert.Equal(t, want, dp.StartTimestamp().AsTime().UTC(), name.Str())
	}
	// old was last seen at 0:10; at 2:11 it is forgotten, and its group too.
	assertValues(t, map[string]float64{
		"profile.cpu.time{service.name=new}": 1.5,
	}, values(a.flush(t0.Add(2*time.Minute+11*time.Second))))
	assert.Len(t, a.groups, 2, "the overflow group and new's")
}

// Frames without function names fall back to their mapping's file name.
func TestUnsymbolizedLeaf(t *testing.T) {
	b := newBuilder()
	m := b.dict.MappingTable().AppendEmpty()
	m.SetFilenameStrindex(b.str("/usr/lib/x86_64-linux-gnu/libc.so.6"))
	loc := b.dict.LocationTable().AppendEmpty()
	loc.SetMappingIndex(1)
	loc.SetAddress(0x1234)
	st := b.dict.StackTable().AppendEmpty()
	st.LocationIndices().Append(int32(b.dict.LocationTable().Len() - 1))
	p := b.profile(b.resource("service.name", "c"), "samples", "count", 100_000_000)
	ebpf(p, int32(b.dict.StackTable().Len()-1), 2)
	ebpf(p, 0, 1) // the empty stack
	a := newAggregator(testConfig(nil), t0)
	a.consume(b.pd, t0)
	assertValues(t, map[string]float64{
		"profile.cpu.time{service.name=c}":                     0.3,
		"profile.function.cpu.time{service.name=c}[libc.so.6]": 0.2,
		"profile.function.cpu.time{service.name=c}[unknown]":   0.1,
	}, values(a.flush(t0.Add(time.Minute))))
}
