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
// the baseline of encoding the same batch to protobuf (pprofile's
// marshaling, what the exporter does to every batch anyway):
//   - warm: the processor with its cache holding both files' symbols;
//   - cold: a new processor each time: finding the files through /proc,
//     verifying their file id, parsing their symbol tables.
//
// Every op encodes a fresh copy of the batch (timer stopped, timed on its
// own) and then symbolizes another (timed), so that the two share the
// machine's load: ns/op and ms/10k-samples are the processor's,
// encode-ms/10k-samples the baseline's, x-encode their ratio.
func BenchmarkSymbolize(b *testing.B) {
	pd := benchBatch(b)
	for _, bc := range []struct {
		name string
		cold bool
	}{{"warm", false}, {"cold", true}} {
		b.Run(bc.name, func(b *testing.B) {
			p := newTestProcessor(b)
			m := &pprofile.ProtoMarshaler{}
			work := pprofile.NewProfiles()
			pd.CopyTo(work)
			process(b, p, work) // warm the cache
			var encode time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				// Marshaling turns the resources' attribute keys and
				// string values into references in place: a fresh copy.
				pd.CopyTo(work)
				start := time.Now()
				if _, err := m.MarshalProfiles(work); err != nil {
					b.Fatal(err)
				}
				encode += time.Since(start)
				pd.CopyTo(work)
				if bc.cold {
					p = newTestProcessor(b)
				}
				b.StartTimer()
				process(b, p, work)
			}
			b.StopTimer()
			n := time.Duration(b.N)
			b.ReportMetric(ms(b.Elapsed()/n), "ms/10k-samples")
			b.ReportMetric(ms(encode/n), "encode-ms/10k-samples")
			b.ReportMetric(ratio(b.Elapsed(), encode), "x-encode")
		})
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
	files, err := mappedFiles(int64(pid))
	require.NoError(tb, err)
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f.path), "libc.so") {
			return f.path
		}
	}
	tb.Fatalf("no libc in /proc/%d/maps: %v", pid, files)
	return ""
}
