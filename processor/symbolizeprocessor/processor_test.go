// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/collector/processor/xprocessor"

	"github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/metadata"
)

func newTestProcessor(tb testing.TB) *symbolizeProcessor {
	tb.Helper()
	return newTestProcessorWith(tb, testConfig(), processortest.NewNopSettings(metadata.Type))
}

// testConfig is the default configuration with load_wait 0: the batches of
// the tests that use it go out without waiting for the files they are the
// first to hold, so that what each batch names does not depend on how fast
// the loader is (TestLoadWait* test the wait).
func testConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.LoadWait = 0
	return cfg
}

func newTestProcessorWith(tb testing.TB, cfg *Config, set processor.Settings) *symbolizeProcessor {
	tb.Helper()
	p, err := newSymbolizeProcessor(set, cfg)
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, p.shutdown(context.Background())) })
	return p
}

// process symbolizes pd as a later batch does: a copy of it goes first
// (handing its new files to the loader), the loader finishes, then pd.
func process(tb testing.TB, p *symbolizeProcessor, pd pprofile.Profiles) {
	tb.Helper()
	first := pprofile.NewProfiles()
	pd.CopyTo(first)
	processOnce(tb, p, first)
	p.load.wait()
	processOnce(tb, p, pd)
}

// processOnce symbolizes one batch.
func processOnce(tb testing.TB, p *symbolizeProcessor, pd pprofile.Profiles) {
	tb.Helper()
	_, err := p.processProfiles(context.Background(), pd)
	require.NoError(tb, err)
}

// TestSymbolizeC: a running C program built with symbols, its binary sent
// the way the eBPF profiler sends it (base name, file id, GNU build id,
// addresses in the file's virtual address space): every native frame is
// named, static functions and Rust-mangled ones included; an address past
// the symbols, a kernel frame and a frame with a line are left as they are.
func TestSymbolizeC(t *testing.T) {
	bin, pid, syms, b, m := runningNxv(t)
	existing := b.function("nxv_leaf", "nxv_leaf", bin) // reused, not added again
	leaf := b.location(m, syms["nxv_leaf"].addr+4, "native")
	leaf2 := b.location(m, syms["nxv_leaf"].addr+9, "native")
	middle := b.location(m, syms["nxv_middle"].addr+1, "native")
	legacy := b.location(m, syms["_ZN7nxvrust4burn17h0123456789abcdefE"].addr+2, "native")
	v0 := b.location(m, syms["_RNvCs1234_7nxvrust3hot"].addr+2, "native")
	main := b.location(m, syms["main"].addr+3, "native")
	beyond := b.location(m, b.dict.MappingTable().At(int(m)).MemoryLimit()+0x100000, "native")
	kernel := b.location(m, syms["main"].addr+3, "kernel")
	withLine := b.location(m, syms["main"].addr+5, "native")
	goFn := b.function("main.main", "", "main.go")
	b.dict.LocationTable().At(int(withLine)).Lines().AppendEmpty().SetFunctionIndex(goFn)
	b.process(pid, bin, []int32{leaf, middle, legacy, v0, main}, []int32{leaf2, beyond, kernel, withLine})
	funcsBefore := b.dict.FunctionTable().Len()

	process(t, newTestProcessor(t), b.pd)

	assert.Equal(t, []frameName{
		{"nxv_leaf", "nxv_leaf", bin},
		{"nxv_leaf", "nxv_leaf", bin},
		{"nxv_middle", "nxv_middle", bin},
		{"nxvrust::burn", "_ZN7nxvrust4burn17h0123456789abcdefE", bin},
		{"nxvrust::hot", "_RNvCs1234_7nxvrust3hot", bin},
		{"main", "main", bin},
		{},
		{},
		{"main.main", "", "main.go"},
	}, names(b.pd, leaf, leaf2, middle, legacy, v0, main, beyond, kernel, withLine))
	d := b.pd.Dictionary()
	assert.Equal(t, existing, d.LocationTable().At(int(leaf)).Lines().At(0).FunctionIndex(), "an equal function already in the table is reused")
	assert.Equal(t, funcsBefore+4, d.FunctionTable().Len(), "one function per symbol: nxv_middle, nxvrust::burn, nxvrust::hot, main")
	assert.Equal(t, 1, d.LocationTable().At(int(withLine)).Lines().Len())
	assertUniqueStrings(t, d)
}

