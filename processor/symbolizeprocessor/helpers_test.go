// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"bufio"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/ebpf-profiler/libpf"

	"github.com/nexovue/otelcol-nexovue/internal/profiledict"
)

// compile builds a test program from testdata/src with gcc (or g++ for
// .cpp) into dir and returns its path. Without -g (pass it in args): its
// frames are named from its symbol table.
func compile(tb testing.TB, dir, src, out string, args ...string) string {
	tb.Helper()
	cc := "gcc"
	if strings.HasSuffix(src, ".cpp") {
		cc = "g++"
	}
	bin := filepath.Join(dir, out)
	srcPath, err := filepath.Abs(filepath.Join("testdata", "src", src))
	require.NoError(tb, err)
	cmd := exec.Command(cc, append(append([]string{"-O1", "-fno-omit-frame-pointer", "-Wl,--build-id"}, args...), "-o", bin, srcPath)...)
	outb, err := cmd.CombinedOutput()
	require.NoError(tb, err, "%s (gcc and g++ are needed: run `make prereqs`): %s", cc, outb)
	return bin
}

// stripped returns a copy of bin without .symtab (strip --strip-all).
func stripped(tb testing.TB, bin string) string {
	tb.Helper()
	out := bin + ".stripped"
	b, err := exec.Command("strip", "--strip-all", "-o", out, bin).CombinedOutput()
	require.NoError(tb, err, "strip: %s", b)
	return out
}

// nmSymbol is a defined symbol as binutils' nm -S lists it.
type nmSymbol struct {
	addr, size uint64
	typ        string
}

// nmSymbols returns the defined symbols of a file by raw name (.dynsym with
// dynamic).
func nmSymbols(tb testing.TB, bin string, dynamic bool) map[string]nmSymbol {
	tb.Helper()
	args := []string{"-S", "--defined-only"}
	if dynamic {
		args = append(args, "-D")
	}
	out, err := exec.Command("nm", append(args, bin)...).Output()
	require.NoError(tb, err)
	syms := map[string]nmSymbol{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		var s nmSymbol
		switch len(f) {
		case 3: // no size
			s.typ = f[1]
		case 4:
			s.typ = f[2]
			s.size, err = strconv.ParseUint(f[1], 16, 64)
			require.NoError(tb, err)
		default:
			continue
		}
		s.addr, err = strconv.ParseUint(f[0], 16, 64)
		require.NoError(tb, err)
		syms[f[len(f)-1]] = s
	}
	return syms
}

// gnuID returns the GNU build id of a file.
func gnuID(tb testing.TB, path string) string {
	tb.Helper()
	f, err := os.Open(path)
	require.NoError(tb, err)
	defer f.Close()
	id, err := gnuBuildID(f)
	require.NoError(tb, err)
	require.Len(tb, id, 40, "gcc's --build-id is a SHA-1")
	return id
}

// fileID is the eBPF profiler's own file id of a file (the profiler's code,
// not this package's, so that the two are checked against each other).
func fileID(tb testing.TB, path string) string {
	tb.Helper()
	id, err := libpf.FileIDFromExecutableFile(path)
	require.NoError(tb, err)
	return id.StringNoQuotes()
}

// textMapping returns, the way the eBPF profiler sends a mapping of a
// file's executable segment, its file offset (page-aligned, as the kernel
// maps it) and its start and end in the file's virtual address space.
func textMapping(tb testing.TB, path string) (fileOffset, start, end uint64) {
	tb.Helper()
	f, err := elf.Open(path)
	require.NoError(tb, err)
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			fileOffset = p.Off &^ 0xfff
			start = p.Vaddr - (p.Off - fileOffset)
			return fileOffset, start, p.Vaddr + p.Memsz
		}
	}
	tb.Fatalf("%s: no executable segment", path)
	return 0, 0, 0
}

// startWaiting starts a test program with "wait" and returns its pid once
// it has printed ready (its mappings are then in /proc/<pid>/maps).
func startWaiting(tb testing.TB, bin string) int {
	tb.Helper()
	return startWaitingCommand(tb, bin, "wait")
}

// startWaitingCommand is startWaiting for a command line that runs a test
// program with "wait" (through chroot, for one).
func startWaitingCommand(tb testing.TB, name string, args ...string) int {
	tb.Helper()
	cmd := exec.Command(name, args...)
	out, err := cmd.StdoutPipe()
	require.NoError(tb, err)
	require.NoError(tb, cmd.Start())
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = io.ErrUnexpectedEOF
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		require.NoError(tb, err)
	case <-time.After(30 * time.Second):
		tb.Fatal("the test program did not start")
	}
	return cmd.Process.Pid
}

