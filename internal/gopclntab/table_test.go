// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package gopclntab

import (
	"debug/elf"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

const bigLimit = 1 << 30

// openSelf reads the test binary's own table and returns it with the
// difference between the runtime's addresses and the file's.
func openSelf(t *testing.T) (*Table, uint64) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	ef, err := elf.Open(exe)
	require.NoError(t, err)
	defer ef.Close()
	tab, err := Open(ef, Limits{MaxBytes: bigLimit, SectionBytes: bigLimit})
	require.NoError(t, err)
	require.False(t, tab.NoInlineTrees)
	var bias uint64
	if ef.Type == elf.ET_DYN {
		syms, err := ef.Symbols()
		require.NoError(t, err)
		pc := reflect.ValueOf(takeStack).Pointer()
		name := runtime.FuncForPC(pc).Name()
		for _, s := range syms {
			if s.Name == name {
				bias = uint64(pc) - s.Value
			}
		}
		require.NotZero(t, bias, "no symbol %s", name)
	}
	return tab, bias
}

// The call chain the stack test walks: outerFrames calls midFrames,
// inlined, which calls leafFrames, inlined, which takes the stack.

//go:noinline
func takeStack() []uintptr {
	pcs := make([]uintptr, 32)
	return pcs[:runtime.Callers(2, pcs)]
}

func leafFrames() []uintptr {
	return takeStack()
}

func midFrames() []uintptr {
	return leafFrames()
}

//go:noinline
func outerFrames() []uintptr {
	return midFrames()
}

// funcLine returns the line of "func name(" in this file.
func funcLine(t *testing.T, name string) int64 {
	t.Helper()
	src, err := os.ReadFile("table_test.go")
	require.NoError(t, err)
	for i, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, "func "+name+"(") {
			return int64(i + 1)
		}
	}
	t.Fatalf("no func %s", name)
	return 0
}

// TestLookupMatchesRuntime compares the frames of a stack with inlined calls
// with the Go runtime's own (runtime.CallersFrames), start lines with the
// source's func lines.
func TestLookupMatchesRuntime(t *testing.T) {
	tab, bias := openSelf(t)
	pcs := outerFrames()
	require.Greater(t, len(pcs), 3)
	// runtime.Callers gives one PC per logical frame (an inlined call's
	// is a marker), and CallersFrames the logical frames: the frames at
	// each return address, followed by the next physical caller's.
	var want, got []Frame
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		want = append(want, Frame{Function: f.Function, File: f.File, Line: int64(f.Line)})
		if !more {
			break
		}
	}
	for i := 0; i < len(pcs); {
		fs := tab.Lookup(uint64(pcs[i])-1-bias, nil)
		require.NotEmpty(t, fs, "pc %#x", pcs[i])
		for _, g := range fs {
			got = append(got, Frame{Function: g.Function, File: g.File, Line: g.Line})
		}
		i += len(fs)
	}
	require.Equal(t, want, got)
	got = tab.Lookup(uint64(pcs[0])-1-bias, nil)
	pkg := "github.com/nexovue/otelcol-nexovue/internal/gopclntab."
	require.Len(t, got, 3)
	for i, name := range []string{"leafFrames", "midFrames", "outerFrames"} {
		require.Equal(t, pkg+name, got[i].Function)
		require.Equal(t, funcLine(t, name), got[i].StartLine, name)
	}
}

