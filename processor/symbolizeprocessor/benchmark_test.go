// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

const (
	benchSamples   = 10_000
	benchProcesses = 20
	benchStacks    = 1_000
	benchDepth     = 20
	benchLocations = 2_000
)

// BenchmarkSymbolize measures the processor on 10,000 eBPF-like samples (20
// resources of one running gcc-built process, 1,000 stacks of 20 native
// frames over 2,000 locations in the program and the host's libc), against
// the baseline of encoding the same batch to protobuf, in the same run:
//   - encode: pprofile's protobuf marshaling of the batch (what the exporter
//     does to every batch anyway), before symbolization;
//   - warm: the processor with its cache holding both files' symbols;
//   - cold: a new processor each time: finding the files through /proc,
//     verifying their file id, parsing their symbol tables.
//
// Each reports ms/10k-samples; warm and cold their ratio to encode of the
// same run (x-encode), also logged at the end.
func BenchmarkSymbolize(b *testing.B) {
	pd := benchBatch(b)
	perOp := map[string]time.Duration{}
	record := func(name string, b *testing.B) {
		d := b.Elapsed() / time.Duration(b.N)
		perOp[name] = d
		b.ReportMetric(float64(d.Microseconds())/1000, "ms/10k-samples")
		if enc := perOp["encode"]; name != "encode" && enc > 0 {
			b.ReportMetric(ratio(d, enc), "x-encode")
		}
	}
	b.Run("encode", func(b *testing.B) {
		// Marshaling turns the resources' attribute keys and string values
		// into references to the string table, in place: each op marshals a
		// fresh copy, as the exporter marshals each batch once.
		m := &pprofile.ProtoMarshaler{}
		work := pprofile.NewProfiles()
		for range b.N {
			b.StopTimer()
			pd.CopyTo(work)
			b.StartTimer()
			if _, err := m.MarshalProfiles(work); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		record("encode", b)
	})
	run := func(name string, fresh bool) {
		b.Run(name, func(b *testing.B) {
			p := newTestProcessor(b)
			work := pprofile.NewProfiles()
			pd.CopyTo(work)
			process(b, p, work) // warm the cache
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				pd.CopyTo(work)
				if fresh {
					p = newTestProcessor(b)
				}
				b.StartTimer()
				process(b, p, work)
			}
			b.StopTimer()
			record(name, b)
		})
	}
	run("warm", false)
	run("cold", true)
	if enc := perOp["encode"]; enc > 0 {
		b.Logf("symbolize %d samples: encode baseline %.2f ms; warm %.2f ms (%.1fx); cold %.2f ms (%.1fx)",
			benchSamples, ms(enc), ms(perOp["warm"]), ratio(perOp["warm"], enc), ms(perOp["cold"]), ratio(perOp["cold"], enc))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func ratio(d, base time.Duration) float64 { return float64(d) / float64(base) }

// benchBatch builds the benchmark's batch, checking that the processor names
// every one of its locations.
func benchBatch(b *testing.B) pprofile.Profiles {
	dir := b.TempDir()
	bin := compile(b, dir, "nxv.c", "nxv-bench")
	pid := startWaiting(b, bin)
	libc := mappedLibc(b, pid)
	rng := rand.New(rand.NewPCG(1, 2))

	pb := newProfileBuilder()
	type lib struct {
		mapping int32
		funcs   []uint64
	}
	var libs []lib
	for _, path := range []string{bin, libc} {
		off, start, end := textMapping(b, path)
		var funcs []uint64
		for _, s := range nmSymbols(b, path, path == libc) {
			if strings.ContainsAny(s.typ, "TtWi") && s.addr >= start && s.addr < end && s.size >= 8 {
				funcs = append(funcs, s.addr)
			}
		}
		slices.Sort(funcs)
		m := pb.mapping(mappingSpec{name: filepath.Base(path), start: start, end: end, offset: off, htlhash: fileID(b, path), gnuBuildID: gnuID(b, path)})
		libs = append(libs, lib{m, funcs})
	}
	var locs []int32
	for i := range benchLocations {
		l := libs[0]
		if i%4 != 0 { // most frames in libc, as in a C program's stacks
			l = libs[1]
		}
		locs = append(locs, pb.location(l.mapping, l.funcs[rng.IntN(len(l.funcs))]+uint64(1+rng.IntN(4)), "native"))
	}
	stacks := make([][]int32, benchStacks)
	for i := range stacks {
		for range benchDepth {
			stacks[i] = append(stacks[i], locs[rng.IntN(len(locs))])
		}
	}
	for p := range benchProcesses {
		var mine [][]int32
		for s := p; s < benchSamples; s += benchProcesses {
			mine = append(mine, stacks[s%benchStacks])
		}
		pb.process(pid, bin, mine...)
	}

	check := pprofile.NewProfiles()
	pb.pd.CopyTo(check)
	process(b, newTestProcessor(b), check)
	for i, n := range names(check, locs...) {
		loc := check.Dictionary().LocationTable().At(int(locs[i]))
		require.NotEmpty(b, n.name, "every benchmark location is named: location %d, mapping %d, address %#x", locs[i], loc.MappingIndex(), loc.Address())
	}
	return pb.pd
}

// mappedLibc returns the path of the libc a process maps.
func mappedLibc(tb testing.TB, pid int) string {
	tb.Helper()
	paths, err := mapsPaths(int64(pid))
	require.NoError(tb, err)
	for _, p := range paths {
		if strings.HasPrefix(filepath.Base(p), "libc.so") {
			return p
		}
	}
	tb.Fatalf("no libc in /proc/%d/maps: %v", pid, paths)
	return ""
}
