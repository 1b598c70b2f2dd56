// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"bufio"
	"context"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
	"github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/metadatatest"
)

// goProgram is testdata/src/goinl built by the Go toolchain.
type goProgram struct {
	bin, id string
	// mixPCs are addresses of main.main inside the inlined main.mix (by
	// debug/gosym, which reports the innermost line under the physical
	// function's name, as the eBPF profiler does).
	mixPCs []uint64
	offset uint64
	start  uint64
	end    uint64
	file   string // main.go's path in the binary
}

// buildGoProgram builds testdata/src/goinl (with ldflags, e.g. -s -w)
// and finds the addresses of main.main in its inlined main.mix.
func buildGoProgram(t *testing.T, dir, name string, ldflags string) goProgram {
	t.Helper()
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags="+ldflags, "-o", bin, ".")
	cmd.Dir = filepath.Join("testdata", "src", "goinl")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	p := goProgram{bin: bin, id: fileID(t, bin), file: "goinl/main.go"}
	p.offset, p.start, p.end = textMapping(t, bin)

	ef, err := elf.Open(bin)
	require.NoError(t, err)
	defer ef.Close()
	data, err := ef.Section(".gopclntab").Data()
	require.NoError(t, err)
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, ef.Section(".text").Addr))
	require.NoError(t, err)
	fn := tab.LookupFunc("main.main")
	require.NotNil(t, fn)
	for pc := fn.Entry; pc < fn.End; pc++ {
		if file, line, _ := tab.PCToLine(pc); line == 18 && file == p.file {
			p.mixPCs = append(p.mixPCs, pc)
		}
	}
	require.NotEmpty(t, p.mixPCs, "no address of main.main in main.mix's body")
	return p
}

// batch is a batch of the program's Go frames as the eBPF profiler sends
// them: frame type go, one line naming the physical function (main.main)
// at the innermost line (main.mix's body), no start line.
func (p goProgram) batch(pid int) (pprofile.Profiles, []int32) {
	b := newProfileBuilder()
	m := b.mapping(mappingSpec{name: filepath.Base(p.bin), start: p.start, end: p.end, offset: p.offset, htlhash: p.id})
	fn := b.function("main.main", "", p.file)
	var locs []int32
	for _, pc := range p.mixPCs {
		li := b.location(m, pc, "go")
		ln := b.dict.LocationTable().At(int(li)).Lines().AppendEmpty()
		ln.SetFunctionIndex(fn)
		ln.SetLine(18)
		locs = append(locs, li)
	}
	b.process(pid, p.bin, locs)
	return b.pd, locs
}

// goLine is a line of a location: function, file, line, start line.
type goLine struct {
	name, file      string
	line, startLine int64
}

func goLines(pd pprofile.Profiles, li int32) []goLine {
	d := pd.Dictionary()
	str := func(i int32) string { return d.StringTable().At(int(i)) }
	var out []goLine
	for _, ln := range d.LocationTable().At(int(li)).Lines().All() {
		f := d.FunctionTable().At(int(ln.FunctionIndex()))
		out = append(out, goLine{str(f.NameStrindex()), str(f.FilenameStrindex()), ln.Line(), f.StartLine()})
	}
	return out
}

// checkGoInlined: every location in main.mix's body now holds main.mix at
// its body's line, then main.step at its call of mix, then main.main at its
// call of step, with their func lines as start lines.
func checkGoInlined(t *testing.T, p goProgram, pd pprofile.Profiles, locs []int32) {
	t.Helper()
	for _, li := range locs {
		assert.Equal(t, []goLine{
			{"main.mix", p.file, 18, 17},
			{"main.step", p.file, 22, 21},
			{"main.main", p.file, 34, 25},
		}, goLines(pd, li))
	}
}

// TestGoInlinedFrames: a running Go program's frames, built plain and
// stripped (-s -w), get their inlined calls and start lines; the
// frames_named metric counts them under gopclntab. So do the frames of a
// Go binary (with its .symtab) that a producer types native, with no line
// (goinl-native): named from the Go table, not its symbol table.
func TestGoInlinedFrames(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, ldflags string
		native        bool
	}{{"goinl", "", false}, {"goinl-stripped", "-s -w", false}, {"goinl-native", "", true}} {
		t.Run(tc.name, func(t *testing.T) {
			gp := buildGoProgram(t, dir, tc.name, tc.ldflags)
			pid := startWaiting(t, gp.bin)
			pd, locs := gp.batch(pid)
			if tc.native {
				pd, locs = gp.nativeBatch(pid)
			}
			tt := componenttest.NewTelemetry()
			defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
			p := newTestProcessorWith(t, testConfig(), metadatatest.NewSettings(tt))
			process(t, p, pd)
			checkGoInlined(t, gp, pd, locs)
			metadatatest.AssertEqualProcessorSymbolizeFramesNamed(t, tt, []metricdata.DataPoint[int64]{
				{Value: int64(len(locs)), Attributes: attribute.NewSet(attribute.String("source", "gopclntab"))},
			}, metricdatatest.IgnoreTimestamp())
		})
	}
}