// TestLookupSweepMatchesFuncForPC looks up every address of this package's
// and the runtime's functions and compares the innermost frame with
// runtime.FuncForPC (the innermost function at an address) and its
// FileLine.
func TestLookupSweepMatchesFuncForPC(t *testing.T) {
	tab, bias := openSelf(t)
	checked, inlined := 0, 0
	for i := 0; i < tab.Funcs(); i++ {
		name, entry, end := tab.funcRange(i)
		if !strings.HasPrefix(name, "github.com/nexovue/otelcol-nexovue/internal/gopclntab.") && !strings.HasPrefix(name, "runtime.mallocgc") && !strings.HasPrefix(name, "fmt.") {
			continue
		}
		for a := entry; a < end; a++ {
			pc := uintptr(a + bias)
			rf := runtime.FuncForPC(pc)
			fs := tab.Lookup(a, nil)
			require.NotNil(t, rf, "%s+%#x", name, a-entry)
			require.NotEmpty(t, fs, "%s+%#x", name, a-entry)
			file, line := rf.FileLine(pc)
			if file == "?" {
				file = "" // the runtime's unknown file
			}
			require.Equal(t, rf.Name(), fs[0].Function, "%s+%#x", name, a-entry)
			require.Equal(t, file, fs[0].File, "%s+%#x", name, a-entry)
			require.Equal(t, int64(line), fs[0].Line, "%s+%#x", name, a-entry)
			require.Equal(t, name, fs[len(fs)-1].SystemName, "the physical function last")
			if len(fs) > 1 {
				inlined++
			}
			checked++
		}
	}
	require.Greater(t, checked, 20000)
	require.Greater(t, inlined, 1000)
}

// builds are builds of testdata/inl, made once (and removed by TestMain).
type builds struct {
	once sync.Once
	dir  string
	err  error
}

var inlBuilds, extBuilds builds

// get builds testdata/inl, each variant (name: go build's flags) with
// CGO_ENABLED=cgo, the first time, and returns their directory.
func (b *builds) get(t *testing.T, cgo string, variants map[string][]string) string {
	t.Helper()
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "gopclntab")
		if b.err != nil {
			return
		}
		build := func(name string) error {
			flags := variants[name]
			cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", filepath.Join(b.dir, name), ".")...)
			cmd.Dir = "testdata/inl"
			cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo, "GOFLAGS=-trimpath")
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("go build %q: %v: %s", flags, err, out)
			}
			return nil
		}
		// The first alone (with an empty build cache it compiles the
		// standard library), the others at once: their links (gcc's,
		// for cgo) are the most of them.
		names := slices.Sorted(maps.Keys(variants))
		if b.err = build(names[0]); b.err != nil {
			return
		}
		errs := make(chan error, len(names))
		for _, name := range names[1:] {
			go func() { errs <- build(name) }()
		}
		for range names[1:] {
			b.err = errors.Join(b.err, <-errs)
		}
	})
	require.NoError(t, b.err)
	return b.dir
}

