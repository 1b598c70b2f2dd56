// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"bufio"
	"bytes"
	"context"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/ebpf-profiler/libpf"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
	"github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/metadatatest"
)

// allNames returns the function names of a location's lines, innermost
// first.
func allNames(pd pprofile.Profiles, li int32) []string {
	d := pd.Dictionary()
	loc := d.LocationTable().At(int(li))
	var out []string
	for _, ln := range loc.Lines().All() {
		f := d.FunctionTable().At(int(ln.FunctionIndex()))
		out = append(out, d.StringTable().At(int(f.NameStrindex())))
	}
	return out
}

// newMeteredProcessor is a processor whose metrics tt holds.
func newMeteredProcessor(t *testing.T, cfg *Config) (*symbolizeProcessor, *componenttest.Telemetry) {
	t.Helper()
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	return newTestProcessorWith(t, cfg, metadatatest.NewSettings(tt)), tt
}

// assertNamedBy checks that the frames named so far were n, all by source.
func assertNamedBy(t *testing.T, tt *componenttest.Telemetry, source string, n int64) {
	t.Helper()
	metadatatest.AssertEqualProcessorSymbolizeFramesNamed(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("source", source)), Value: n},
	}, metricdatatest.IgnoreTimestamp())
}

// run runs a tool and fails the test with its output when it fails.
func runTool(tb testing.TB, name string, args ...string) {
	tb.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(tb, err, "%s %v (make prereqs installs it): %s", name, args, out)
}

// TestSymbolizeVDSO: a frame in linux-vdso.1.so, sent the way the eBPF
// profiler sends it (its own file id of the mapping's bytes), is named from
// the process's [vdso] mapping.
func TestSymbolizeVDSO(t *testing.T) {
	// The shell prints once it runs, so its exec (which maps the vDSO) is
	// over when the line arrives; reading the maps right after Start can
	// catch the process between its old and its new image.
	cmd := exec.Command("sh", "-c", "echo running; sleep 60")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "running\n", line)
	pid := cmd.Process.Pid

	v, err := debugfile.ReadVDSO("/proc", pid)
	require.NoError(t, err)
	id, err := libpf.FileIDFromExecutableReader(bytes.NewReader(v.Image))
	require.NoError(t, err)
	ef, err := elf.NewFile(bytes.NewReader(v.Image))
	require.NoError(t, err)
	dyn, err := ef.DynamicSymbols()
	require.NoError(t, err)
	var addr uint64
	atAddr := map[uint64][]string{}
	for _, s := range dyn {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			atAddr[s.Value] = append(atAddr[s.Value], s.Name)
			if s.Name == "__vdso_clock_gettime" {
				addr = s.Value
			}
		}
	}
	require.NotZero(t, addr, "the vDSO has no __vdso_clock_gettime")
	var start, end, off uint64
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			off = p.Off &^ 0xfff
			start, end = p.Vaddr-(p.Off-off), p.Vaddr+p.Memsz
		}
	}

	b := newProfileBuilder()
	m := b.mapping(mappingSpec{name: "linux-vdso.1.so", start: start, end: end, offset: off, htlhash: id.StringNoQuotes()})
	loc := b.location(m, addr+4, "native")
	b.process(pid, "/usr/bin/sleep", []int32{loc})
	p, tt := newMeteredProcessor(t, testConfig())
	process(t, p, b.pd)

	got := allNames(b.pd, loc)
	require.Len(t, got, 1)
	assert.Contains(t, atAddr[addr], got[0])
	assertNamedBy(t, tt, sourceVDSO, 1)
}

// miniDebugInfo returns a stripped copy of bin with MiniDebugInfo as
// Fedora makes it: the symbols of an only-keep-debug copy, without its
// debug sections, xz-compressed into .gnu_debugdata.
func miniDebugInfo(t *testing.T, bin string) string {
	t.Helper()
	mini := bin + ".mini"
	runTool(t, "objcopy", "--only-keep-debug", bin, mini)
	runTool(t, "objcopy", "--strip-debug", mini)
	runTool(t, "xz", "-k", mini)
	out := stripped(t, bin)
	runTool(t, "objcopy", "--add-section", ".gnu_debugdata="+mini+".xz", out)
	return out
}