// TestGoExitedProcess: a Go program that has exited, its binary deleted,
// is named from the file the profiling receiver held for it.
func TestGoExitedProcess(t *testing.T) {
	gp := buildGoProgram(t, t.TempDir(), "goinl-exited", "-s -w")
	cmd := exec.Command(gp.bin, "wait")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	pid := cmd.Process.Pid
	start, end := procMapping(t, pid, gp.bin, gp.offset)
	f, err := os.Open(fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, start, end))
	require.NoError(t, err)
	held := debugfile.NewHeldFiles(4)
	held.Hold(gp.id, gp.bin, f)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	removeFile(t, gp.bin)

	pd, locs := gp.batch(pid)
	p := newTestProcessor(t)
	p.held = held
	process(t, p, pd)
	checkGoInlined(t, gp, pd, locs)
}

// TestGoMalformedTable: a Go binary whose .gopclntab is garbled keeps the
// profiler's frames, counted (files_failed malformed_gopclntab, and
// go_frames_kept).
func TestGoMalformedTable(t *testing.T) {
	gp := buildGoProgram(t, t.TempDir(), "goinl-bad", "-s -w")
	overwriteSection(t, gp.bin, ".gopclntab", func(b []byte) {
		for i := 8; i < len(b); i += 7 {
			b[i] ^= 0x5a
		}
	})
	gp.id = fileID(t, gp.bin)
	// Not run (the runtime needs its table): found at its path on the
	// host, as the file of a process that has ended.
	pd, locs := gp.batch(0)
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	p := newTestProcessorWith(t, testConfig(), metadatatest.NewSettings(tt))
	process(t, p, pd)
	for _, li := range locs {
		assert.Equal(t, []goLine{{"main.main", gp.file, 18, 0}}, goLines(pd, li))
	}
	metadatatest.AssertEqualProcessorSymbolizeFilesFailed(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "malformed_gopclntab"))},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorSymbolizeGoFramesKept(t, tt, []metricdata.DataPoint[int64]{
		{Value: 2 * int64(len(locs))},
	}, metricdatatest.IgnoreTimestamp())
}

// TestGoInProcessRoot: a stripped Go program running chrooted in a
// directory of its own (as in a container: the host has no file at its
// path) gets its inlined calls and start lines.
func TestGoInProcessRoot(t *testing.T) {
	gp := buildGoProgram(t, t.TempDir(), "goinl-root", "-s -w")
	root := t.TempDir()
	inRoot := "/nxv-goinl-root-" + gp.id[:12]
	_, err := os.Stat(inRoot)
	require.True(t, os.IsNotExist(err), "%s must not exist on the host", inRoot)
	copyFile(t, gp.bin, filepath.Join(root, inRoot), 0o755)
	removeFile(t, gp.bin)
	pid := startWaitingCommand(t, "chroot", root, inRoot, "wait")
	gp.bin = inRoot // the mapping's name and path as the process sees them
	pd, locs := gp.batch(pid)
	process(t, newTestProcessor(t), pd)
	checkGoInlined(t, gp, pd, locs)
}

// TestGoFramesMemoBounded: the frames kept per binary stay within
// maxGoMemo addresses, and what they add to the cache's count is what they
// hold.
func TestGoFramesMemoBounded(t *testing.T) {
	gp := buildGoProgram(t, t.TempDir(), "goinl-memo", "-s -w")
	ef, err := elf.Open(gp.bin)
	require.NoError(t, err)
	defer ef.Close()
	s := &symbols{tab: &symtab{}}
	require.True(t, s.addGopclntab(ef, loadLimits{indexBytes: 64 << 20, symtabOnly: true}))
	require.NotNil(t, s.gotab)
	total := 0
	for a := s.gotab.TextStart(); a < s.gotab.TextStart()+3*maxGoMemo; a++ {
		_, grown := s.goFrames(a, true)
		total += grown
		require.LessOrEqual(t, len(s.goMemo), maxGoMemo)
	}
	require.Equal(t, s.goMemoBytes, total, "the cache is told every byte added and dropped")
	fs, grown := s.goFrames(s.gotab.TextStart()+3*maxGoMemo-1, true)
	require.Zero(t, grown, "kept: nothing added")
	require.NotEmpty(t, fs)
}