// buildInl builds testdata/inl plain, stripped (-s -w) and as PIE, once.
func buildInl(t *testing.T) string {
	return inlBuilds.get(t, "0", map[string][]string{
		"plain":        nil,
		"stripped":     {"-ldflags=-s -w"},
		"pie-stripped": {"-buildmode=pie", "-ldflags=-s -w"},
		"pie":          {"-buildmode=pie"},
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, b := range []*builds{&inlBuilds, &extBuilds} {
		if b.dir != "" {
			os.RemoveAll(b.dir)
		}
	}
	os.Exit(code)
}

// mainFrames returns the frames of every address of main.main holding an
// inlined call to main.mix, by the file's table.
func mainFrames(t *testing.T, path string) (map[uint64][]Frame, *Table) {
	t.Helper()
	ef, err := elf.Open(path)
	require.NoError(t, err)
	defer ef.Close()
	tab, err := Open(ef, Limits{MaxBytes: bigLimit, SectionBytes: bigLimit})
	require.NoError(t, err, path)
	require.False(t, tab.NoInlineTrees, path)
	// main.main's range, from the table itself.
	out := map[uint64][]Frame{}
	entry, end, ok := tab.funcNamed("main.main")
	require.True(t, ok, path)
	for a := entry; a < end; a++ {
		fs := tab.Lookup(a, nil)
		if len(fs) == 3 && fs[0].Function == "main.mix" {
			out[a] = fs
		}
	}
	return out, tab
}

// TestStrippedAndPIE reads a program built plain, stripped (-s -w, no
// .symtab) and as PIE: main.main's addresses inside the inlined mix show
// main.mix (line of its body, its func line as start line), then main.step
// at the call's line, then main.main at its call's line; the stripped
// build gives the same frames at the same addresses as the plain one.
func TestStrippedAndPIE(t *testing.T) {
	dir := buildInl(t)
	plain, _ := mainFrames(t, filepath.Join(dir, "plain"))
	require.NotEmpty(t, plain)
	for _, fs := range plain {
		require.Equal(t, []Frame{
			{Function: "main.mix", SystemName: "main.mix", File: "inl/main.go", Line: 13, StartLine: 12},
			{Function: "main.step", SystemName: "main.step", File: "inl/main.go", Line: 17, StartLine: 16},
			{Function: "main.main", SystemName: "main.main", File: "inl/main.go", Line: 27, StartLine: 20},
		}, fs)
	}
	stripped, _ := mainFrames(t, filepath.Join(dir, "stripped"))
	require.Equal(t, plain, stripped)
	for _, name := range []string{"pie", "pie-stripped"} {
		pie, _ := mainFrames(t, filepath.Join(dir, name))
		require.NotEmpty(t, pie, name)
		for _, fs := range pie {
			require.Equal(t, plain[firstKey(plain)], fs, name)
		}
	}
}

func firstKey(m map[uint64][]Frame) uint64 {
	for k := range m {
		return k
	}
	return 0
}

// TestNotGoAndLimits: a file without a Go table, and limits smaller than a
// table.
func TestNotGoAndLimits(t *testing.T) {
	_, err := Parse([]byte("\x7fELF not a table at all"), Header{}, Limits{MaxBytes: bigLimit, SectionBytes: bigLimit})
	require.ErrorIs(t, err, ErrNotGo)
	old := append([]byte{0xf0, 0xff, 0xff, 0xff}, make([]byte, 60)...)
	_, err = Parse(old, Header{}, Limits{MaxBytes: bigLimit, SectionBytes: bigLimit})
	require.ErrorIs(t, err, ErrUnsupported)

	dir := buildInl(t)
	ef, err := elf.Open(filepath.Join(dir, "plain"))
	require.NoError(t, err)
	defer ef.Close()
	_, err = Open(ef, Limits{MaxBytes: bigLimit, SectionBytes: 1 << 16})
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = Open(ef, Limits{MaxBytes: 1 << 16, SectionBytes: bigLimit})
	require.ErrorIs(t, err, ErrTooLarge)
	sec := ef.Section(".gopclntab")
	tab, err := Open(ef, Limits{MaxBytes: bigLimit, SectionBytes: bigLimit})
	require.NoError(t, err)
	require.NotEmpty(t, tab.inl)
	// What is kept: less than the section (the _func records' stack-map
	// tables are not).
	require.Less(t, tab.Size(), int(sec.Size))
	_, err = Open(ef, Limits{MaxBytes: tab.Size(), SectionBytes: bigLimit})
	require.NoError(t, err)
	// Room for the tables, not for the inline trees.
	_, err = Open(ef, Limits{MaxBytes: tab.Size() - 256 - len(tab.inl)/2, SectionBytes: bigLimit})
	require.ErrorIs(t, err, ErrTooLarge)

	// A C program's ELF file (the test machine's /bin/true): not Go.
	cf, err := elf.Open("/bin/true")
	require.NoError(t, err)
	defer cf.Close()
	_, err = Open(cf, Limits{MaxBytes: bigLimit, SectionBytes: bigLimit})
	require.ErrorIs(t, err, ErrNotGo)
}

// funcNamed returns the [entry, end) addresses of the function of that name.
func (t *Table) funcNamed(name string) (uint64, uint64, bool) {
	for i := 0; i < t.Funcs(); i++ {
		if n, entry, end := t.funcRange(i); n == name {
			return entry, end, true
		}
	}
	return 0, 0, false
}

// buildExternal builds testdata/inl as a PIE linked by gcc
// (-linkmode=external: .text begins with C start-up code, runtime.text
// after it), with GNU ld (which writes the dynamic relocations' addends in
// their places too) and with lld (which leaves them 0), each stripped and
// not, once. gcc and lld are machine prerequisites
// (internal/buildtools/prereqs.sh): without them the test fails.
func buildExternal(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"gcc", "ld.lld"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to link a Go binary externally (make machine-prereqs; Debian: apt-get install gcc lld): %v", tool, err)
		}
	}
	return extBuilds.get(t, "1", map[string][]string{
		"bfd":          {"-buildmode=pie", "-ldflags=-linkmode=external"},
		"bfd-stripped": {"-buildmode=pie", "-ldflags=-s -w -linkmode=external"},
		"lld":          {"-buildmode=pie", "-ldflags=-linkmode=external -extldflags=-fuse-ld=lld"},
		"lld-stripped": {"-buildmode=pie", "-ldflags=-s -w -linkmode=external -extldflags=-fuse-ld=lld"},
	})
}