// runningNxv builds the C test program with symbols, starts it, and returns
// it with its symbols and a builder holding its mapping as the eBPF profiler
// sends it (base name, file id, GNU build id, the file's virtual addresses).
func runningNxv(t *testing.T) (bin string, pid int, syms map[string]nmSymbol, b *profileBuilder, m int32) {
	t.Helper()
	bin = compile(t, t.TempDir(), "nxv.c", "nxv-sym")
	pid = startWaiting(t, bin)
	syms = nmSymbols(t, bin, false)
	off, start, end := textMapping(t, bin)
	b = newProfileBuilder()
	m = b.mapping(mappingSpec{name: "nxv-sym", start: start, end: end, offset: off, htlhash: fileID(t, bin), gnuBuildID: gnuID(t, bin)})
	return bin, pid, syms, b, m
}

// profileBuilder builds an eBPF-like batch: one resource per process, one
// profile, one sample per stack.
type profileBuilder struct {
	pd   pprofile.Profiles
	dict pprofile.ProfilesDictionary
	strs *profiledict.Strings
}

func newProfileBuilder() *profileBuilder {
	pd := pprofile.NewProfiles()
	d := pd.Dictionary()
	profiledict.AppendZeroEntries(d)
	return &profileBuilder{pd: pd, dict: d, strs: profiledict.NewStrings(d)}
}

func (b *profileBuilder) str(s string) int32 { return b.strs.Index(s) }

func (b *profileBuilder) attr(key, value string) int32 {
	a := b.dict.AttributeTable().AppendEmpty()
	a.SetKeyStrindex(b.str(key))
	a.Value().SetStr(value)
	return int32(b.dict.AttributeTable().Len() - 1)
}

type mappingSpec struct {
	name                string
	start, end, offset  uint64
	htlhash, gnuBuildID string
}

func (b *profileBuilder) mapping(m mappingSpec) int32 {
	mp := b.dict.MappingTable().AppendEmpty()
	mp.SetFilenameStrindex(b.str(m.name))
	mp.SetMemoryStart(m.start)
	mp.SetMemoryLimit(m.end)
	mp.SetFileOffset(m.offset)
	if m.gnuBuildID != "" {
		mp.AttributeIndices().Append(b.attr("process.executable.build_id.gnu", m.gnuBuildID))
	}
	if m.htlhash != "" {
		mp.AttributeIndices().Append(b.attr("process.executable.build_id.htlhash", m.htlhash))
	}
	return int32(b.dict.MappingTable().Len() - 1)
}

// location adds a location of a frame type ("native" as the profiler sends
// native frames).
func (b *profileBuilder) location(mapping int32, addr uint64, frameType string) int32 {
	loc := b.dict.LocationTable().AppendEmpty()
	loc.SetMappingIndex(mapping)
	loc.SetAddress(addr)
	if frameType != "" {
		loc.AttributeIndices().Append(b.attr("profile.frame.type", frameType))
	}
	return int32(b.dict.LocationTable().Len() - 1)
}

// function adds a function (name, system name, filename).
func (b *profileBuilder) function(name, system, file string) int32 {
	f := b.dict.FunctionTable().AppendEmpty()
	f.SetNameStrindex(b.str(name))
	f.SetSystemNameStrindex(b.str(system))
	f.SetFilenameStrindex(b.str(file))
	return int32(b.dict.FunctionTable().Len() - 1)
}

// process adds a resource with one sample per stack.
func (b *profileBuilder) process(pid int, exe string, stacks ...[]int32) {
	rp := b.pd.ResourceProfiles().AppendEmpty()
	if pid != 0 {
		rp.Resource().Attributes().PutInt("process.pid", int64(pid))
	}
	if exe != "" {
		rp.Resource().Attributes().PutStr("process.executable.path", exe)
	}
	prof := rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
	for _, locs := range stacks {
		st := b.dict.StackTable().AppendEmpty()
		st.LocationIndices().FromRaw(locs)
		s := prof.Samples().AppendEmpty()
		s.SetStackIndex(int32(b.dict.StackTable().Len() - 1))
		s.TimestampsUnixNano().Append(1)
	}
}

// frameName is what a location is named by after the processor: its
// function's name, system name and filename, or "" when it has no line.
type frameName struct {
	name, system, file string
}

func names(pd pprofile.Profiles, locs ...int32) []frameName {
	d := pd.Dictionary()
	str := func(i int32) string { return d.StringTable().At(int(i)) }
	out := make([]frameName, 0, len(locs))
	for _, li := range locs {
		loc := d.LocationTable().At(int(li))
		if loc.Lines().Len() == 0 {
			out = append(out, frameName{})
			continue
		}
		f := d.FunctionTable().At(int(loc.Lines().At(0).FunctionIndex()))
		out = append(out, frameName{str(f.NameStrindex()), str(f.SystemNameStrindex()), str(f.FilenameStrindex())})
	}
	return out
}

func removeFile(tb testing.TB, path string) {
	tb.Helper()
	require.NoError(tb, os.Remove(path))
}
