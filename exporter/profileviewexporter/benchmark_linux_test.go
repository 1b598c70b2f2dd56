// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
)

// busyBatch is one second of a busy host at the ingest's limit (20,000
// samples a second, nexovue's per-key limit): profilegen's eBPF-shaped
// batch, 20 processes, stacks of 32 frames, one sample in ten linked to a
// span, its timestamps squeezed into the second before now.
func busyBatch(seed uint64, now time.Time) pprofile.Profiles {
	pd := profilegen.Generate(profilegen.Config{Samples: 20_000, Depth: 32, Stacks: 4000, Functions: 20_000, LinkEvery: 10, Seed: seed})
	retime(pd, now)
	return pd
}

// retime puts every timestamp of pd into the second before now, in the
// order profilegen gave them (its samples span 20 s from its base).
func retime(pd pprofile.Profiles, now time.Time) {
	end := uint64(now.UnixNano())
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, s := range p.Samples().All() {
					ts := s.TimestampsUnixNano()
					for i := range ts.Len() {
						ts.SetAt(i, end-uint64(time.Second)+ts.At(i)/20%uint64(time.Second))
					}
				}
			}
		}
	}
}

// BenchmarkFlameGraph100kSamples: the time to render the flame graph page
// (pprof's web UI over HTTP) of one service whose window holds 100,000
// samples.
func BenchmarkFlameGraph100kSamples(b *testing.B) {
	v, _ := newTestView(b, nil)
	now := time.Now()
	for i := range 5 { // 5 × 20,000 samples, one service
		pd := profilegen.Generate(profilegen.Config{Samples: 20_000, Depth: 32, Stacks: 4000, Functions: 20_000, LinkEvery: 10, Resources: 1, Seed: uint64(i + 1)})
		for _, rp := range pd.ResourceProfiles().All() {
			for _, sp := range rp.ScopeProfiles().All() {
				for _, p := range sp.Profiles().All() {
					for _, s := range p.Samples().All() {
						for j := range s.TimestampsUnixNano().Len() {
							s.TimestampsUnixNano().SetAt(j, uint64(now.UnixNano()))
						}
					}
				}
			}
		}
		res := v.store.ingest(pd, DefaultMaxProfileBytes)
		if res.kept == 0 {
			b.Fatalf("nothing kept: %+v", res)
		}
	}
	services, _, _ := v.store.summary(selection{})
	if len(services) != 1 || services[0].Types[0].Samples < 100_000 {
		b.Fatalf("want one service with 100,000 samples, have %+v", services[0])
	}
	h := v.handler()
	url := uiPath(services[0].Name, services[0].Types[0].Key, nil) + "flamegraph"
	cpu0 := cpuTime()
	n := 0
	b.ResetTimer()
	for b.Loop() {
		n++
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", url, rec.Code, rec.Body.String())
		}
	}
	// On a shared machine the wall time per page says more about the load
	// than about the page: its CPU time is reported too.
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(n), "cpu-ms/op")
	b.ReportMetric(float64(services[0].Types[0].Samples), "samples")
}

// cpuTime is the CPU time (user and system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFullWindowMemory pushes 30 minutes' worth of a busy host's
// profiles (20,000 samples a second, busyBatch) through the exporter at its
// defaults (5-minute window, 256 MiB cap), one batch per synthetic second:
// the clock is the benchmark's, so 30 minutes take as long as it takes to
// generate and take in the batches. It reports the window's heap after a GC
// (what the view keeps), the estimate the cap works on, the process's peak
// RSS (the generator's batches included), and what the cap dropped.
func BenchmarkFullWindowMemory(b *testing.B) {
	seconds := 30 * 60
	if s := os.Getenv("VIEW_BENCH_SECONDS"); s != "" {
		seconds, _ = strconv.Atoi(s)
	}
	for b.Loop() {
		cfg := NewFactory().CreateDefaultConfig().(*Config)
		v, _ := newTestView(b, cfg)
		now := time.Unix(1_800_000_000, 0)
		v.store.now = func() time.Time { return now }
		var kept, capped, maxHeap uint64
		// 12 batches generated once and sent in turn (12 s apart: no slot,
		// 10 s, sees one twice), each with the timestamps of its second.
		batches := make([]pprofile.Profiles, 12)
		for i := range batches {
			batches[i] = busyBatch(uint64(i)+1, now)
		}
		runtime.GC()
		var ms0 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		rss0 := vmRSS()
		for i := range seconds {
			now = now.Add(time.Second)
			pd := batches[i%len(batches)]
			retime(pd, now)
			res := v.store.ingest(pd, cfg.MaxProfileBytes)
			kept += uint64(res.kept)
			capped += uint64(res.memoryCap)
			if i%60 == 59 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				maxHeap = max(maxHeap, ms.HeapInuse)
			}
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		// What the view adds: above the generated batches (heap and RSS
		// measured before the first one was taken in).
		b.ReportMetric(float64(maxHeap-ms0.HeapInuse)/(1<<20), "view-max-heap-MiB")
		b.ReportMetric(float64(ms.HeapInuse-ms0.HeapInuse)/(1<<20), "view-end-heap-MiB")
		b.ReportMetric(float64(v.store.bytes)/(1<<20), "estimate-MiB")
		b.ReportMetric(float64(vmHWM()-rss0)/1024, "view-peak-RSS-MiB")
		b.ReportMetric(float64(rss0)/1024, "RSS-before-MiB")
		b.ReportMetric(float64(kept), "samples-kept")
		b.ReportMetric(float64(capped), "samples-dropped-by-cap")
		b.ReportMetric(float64(len(v.store.slots)), "slots")
	}
}