// nativeBatch is a batch of the program's frames in main.mix's body as a
// producer that types Go frames native sends them: no line.
func (p goProgram) nativeBatch(pid int) (pprofile.Profiles, []int32) {
	b := newProfileBuilder()
	m := b.mapping(mappingSpec{name: filepath.Base(p.bin), start: p.start, end: p.end, offset: p.offset, htlhash: p.id})
	var locs []int32
	for _, pc := range p.mixPCs {
		locs = append(locs, b.location(m, pc, "native"))
	}
	b.process(pid, p.bin, locs)
	return b.pd, locs
}

// TestGoNativeFramesWhenGoTableDoesNotFit: a cgo binary (its C functions'
// long names fill its symbol table) whose Go table is read but does not
// fit in the cache with its symbol table keeps its symbol table whole: its
// frames typed native are named from it (main.main), not left unnamed;
// the table is counted too_large.
func TestGoNativeFramesWhenGoTableDoesNotFit(t *testing.T) {
	var src strings.Builder
	src.WriteString("package main\n\n/*\n")
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&src, "int nxv_%04d_%s(int a) { return a * %d; }\n", i, strings.Repeat("x", 2000), i)
	}
	src.WriteString("*/\nimport \"C\"\n\nfunc main() { println(\"nxv\") }\n")
	bin := buildCgoProgram(t, "gonofit", src.String())

	f, err := os.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	full, err := parseSymtab(f, bin)
	require.NoError(t, err)
	ef, err := elf.Open(bin)
	require.NoError(t, err)
	defer ef.Close()
	// Room for the section's reading and either table, not for both kept.
	s := &symbols{tab: full}
	require.True(t, s.addGopclntab(ef, loadLimits{indexBytes: 64 << 20}))
	room := max(int(ef.Section(".gopclntab").Size), full.size, s.gotab.Size()) + 1024
	require.Greater(t, s.tab.size+s.gotab.Size(), room, "the test's room must not hold both tables")

	main := nmSymbols(t, bin, false)["main.main"]
	require.NotZero(t, main.addr)
	off, start, end := textMapping(t, bin)
	b := newProfileBuilder()
	m := b.mapping(mappingSpec{name: filepath.Base(bin), start: start, end: end, offset: off, htlhash: fileID(t, bin)})
	locs := []int32{b.location(m, main.addr+1, "native"), b.location(m, main.addr+main.size-1, "")}
	b.process(0, bin, locs) // not run: its file on the host
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	p := newTestProcessorWith(t, testConfig(), metadatatest.NewSettings(tt))
	p.limits.indexBytes = room
	process(t, p, b.pd)
	assert.Equal(t, []frameName{{"main.main", "main.main", bin}, {"main.main", "main.main", bin}}, names(b.pd, locs...))
	metadatatest.AssertEqualProcessorSymbolizeFilesFailed(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "too_large"))},
	}, metricdatatest.IgnoreTimestamp())
}

// TestGoMemoNotKeptOutOfTheCache: a batch whose Go binary's symbols left
// the cache while it waited (another file's reading evicted them) names
// its frames without growing their memo, which the cache would not count;
// the cache's count stays the sum of what it keeps.
func TestGoMemoNotKeptOutOfTheCache(t *testing.T) {
	gp := buildGoProgram(t, t.TempDir(), "goinl-evicted", "-s -w")
	pid := startWaiting(t, gp.bin)
	p := newTestProcessor(t)
	pd, _ := gp.batch(pid)
	process(t, p, pd)
	p.mu.Lock()
	defer p.mu.Unlock()
	pd, locs := gp.batch(pid)
	b := newBatch(pd)
	cands := b.candidates()
	require.Len(t, cands, len(locs))
	p.resolve(b)
	m := &b.maps[b.locs.At(int(cands[0].loc)).MappingIndex()]
	require.NotNil(t, m.syms)
	require.NotNil(t, m.syms.gotab)
	memo, size := len(m.syms.goMemo), m.syms.size()
	// Evicted.
	p.cache.budget = 0
	p.cache.evict()
	p.cache.budget = testConfig().CacheSizeMiB << 20
	require.Zero(t, p.cache.used)
	named := map[string]int64{}
	text := m.syms.gotab.TextStart()
	for _, a := range []uint64{text, text + 1, text + 2} {
		loc := b.locs.At(int(cands[0].loc))
		loc.SetAddress(a)
		require.True(t, b.symbolizeGo(loc, m, p.cache, named))
		want := m.syms.gotab.Lookup(a, nil)
		got := goLines(pd, cands[0].loc)
		require.Len(t, got, len(want))
		assert.Equal(t, want[0].Function, got[0].name, "named all the same")
	}
	assert.Equal(t, memo, len(m.syms.goMemo), "no frames remembered")
	assert.Equal(t, size, m.syms.size())
	assert.Zero(t, p.cache.used)
}