// symbolValue returns the value of a .symtab symbol of the file at path.
func symbolValue(t *testing.T, path, name string) (uint64, uint64) {
	t.Helper()
	ef, err := elf.Open(path)
	require.NoError(t, err)
	defer ef.Close()
	syms, err := ef.Symbols()
	require.NoError(t, err)
	for _, s := range syms {
		if s.Name == name {
			return s.Value, s.Size
		}
	}
	t.Fatalf("%s: no symbol %s", path, name)
	return 0, 0
}

// TestExternalLinkingPIE: a PIE linked externally by gcc, stripped (no
// .symtab), has its runtime.text found (the moduledata's, through the
// dynamic relocations when lld left their places 0), not .text's start,
// where C code comes first: at every address of main.main by the
// unstripped twin's .symtab, the stripped file's table gives main.main
// (with mix and step inlined where they are), as the twin's does.
func TestExternalLinkingPIE(t *testing.T) {
	dir := buildExternal(t)
	for _, ld := range []string{"bfd", "lld"} {
		twin := filepath.Join(dir, ld)
		textSym, _ := symbolValue(t, twin, "runtime.text")
		mainAddr, mainSize := symbolValue(t, twin, "main.main")
		ef, err := elf.Open(filepath.Join(dir, ld+"-stripped"))
		require.NoError(t, err)
		defer ef.Close()
		require.Nil(t, ef.Section(".symtab"), "stripped")
		require.Less(t, ef.Section(".text").Addr, textSym, "%s: C code before Go's in .text", ld)
		tab, err := Open(ef, Limits{MaxBytes: bigLimit, SectionBytes: bigLimit})
		require.NoError(t, err, ld)
		require.Equal(t, textSym, tab.TextStart(), ld)
		twinTab, _ := mainFrames(t, twin)
		inlined := 0
		for a := mainAddr; a < mainAddr+mainSize; a++ {
			fs := tab.Lookup(a, nil)
			require.NotEmpty(t, fs, "%s %#x", ld, a)
			require.Equal(t, "main.main", fs[len(fs)-1].Function, "%s %#x", ld, a)
			if len(fs) == 3 {
				require.Equal(t, twinTab[a], fs, "%s %#x", ld, a)
				inlined++
			}
		}
		require.Equal(t, len(twinTab), inlined, ld)
		require.NotZero(t, inlined, ld)
	}
}

// TestNoTextStartRefused: a stripped externally linked PIE whose
// moduledata cannot be found (its relocations garbled here) has no
// runtime.text but .text's start, where C code comes first: refused
// (ErrNoTextStart), not read with every frame shifted.
func TestNoTextStartRefused(t *testing.T) {
	dir := buildExternal(t)
	bin := filepath.Join(t.TempDir(), "lld-garbled")
	b, err := os.ReadFile(filepath.Join(dir, "lld-stripped"))
	require.NoError(t, err)
	ef, err := elf.Open(filepath.Join(dir, "lld-stripped"))
	require.NoError(t, err)
	rela := ef.Section(".rela.dyn")
	require.NotNil(t, rela)
	ef.Close()
	clear(b[rela.Offset : rela.Offset+rela.Size])
	require.NoError(t, os.WriteFile(bin, b, 0o644))
	ef, err = elf.Open(bin)
	require.NoError(t, err)
	defer ef.Close()
	_, err = Open(ef, Limits{MaxBytes: bigLimit, SectionBytes: bigLimit})
	require.ErrorIs(t, err, ErrNoTextStart)
}
