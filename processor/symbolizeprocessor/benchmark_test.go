// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"debug/elf"
	"debug/gosym"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/dwarfindex"
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
// frames over 2,000 locations in the program, built with -g, and the
// host's libc, whose debug file libc6-dbg installs), against the baseline
// of encoding the same batch to protobuf (pprofile's marshaling, what the
// exporter does to every batch anyway), reading:
//   - symtab: the mapped files' symbol tables alone (the processor before
//     DWARF);
//   - dwarf: debug files and DWARF lines and inlined calls;
//
// each
//   - warm: one batch, the processor's cache holding both files;
//   - cold: a new processor, a first batch (which hands both files to the
//     loader and goes out unnamed), the loader reading them (finding them
//     through /proc, verifying their file id, parsing symbol tables, finding
//     the debug files and indexing their DWARF), then a second batch.
//
// Every op encodes a fresh copy of the batch (timer stopped, timed on its
// own) and then symbolizes another (timed), so that the two share the
// machine's load: ns/op and ms/10k-samples are the processor's,
// encode-ms/10k-samples the baseline's, x-encode their ratio.
func BenchmarkSymbolize(b *testing.B) {
	pd := benchBatch(b)
	for _, src := range []struct {
		name       string
		symtabOnly bool
	}{{"symtab", true}, {"dwarf", false}} {
		for _, bc := range []struct {
			name string
			cold bool
		}{{"warm", false}, {"cold", true}} {
			b.Run(src.name+"/"+bc.name, func(b *testing.B) {
				newProc := func() *symbolizeProcessor {
					p := newTestProcessor(b)
					p.limits.symtabOnly = src.symtabOnly
					return p
				}
				p := newProc()
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
						p = newProc()
					}
					b.StartTimer()
					if bc.cold {
						process(b, p, work)
					} else {
						processOnce(b, p, work)
					}
				}
				b.StopTimer()
				n := time.Duration(b.N)
				b.ReportMetric(ms(b.Elapsed()/n), "ms/10k-samples")
				b.ReportMetric(ms(encode/n), "encode-ms/10k-samples")
				b.ReportMetric(ratio(b.Elapsed(), encode), "x-encode")
			})
		}
	}
}

// BenchmarkIndexLibcDebugFile measures reading and indexing the DWARF lines
// and inlined calls of the host's libc's debug file (libc6-dbg): time,
// allocations, and the index kept (index-MiB).
func BenchmarkIndexLibcDebugFile(b *testing.B) {
	lp := compile(b, b.TempDir(), "nxv.c", "nxv-bench")
	libc := mappedLibc(b, startWaiting(b, lp))
	id := gnuID(b, libc)
	path := filepath.Join(globalDebugDir, ".build-id", id[:2], id[2:]+".debug")
	var size int
	b.ReportAllocs()
	for range b.N {
		ef, err := elf.Open(path)
		require.NoError(b, err, "libc's debug file (libc6-dbg: run `make prereqs`)")
		d, err := dwarfindex.Open(ef, dwarfindex.Limits{SectionBytes: 1 << 30})
		require.NoError(b, err)
		ix, err := dwarfindex.Build(d, dwarfindex.Limits{IndexBytes: 1 << 30}, demangleName)
		require.NoError(b, err)
		size = ix.Size()
		require.NoError(b, ef.Close())
	}
	b.ReportMetric(float64(size)/(1<<20), "index-MiB")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func ratio(d, base time.Duration) float64 { return float64(d) / float64(base) }

// benchBatch builds the benchmark's batch, checking that the processor names
// every one of its locations.
func benchBatch(b *testing.B) pprofile.Profiles {
	dir := b.TempDir()
	bin := compile(b, dir, "nxv.c", "nxv-bench", "-g")
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

// BenchmarkSymbolizeGo measures the processor on 10,000 eBPF-like samples
// of Go frames (20 resources, 1,000 stacks of 20 frames over 2,000
// locations at addresses of the binary's functions, each named as the eBPF
// profiler names it: one line), as BenchmarkSymbolize does: warm (the
// binary's table cached) and cold (a new processor, a first batch, the
// loader reading the binary's .gopclntab and inline trees, a second
// batch). The binary is NEXOVUE_BENCH_GO_BIN (e.g. the collector,
// _build/otelcol-nexovue, about 130 MB), else this test binary; cache-MiB is
// what the cache keeps of it (its symbol table and Go table), inlined-% the
// share of the locations named with inlined calls.
func BenchmarkSymbolizeGo(b *testing.B) {
	bin := os.Getenv("NEXOVUE_BENCH_GO_BIN")
	if bin == "" {
		var err error
		bin, err = os.Executable()
		require.NoError(b, err)
	}
	pd, key := benchGoBatch(b, bin)
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
			syms, _ := p.cache.get(key)
			require.NotNil(b, syms)
			require.NotNil(b, syms.gotab)
			size := syms.size()
			inlined := 0
			for _, loc := range work.Dictionary().LocationTable().All() {
				if loc.Lines().Len() > 1 {
					inlined++
				}
			}
			var encode time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
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
				if bc.cold {
					process(b, p, work)
				} else {
					processOnce(b, p, work)
				}
			}
			b.StopTimer()
			n := time.Duration(b.N)
			b.ReportMetric(ms(b.Elapsed()/n), "ms/10k-samples")
			b.ReportMetric(ms(encode/n), "encode-ms/10k-samples")
			b.ReportMetric(ratio(b.Elapsed(), encode), "x-encode")
			b.ReportMetric(float64(size)/(1<<20), "cache-MiB")
			b.ReportMetric(100*float64(inlined)/float64(benchLocations), "inlined-%")
		})
	}
}

// benchGoBatch builds BenchmarkSymbolizeGo's batch of the Go binary at bin
// (found on the host: no process), and returns it with the binary's cache
// key.
func benchGoBatch(b *testing.B, bin string) (pprofile.Profiles, string) {
	ef, err := elf.Open(bin)
	require.NoError(b, err)
	defer ef.Close()
	data, err := ef.Section(".gopclntab").Data()
	require.NoError(b, err)
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, ef.Section(".text").Addr))
	require.NoError(b, err)
	rng := rand.New(rand.NewPCG(1, 2))
	off, start, end := textMapping(b, bin)
	id := fileID(b, bin)
	pb := newProfileBuilder()
	m := pb.mapping(mappingSpec{name: filepath.Base(bin), start: start, end: end, offset: off, htlhash: id})
	var locs []int32
	for len(locs) < benchLocations {
		f := tab.Funcs[rng.IntN(len(tab.Funcs))]
		if f.End-f.Entry < 16 {
			continue
		}
		pc := f.Entry + uint64(rng.IntN(int(f.End-f.Entry)))
		file, line, fn := tab.PCToLine(pc)
		if fn == nil {
			continue
		}
		li := pb.location(m, pc, "go")
		ln := pb.dict.LocationTable().At(int(li)).Lines().AppendEmpty()
		ln.SetFunctionIndex(pb.function(fn.Name, "", file))
		ln.SetLine(int64(line))
		locs = append(locs, li)
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
		pb.process(0, bin, mine...)
	}
	return pb.pd, fileIdentity{htlhash: id}.key()
}