// TestSymbolizeCPlusPlus: C++ names demangled, without parameters: a method,
// a member of a class template, a function template, an operator. The file
// is found on the host from the resource's executable (no process).
func TestSymbolizeCPlusPlus(t *testing.T) {
	dir := t.TempDir()
	bin := compile(t, dir, "nxv.cpp", "nxv-cpp")
	syms := nmSymbols(t, bin, false)
	off, start, end := textMapping(t, bin)
	b := newProfileBuilder()
	m := b.mapping(mappingSpec{name: "nxv-cpp", start: start, end: end, offset: off, htlhash: fileID(t, bin)})
	var locs []int32
	raw := []string{"_ZN3nxv6Worker3runEi", "_ZN3nxv3BoxIiE3getEi", "_ZN3nxv5twiceIlEET_S1_", "_ZNK3nxv3VecplERKS0_", "main"}
	for _, r := range raw {
		s, ok := syms[r]
		require.True(t, ok, "nm lists no %s", r)
		locs = append(locs, b.location(m, s.addr+1, "native"))
	}
	b.process(0, bin, locs)

	process(t, newTestProcessor(t), b.pd)

	assert.Equal(t, []frameName{
		{"nxv::Worker::run", raw[0], bin},
		{"nxv::Box<int>::get", raw[1], bin},
		{"nxv::twice<long>", raw[2], bin},
		{"nxv::Vec::operator+", raw[3], bin},
		{"main", "main", bin},
	}, names(b.pd, locs...))
}

// TestSymbolizeRust: a program built by rustc (when there is one: Debian's
// rustc is not among the test's prerequisites), its function named
// nxv_rust::nxv::hot from both manglings.
func TestSymbolizeRust(t *testing.T) {
	rustc, err := exec.LookPath("rustc")
	if err != nil {
		t.Skip("no rustc on PATH")
	}
	src, err := filepath.Abs(filepath.Join("testdata", "src", "nxv.rs"))
	require.NoError(t, err)
	for _, mangling := range []string{"legacy", "v0"} {
		t.Run(mangling, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "nxv-rust")
			args := []string{"--crate-name", "nxv_rust", "-C", "opt-level=1", "-o", bin, src}
			if mangling == "v0" {
				args = append(args, "-C", "symbol-mangling-version=v0")
			}
			out, err := exec.Command(rustc, args...).CombinedOutput()
			if err != nil && mangling == "v0" && strings.Contains(string(out), "symbol-mangling-version") {
				t.Skipf("this rustc has no stable v0 mangling: %s", out)
			}
			require.NoError(t, err, "rustc: %s", out)
			var raw string
			var addr uint64
			for name, s := range nmSymbols(t, bin, false) {
				if strings.Contains(name, "nxv_rust") && strings.Contains(name, "3nxv3hot") {
					raw, addr = name, s.addr
				}
			}
			require.NotEmpty(t, raw, "nm lists no nxv_rust::nxv::hot")
			off, start, end := textMapping(t, bin)
			b := newProfileBuilder()
			loc := b.location(b.mapping(mappingSpec{name: "nxv-rust", start: start, end: end, offset: off, htlhash: fileID(t, bin)}), addr+1, "native")
			b.process(0, bin, []int32{loc})

			process(t, newTestProcessor(t), b.pd)

			assert.Equal(t, []frameName{{"nxv_rust::nxv::hot", raw, bin}}, names(b.pd, loc))
		})
	}
}

// TestSymbolizeStripped: a stripped executable keeps only .dynsym, which
// holds none of its own functions: its frames stay unsymbolized. A stripped
// shared library is named from .dynsym (its exported functions); the
// mapping's absolute filename is used as it is, with only a GNU build id.
func TestSymbolizeStripped(t *testing.T) {
	dir := t.TempDir()
	bin := stripped(t, compile(t, dir, "nxv.c", "nxv-sym"))
	lib := stripped(t, compile(t, dir, "libnxv.c", "libnxv.so", "-shared", "-fPIC"))
	binSyms := nmSymbols(t, compile(t, dir, "nxv.c", "nxv-unstripped"), false) // same code, same addresses
	libSyms := nmSymbols(t, lib, true)

	b := newProfileBuilder()
	off, start, end := textMapping(t, bin)
	mb := b.mapping(mappingSpec{name: "nxv-sym.stripped", start: start, end: end, offset: off, htlhash: fileID(t, bin)})
	off, start, end = textMapping(t, lib)
	ml := b.mapping(mappingSpec{name: lib, start: start, end: end, offset: off, gnuBuildID: gnuID(t, lib)})
	leaf := b.location(mb, binSyms["nxv_leaf"].addr+4, "native")
	exported := b.location(ml, libSyms["nxv_exported"].addr+4, "native")
	b.process(0, bin, []int32{exported, leaf})

	process(t, newTestProcessor(t), b.pd)

	assert.Equal(t, []frameName{{}, {"nxv_exported", "nxv_exported", lib}}, names(b.pd, leaf, exported))
}