// countingReader counts the bytes read in [from, to).
type countingReader struct {
	r        *os.File
	from, to int64
	n        int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	lo, hi := max(off, c.from), min(off+int64(n), c.to)
	if hi > lo {
		c.n += hi - lo
	}
	return n, err
}

// TestGoSymtabReadOnce: a Go binary whose moduledata cannot be found (its
// .go.module section garbled here) takes runtime.text and go:func.* from
// its .symtab, read once for its symbols and its Go table.
func TestGoSymtabReadOnce(t *testing.T) {
	gp := buildGoProgram(t, t.TempDir(), "goinl-symtab", "")
	overwriteSection(t, gp.bin, ".go.module", func(b []byte) { clear(b) })
	ef, err := elf.Open(gp.bin)
	require.NoError(t, err)
	st := ef.Section(".symtab")
	require.NotNil(t, st)
	from, to := int64(st.Offset), int64(st.Offset+st.Size)
	require.NoError(t, ef.Close())
	f, err := os.Open(gp.bin)
	require.NoError(t, err)
	defer f.Close()
	cr := &countingReader{r: f, from: from, to: to}
	s, err := readSymbols(cr, candidate{open: gp.bin, shown: gp.bin}, loadLimits{indexBytes: 64 << 20, symtabOnly: true})
	require.NoError(t, err)
	require.NotNil(t, s.gotab, "%v", s.failures)
	assert.Equal(t, to-from, cr.n, ".symtab read once")
	text := nmSymbols(t, gp.bin, false)["runtime.text"]
	assert.Equal(t, text.addr, s.gotab.TextStart())
}

// TestGoTextUnknownCounted: a stripped PIE linked externally by gcc whose
// moduledata cannot be found (its .go.module and relocations garbled
// here): its runtime.text is not .text's start, where C code comes first,
// so its table is refused, counted unknown_go_text, and its Go frames stay
// as the profiler named them.
func TestGoTextUnknownCounted(t *testing.T) {
	bin := buildCgoProgram(t, "goexternal", "package main\n\nfunc main() { println(\"nxv\") }\n", "-buildmode=pie", "-ldflags=-s -w -linkmode=external")
	for _, sec := range []string{".go.module", ".rela.dyn"} {
		overwriteSection(t, bin, sec, func(b []byte) { clear(b) })
	}
	off, start, end := textMapping(t, bin)
	b := newProfileBuilder()
	m := b.mapping(mappingSpec{name: filepath.Base(bin), start: start, end: end, offset: off, htlhash: fileID(t, bin)})
	li := b.location(m, start+0x400, "go")
	b.dict.LocationTable().At(int(li)).Lines().AppendEmpty().SetFunctionIndex(b.function("main.main", "", "goexternal/main.go"))
	b.process(0, bin, []int32{li}) // not run: its file on the host
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	p := newTestProcessorWith(t, testConfig(), metadatatest.NewSettings(tt))
	process(t, p, b.pd)
	assert.Equal(t, []goLine{{"main.main", "goexternal/main.go", 0, 0}}, goLines(b.pd, li))
	metadatatest.AssertEqualProcessorSymbolizeFilesFailed(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "unknown_go_text"))},
	}, metricdatatest.IgnoreTimestamp())
}

// buildCgoProgram builds a Go program of one file (src, importing no
// package but C: with cgo, what it uses of the standard library is
// compiled again; the less, the less that costs with an empty build
// cache) with gcc, CGO_ENABLED=1 and flags, and returns its path. gcc is a
// machine prerequisite (make machine-prereqs): without it the test fails.
func buildCgoProgram(t *testing.T, name, src string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatalf("gcc is needed to build a cgo program (make machine-prereqs): %v", err)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+name+"\n\ngo 1.26\n"), 0o644))
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", append(append([]string{"build", "-trimpath", "-o", bin}, flags...), ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}