// TestSymbolizeMiniDebugInfo: a stripped binary with MiniDebugInfo gets
// its static functions' names from it.
func TestSymbolizeMiniDebugInfo(t *testing.T) {
	dir := t.TempDir()
	full := compile(t, dir, "nxv.c", "nxv-mini")
	bin := miniDebugInfo(t, full)
	leaf := nmSymbols(t, full, false)["nxv_leaf"].addr

	b := newProfileBuilder()
	off, start, end := textMapping(t, bin)
	m := b.mapping(mappingSpec{name: bin, start: start, end: end, offset: off, gnuBuildID: gnuID(t, bin)})
	loc := b.location(m, leaf+4, "native")
	b.process(0, bin, []int32{loc})
	p, tt := newMeteredProcessor(t, testConfig())
	process(t, p, b.pd)

	assert.Equal(t, []frameName{{"nxv_leaf", "nxv_leaf", bin}}, names(b.pd, loc))
	assertNamedBy(t, tt, sourceMiniDebugInfo, 1)
}

// TestSymbolizeDebuginfod: a stripped binary whose debug file only a
// debuginfod server has: the first batches go without (the fetch runs off
// their path), the batch after the fetch gets the name and the line. The
// server answers once the first batch is done: a fetch that ended before
// its second pass would have the file read again at once, and the next
// batch named already (a CI run saw 2 frames named by debuginfod).
func TestSymbolizeDebuginfod(t *testing.T) {
	dir := t.TempDir()
	full := compile(t, dir, "nxv.c", "nxv-dbg", "-g")
	dbg := full + ".debug"
	runTool(t, "objcopy", "--only-keep-debug", full, dbg)
	bin := stripped(t, full)
	id := gnuID(t, bin)
	debugData, err := os.ReadFile(dbg)
	require.NoError(t, err)
	answer := make(chan struct{})
	var answerOnce sync.Once
	letAnswer := func() { answerOnce.Do(func() { close(answer) }) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/buildid/"+id+"/debuginfo" {
			http.NotFound(w, r)
			return
		}
		select {
		case <-answer:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write(debugData)
	}))
	defer srv.Close()
	defer letAnswer() // before srv.Close, which waits for the handler

	cfg := testConfig()
	cfg.Debuginfod.URLs = []string{srv.URL}
	cfg.Debuginfod.CacheDir = filepath.Join(dir, "cache")
	p, tt := newMeteredProcessor(t, cfg)
	leaf := nmSymbols(t, full, false)["nxv_leaf"].addr
	batch := func() (pprofile.Profiles, int32) {
		b := newProfileBuilder()
		off, start, end := textMapping(t, bin)
		m := b.mapping(mappingSpec{name: bin, start: start, end: end, offset: off, gnuBuildID: id})
		loc := b.location(m, leaf+4, "native")
		b.process(0, bin, []int32{loc})
		return b.pd, loc
	}
	first, loc := batch()
	process(t, p, first) // read without a debug file: the fetch is asked for
	assert.Equal(t, []frameName{{}}, names(first, loc))
	letAnswer()
	deadline := time.Now().Add(time.Minute)
	for !p.limits.debuginfod.Cached(id) {
		require.True(t, time.Now().Before(deadline), "not fetched within a minute")
		time.Sleep(10 * time.Millisecond) // polling the fetch's outcome
	}
	second, _ := batch()
	processOnce(t, p, second) // sees the fetched file: the file is read again
	p.load.wait()
	third, loc := batch()
	processOnce(t, p, third)
	got := names(third, loc)
	require.Len(t, got, 1)
	assert.Equal(t, "nxv_leaf", got[0].name)
	assert.Equal(t, "nxv.c", filepath.Base(got[0].file))
	assert.Positive(t, third.Dictionary().LocationTable().At(int(loc)).Lines().At(0).Line())
	assertNamedBy(t, tt, sourceDebuginfod, 1)
}