// vmHWM is the process's peak RSS in KiB.
func vmHWM() int64 { return procStatus("VmHWM:") }

// vmRSS is the process's RSS in KiB.
func vmRSS() int64 { return procStatus("VmRSS:") }

func procStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return -1
}

// fill100k adds 100,000 samples of one service (5 profilegen batches,
// seeds seed to seed+4: 4,000 stacks of 32 frames each, 20,000 functions)
// at time at.
func fill100k(b *testing.B, v *view, seed uint64, at time.Time) {
	for i := range uint64(5) {
		pd := profilegen.Generate(profilegen.Config{Samples: 20_000, Depth: 32, Stacks: 4000, Functions: 20_000, LinkEvery: 10, Resources: 1, Seed: seed + i})
		for _, rp := range pd.ResourceProfiles().All() {
			for _, sp := range rp.ScopeProfiles().All() {
				for _, p := range sp.Profiles().All() {
					for _, s := range p.Samples().All() {
						for j := range s.TimestampsUnixNano().Len() {
							s.TimestampsUnixNano().SetAt(j, uint64(at.UnixNano()))
						}
					}
				}
			}
		}
		if res := v.store.ingest(pd, DefaultMaxProfileBytes); res.kept == 0 {
			b.Fatalf("nothing kept: %+v", res)
		}
	}
}

// BenchmarkCompare100kSamples: what a comparison of two windows of 100,000
// samples each costs (the compare page with its "what changed" table, then
// pprof's diff flame graph page it embeds), against the flame graph page of
// one window of 100,000 samples. It reports the CPU time per op and the
// peak RSS above the process's RSS before the first page (the window's
// aggregates are in both; the generated batches are collected before).
//
//	go test -run XXX -bench Compare100k -benchtime 3x ./exporter/profileviewexporter/
func BenchmarkCompare100kSamples(b *testing.B) {
	for _, tc := range []struct {
		name    string
		compare bool
	}{{"single", false}, {"compare", true}} {
		b.Run(tc.name, func(b *testing.B) {
			v, _ := newTestView(b, nil)
			now := time.Now()
			var pages []string
			if tc.compare {
				fill100k(b, v, 1, now.Add(-4*time.Minute))
				fill100k(b, v, 6, now.Add(-time.Minute))
				services, _, _ := v.store.summary(selection{})
				svc, typ := services[0].Name, services[0].Types[0].Key
				if len(services) != 1 || services[0].Types[0].Samples < 200_000 {
					b.Fatalf("want one service with 2 × 100,000 samples, have %+v", services[0])
				}
				q := url.Values{"from": {now.Add(-150 * time.Second).UTC().Format(time.RFC3339)},
					"base.from": {now.Add(-5 * time.Minute).UTC().Format(time.RFC3339)}, "base.to": {now.Add(-150 * time.Second).UTC().Format(time.RFC3339)}}
				pages = []string{comparePath(svc, typ, q), uiPath(svc, typ, q) + "flamegraph"}
			} else {
				fill100k(b, v, 1, now)
				services, _, _ := v.store.summary(selection{})
				if len(services) != 1 || services[0].Types[0].Samples < 100_000 {
					b.Fatalf("want one service with 100,000 samples, have %+v", services[0])
				}
				pages = []string{uiPath(services[0].Name, services[0].Types[0].Key, nil) + "flamegraph"}
			}
			h := v.handler()
			runtime.GC()
			// Peak RSS from here: clear_refs 5 resets VmHWM to the RSS.
			_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
			rss0 := vmRSS()
			cpu0 := cpuTime()
			n := 0
			b.ResetTimer()
			for b.Loop() {
				n++
				for _, page := range pages {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, page, nil))
					if rec.Code != http.StatusOK {
						b.Fatalf("%s: %d %s", page, rec.Code, rec.Body.String())
					}
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(n), "cpu-ms/op")
			b.ReportMetric(float64(vmHWM()-rss0)/1024, "peak-RSS-above-MiB")
			b.ReportMetric(float64(v.store.bytes)/(1<<20), "window-estimate-MiB")
		})
	}
}
