//go:build bench

package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// splitBatch is the 5,000,000-frame batch of the splitting benchmark, the
// one internal/profilesplit's micro-benchmarks split: 50,000 samples of
// depth 100 over 2,000 stacks and 5,000 functions from 50 processes.
var splitBatch = profilegen.Config{
	Samples: 50_000, Depth: 100, Stacks: 2_000, Functions: 5_000, Resources: 50, LinkEvery: 10, Seed: 1,
}

// split pushes one 5,000,000-frame batch through a fresh gateway with
// frame_limit (split into requests of at most 1,000,000 frames) and without
// it (one request; the double's frame limit raised to let it in), in pairs.
func (h *harness) split(t *testing.T, s *Section) {
	p := h.p
	snk := startSink(t, 0)
	b := encodeBatch(t, splitBatch, nil)
	var runs Runs
	requests := map[bool][]int{}
	for _, split := range ABBA(2 * p.splitReps) {
		procs := []string{}
		if split {
			procs = []string{"frame_limit"}
			snk.SetLimits(0, 1_000_000)
		} else {
			snk.SetLimits(0, 2*b.frames)
		}
		addr := testenv.FreeAddr(t)
		col := startGateway(t, addr, snk, procs, true)
		time.Sleep(time.Second)
		_, rss0 := collectorMemory(t, col)
		d := newDriver(addr, nil, snk, 1)
		c0, cpu0, t0 := snk.counters(), collectorCPU(t, col), time.Now()
		if err := d.post(context.Background(), b.body); err != nil {
			fail(t, s, "posting the 5,000,000-frame batch (split=%v): %v", split, err)
		}
		if !snk.waitSamples(c0.samples+b.samples, 2*time.Minute) {
			fail(t, s, "the double did not accept the batch's %d samples in 2 minutes (split=%v; answers %s)", b.samples, split, Statuses(snk.Stats().RequestsByStatus))
		}
		c1, cpu1, t1 := snk.counters(), collectorCPU(t, col), time.Now()
		peak, _ := collectorMemory(t, col)
		col.Stop(20 * time.Second)
		runs.Add(split, map[string]float64{
			"secs": t1.Sub(t0).Seconds(), "peak": float64(peak), "growth": float64(peak - rss0), "cpu": (cpu1 - cpu0).Seconds(),
		})
		requests[split] = append(requests[split], c1.requests-c0.requests)
	}
	timeRatio, peakRatio, cpuRatio := runs.Ratio("secs"), runs.Ratio("peak"), runs.Ratio("cpu")

	s.Text = append(s.Text, fmt.Sprintf(
		"One batch of %s frames (profilegen: %s samples of depth %d over %s stacks and %s functions from %d processes, %s bytes as posted, protobuf+gzip) is posted to a fresh gateway: "+
			"**split**: otlp → frame_limit (1,000,000) → nexovue, the double at its 1,000,000-frame limit; **unsplit**: otlp → nexovue, the double's frame limit raised to let the one request in. "+
			"Time is from the post until the double has accepted every sample (so it includes the double decoding and checking every request on this machine); "+
			"peak RSS is the collector's VmHWM after the push, growth is that minus its VmRSS before the push; CPU is the collector's. Runs alternate in pairs; ratios are per pair.",
		Num(float64(b.frames)), Num(float64(splitBatch.Samples)), splitBatch.Depth, Num(float64(splitBatch.Stacks)), Num(float64(splitBatch.Functions)), splitBatch.Resources, Num(float64(len(b.body)))))
	tab := Table{Header: []string{"variant", "requests to the double", "time to deliver (s)", "collector CPU (s)", "peak RSS", "RSS growth", "runs (s)"}}
	for _, split := range []bool{true, false} {
		name := "unsplit (otlp → nexovue)"
		if split {
			name = "split (otlp → frame_limit → nexovue)"
		}
		tab.Rows = append(tab.Rows, []string{name,
			fmt.Sprint(slices.Max(requests[split])),
			WithSpread(Summarize(runs.Of(split, "secs")), ""),
			WithSpread(Summarize(runs.Of(split, "cpu")), ""),
			MiB(Median(runs.Of(split, "peak"))),
			MiB(Median(runs.Of(split, "growth"))),
			Reps(runs.Of(split, "secs"), Num),
		})
	}
	tab.Rows = append(tab.Rows, []string{"**split / unsplit**", "", "**" + WithSpread(timeRatio, "×") + "**", WithSpread(cpuRatio, "×"), "**" + WithSpread(peakRatio, "×") + "**", "", ""})
	s.Tables = append(s.Tables, tab)
	s.Text = append(s.Text, "The splitter alone, in process, is in section 5 (internal/profilesplit: BenchmarkSplitOwned5MFrames is what frame_limit runs).")
}