// TestSymbolizeProcessAddresses: a mapping in pprof's convention (process
// addresses: the mapping's start where the process mapped the file's
// offset) is translated to the file's virtual addresses. The file is found
// through /proc/<pid>/root by its base name in /proc/<pid>/maps.
func TestSymbolizeProcessAddresses(t *testing.T) {
	dir := t.TempDir()
	bin := compile(t, dir, "nxv.c", "nxv-sym")
	pid := startWaiting(t, bin)
	syms := nmSymbols(t, bin, false)
	off, vstart, _ := textMapping(t, bin)
	rstart, rend := procMapping(t, pid, bin, off)

	b := newProfileBuilder()
	m := b.mapping(mappingSpec{name: "nxv-sym", start: rstart, end: rend, offset: off, htlhash: fileID(t, bin)})
	leaf := b.location(m, rstart+(syms["nxv_leaf"].addr-vstart)+4, "")
	b.process(pid, "", []int32{leaf})

	process(t, newTestProcessor(t), b.pd)

	assert.Equal(t, []frameName{{"nxv_leaf", "nxv_leaf", bin}}, names(b.pd, leaf))
}

// leafProgram is the C test program built for a test, with what a batch
// needs to point at its nxv_leaf function the way the eBPF profiler does.
type leafProgram struct {
	bin, id            string
	leaf               uint64 // nxv_leaf's address
	offset, start, end uint64 // its text mapping
}

func buildLeafProgram(t *testing.T) leafProgram {
	t.Helper()
	bin := compile(t, t.TempDir(), "nxv.c", "nxv-sym")
	lp := leafProgram{bin: bin, id: fileID(t, bin), leaf: nmSymbols(t, bin, false)["nxv_leaf"].addr}
	lp.offset, lp.start, lp.end = textMapping(t, bin)
	return lp
}

// batch returns a batch of one sample of process pid (exe its executable)
// whose stack is one frame in nxv_leaf, of a mapping with the spec's name
// and identity (spec's bounds are the program's), and that frame's index.
func (lp leafProgram) batch(pid int, exe string, spec mappingSpec) (pprofile.Profiles, int32) {
	if spec.name == "" {
		spec.name = "nxv-sym"
	}
	spec.start, spec.end, spec.offset = lp.start, lp.end, lp.offset
	b := newProfileBuilder()
	leaf := b.location(b.mapping(spec), lp.leaf+4, "native")
	b.process(pid, exe, []int32{leaf})
	return b.pd, leaf
}

// TestSymbolizeDeletedFile: a running program whose binary was deleted
// since it started (a package upgrade) is read through
// /proc/<pid>/map_files, where it is still the mapped file.
func TestSymbolizeDeletedFile(t *testing.T) {
	lp := buildLeafProgram(t)
	pid := startWaiting(t, lp.bin)
	removeFile(t, lp.bin)
	pd, leaf := lp.batch(pid, lp.bin+" (deleted)", mappingSpec{htlhash: lp.id})

	process(t, newTestProcessor(t), pd)

	assert.Equal(t, []frameName{{"nxv_leaf", "nxv_leaf", lp.bin}}, names(pd, leaf))
}

// TestSymbolizeNotTheFile: a file whose identity is not the mapping's, a
// mapping without identity, a file over max_file_size_mib and a file that
// is not there leave the frames unsymbolized.
func TestSymbolizeNotTheFile(t *testing.T) {
	lp := buildLeafProgram(t)
	for _, tc := range []struct {
		name    string
		spec    mappingSpec
		maxSize int64
	}{
		{"other file id", mappingSpec{htlhash: "00112233445566778899aabbccddeeff"}, 1 << 30},
		{"other GNU build id", mappingSpec{gnuBuildID: "0011223344"}, 1 << 30},
		{"no identity", mappingSpec{}, 1 << 30},
		{"too large", mappingSpec{htlhash: lp.id}, 1000},
		{"absent", mappingSpec{name: "nxv-absent", htlhash: lp.id}, 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pd, leaf := lp.batch(0, lp.bin, tc.spec)
			p := newTestProcessor(t)
			p.limits.maxFileSize = tc.maxSize
			process(t, p, pd)
			assert.Equal(t, []frameName{{}}, names(pd, leaf))
		})
	}
}