// TestSymbolizeDWZ: Debian's libbfd, whose debug file (libbinutils-dbg) is
// DWZ-compressed: a function whose name is only in the alternate file is
// named from it.
func TestSymbolizeDWZ(t *testing.T) {
	const lib = "/usr/lib/x86_64-linux-gnu/libbfd-2.40-system.so"
	id := gnuID(t, lib)
	df, err := elf.Open(debugfile.BuildIDPath("/usr/lib/debug", id))
	require.NoError(t, err, "libbfd's debug file (make prereqs installs libbinutils-dbg)")
	defer df.Close()
	d, err := df.DWARF()
	require.NoError(t, err)
	// A subprogram with code whose name needs the alternate file: its
	// name is not in the debug file itself.
	link, err := debugfile.ReadAltLink(df)
	require.NoError(t, err)
	alt, err := debugfile.OpenAlt(link, id, "/usr/lib/debug", []string{"/usr/lib/debug"}, os.Open, 64<<20)
	require.NoError(t, err)
	var addr uint64
	var want string
	r := d.Reader()
	for e, err := r.Next(); e != nil && err == nil && addr == 0; e, err = r.Next() {
		low, ok := e.Val(dwarf.AttrLowpc).(uint64)
		if e.Tag != dwarf.TagSubprogram || !ok {
			continue
		}
		if n, _, _ := (debugfile.Names{Main: d}).Name(e); n != "" {
			continue
		}
		if n, _, err := (debugfile.Names{Main: d, Alt: alt}).Name(e); err == nil && n != "" {
			addr, want = low, n
		}
	}
	require.NotZero(t, addr, "no subprogram of libbfd is named only through its DWZ alternate")

	b := newProfileBuilder()
	off, start, end := textMapping(t, lib)
	m := b.mapping(mappingSpec{name: lib, start: start, end: end, offset: off, gnuBuildID: id})
	loc := b.location(m, addr, "native")
	b.process(0, lib, []int32{loc})
	p, tt := newMeteredProcessor(t, testConfig())
	process(t, p, b.pd)

	got := allNames(b.pd, loc)
	require.NotEmpty(t, got)
	assert.Equal(t, want, got[len(got)-1], "the function (last line) at %#x", addr)
	// From DWARF through the alternate (the debug file's .symtab has the
	// name too: the source tells them apart).
	assertNamedBy(t, tt, sourceDWZ, 1)
}

// TestSymbolizeExitedProcess: a program that has exited, its binary
// deleted, is named from the file the profiling receiver held for it when
// the profiler saw it (debugfile.Held, filled here as the receiver's hook
// does: the file opened through /proc/<pid>/map_files).
func TestSymbolizeExitedProcess(t *testing.T) {
	lp := buildLeafProgram(t)
	cmd := exec.Command(lp.bin, "wait")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	pid := cmd.Process.Pid
	start, end := procMapping(t, pid, lp.bin, lp.offset)
	f, err := os.Open(fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, start, end))
	require.NoError(t, err)
	held := debugfile.NewHeldFiles(4)
	held.Hold(lp.id, lp.bin, f)

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	removeFile(t, lp.bin)
	pd, leaf := lp.batch(pid, lp.bin, mappingSpec{htlhash: lp.id})

	p := newTestProcessor(t)
	p.held = held
	process(t, p, pd)

	assert.Equal(t, []frameName{{"nxv_leaf", "nxv_leaf", lp.bin}}, names(pd, leaf))
}

// TestSymbolizeMiniDebugInfoBomb: a .gnu_debugdata that decompresses past
// its cap (8 MiB of zeros against max_file_size_mib 1) is a too_large
// failure, and the frame stays as it was.
func TestSymbolizeMiniDebugInfoBomb(t *testing.T) {
	dir := t.TempDir()
	full := compile(t, dir, "nxv.c", "nxv-bomb")
	zeros := filepath.Join(dir, "zeros")
	require.NoError(t, os.WriteFile(zeros, make([]byte, 8<<20), 0o600))
	runTool(t, "xz", "-0", "-k", zeros)
	bin := stripped(t, full)
	runTool(t, "objcopy", "--add-section", ".gnu_debugdata="+zeros+".xz", bin)
	leaf := nmSymbols(t, full, false)["nxv_leaf"].addr

	b := newProfileBuilder()
	off, start, end := textMapping(t, bin)
	m := b.mapping(mappingSpec{name: bin, start: start, end: end, offset: off, gnuBuildID: gnuID(t, bin)})
	loc := b.location(m, leaf+4, "native")
	b.process(0, bin, []int32{loc})
	cfg := testConfig()
	cfg.MaxFileSizeMiB = 1
	p, tt := newMeteredProcessor(t, cfg)
	process(t, p, b.pd)

	assert.Equal(t, []frameName{{}}, names(b.pd, loc))
	metadatatest.AssertEqualProcessorSymbolizeFilesFailed(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "too_large"))},
	}, metricdatatest.IgnoreTimestamp())
}