// TestSymbolizeCached: a file's symbols are read once; later batches are
// named from the cache even when the file is gone.
func TestSymbolizeCached(t *testing.T) {
	lp := buildLeafProgram(t)
	p := newTestProcessor(t)
	pd, leaf := lp.batch(0, lp.bin, mappingSpec{htlhash: lp.id})
	process(t, p, pd)
	require.Equal(t, []frameName{{"nxv_leaf", "nxv_leaf", lp.bin}}, names(pd, leaf))
	removeFile(t, lp.bin)
	pd, leaf = lp.batch(0, lp.bin, mappingSpec{htlhash: lp.id})
	process(t, p, pd)
	assert.Equal(t, []frameName{{"nxv_leaf", "nxv_leaf", lp.bin}}, names(pd, leaf))
}

// TestSymbolizeThroughFactory runs the processor as the Collector builds it.
func TestSymbolizeThroughFactory(t *testing.T) {
	lp := buildLeafProgram(t)
	pd, leaf := lp.batch(0, lp.bin, mappingSpec{htlhash: lp.id})

	sink := new(consumertest.ProfilesSink)
	f := NewFactory().(xprocessor.Factory)
	cfg := f.CreateDefaultConfig().(*Config)
	require.Equal(t, 2*time.Second, cfg.LoadWait)
	cfg.LoadWait = time.Minute // its default, 2 s, could run out on a loaded machine
	proc, err := f.CreateProfiles(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, proc.Start(context.Background(), nil))
	require.True(t, proc.Capabilities().MutatesData)
	// The first batch waits for the file it is the first to hold (read by
	// the loader, off the processor's lock) and is named.
	first := pprofile.NewProfiles()
	pd.CopyTo(first)
	require.NoError(t, proc.ConsumeProfiles(context.Background(), first))
	require.Len(t, sink.AllProfiles(), 1)
	assert.Equal(t, []frameName{{"nxv_leaf", "nxv_leaf", lp.bin}}, names(sink.AllProfiles()[0], leaf))
	next := pprofile.NewProfiles()
	pd.CopyTo(next)
	require.NoError(t, proc.ConsumeProfiles(context.Background(), next))
	require.NoError(t, proc.Shutdown(context.Background()))
	last := sink.AllProfiles()[len(sink.AllProfiles())-1]
	assert.Equal(t, []frameName{{"nxv_leaf", "nxv_leaf", lp.bin}}, names(last, leaf))
}

// TestSymbolizeHostileIndices: indices outside the dictionary are skipped,
// never followed.
func TestSymbolizeHostileIndices(t *testing.T) {
	b := newProfileBuilder()
	m := b.mapping(mappingSpec{name: "nxv", htlhash: "00"})
	loc := b.location(m, 1, "native")
	b.dict.LocationTable().AppendEmpty().SetMappingIndex(99)
	b.dict.MappingTable().At(int(m)).AttributeIndices().Append(1000, -1)
	b.dict.LocationTable().At(int(loc)).AttributeIndices().Append(77)
	b.process(1, "/nonexistent", []int32{loc, 55, -3})
	rp := b.pd.ResourceProfiles().At(0)
	rp.ScopeProfiles().At(0).Profiles().At(0).Samples().AppendEmpty().SetStackIndex(1234)
	process(t, newTestProcessor(t), b.pd)
	assert.Equal(t, []frameName{{}}, names(b.pd, loc))
}

func assertUniqueStrings(t *testing.T, d pprofile.ProfilesDictionary) {
	t.Helper()
	seen := map[string]bool{}
	for _, s := range d.StringTable().All() {
		assert.False(t, seen[s], "string %q twice in the table", s)
		seen[s] = true
	}
}

// procMapping returns where a process mapped a file's given offset.
func procMapping(t *testing.T, pid int, path string, offset uint64) (start, end uint64) {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	require.NoError(t, err)
	defer f.Close()
	abs, err := filepath.EvalSymlinks(path)
	require.NoError(t, err)
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 6 || fields[5] != abs {
			continue
		}
		o, err := strconv.ParseUint(fields[2], 16, 64)
		require.NoError(t, err)
		if o != offset {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		start, err = strconv.ParseUint(lo, 16, 64)
		require.NoError(t, err)
		end, err = strconv.ParseUint(hi, 16, 64)
		require.NoError(t, err)
		return start, end
	}
	t.Fatalf("%s at offset %#x not in /proc/%d/maps", path, offset, pid)
	return 0, 0
}
