// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap/zaptest"

	"github.com/nexovue/otelcol-nexovue/internal/dwarftest"
	"github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/metadata"
	"github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/metadatatest"
)

// frames returns a location's lines as expected frames (the function's
// name, the base name of its file, the line), and the system names.
func frames(pd pprofile.Profiles, li int32) (out []dwarftest.Frame, system []string) {
	d := pd.Dictionary()
	str := func(i int32) string { return d.StringTable().At(int(i)) }
	for _, ln := range d.LocationTable().At(int(li)).Lines().All() {
		f := d.FunctionTable().At(int(ln.FunctionIndex()))
		out = append(out, dwarftest.Frame{Name: str(f.NameStrindex()), File: dwarftest.BaseName(str(f.FilenameStrindex())), Line: ln.Line()})
		system = append(system, str(f.SystemNameStrindex()))
	}
	return out, system
}

// inlProgram is inl.c built with -g -O2 (its hot function inlined into its
// caller), stripped, its DWARF kept in a separate debug file.
type inlProgram struct{ dwarftest.Program }

// buildInlProgram builds inl.c into dir; with link, the stripped program
// gets a .gnu_debuglink to its debug file (next to it); extra are gcc's
// further flags.
func buildInlProgram(t *testing.T, dir string, link bool, extra ...string) inlProgram {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("testdata", "src", "inl.c"))
	require.NoError(t, err)
	return inlProgram{dwarftest.Build(t, src, dir, "inl", link, extra...)}
}

// batch is one sample per address in the stripped program, of a process
// (pid 0: none) whose executable it is.
func (p inlProgram) batch(t *testing.T, pid int, addrs []uint64) (pprofile.Profiles, []int32) {
	t.Helper()
	off, start, end := textMapping(t, p.Bin)
	b := newProfileBuilder()
	m := b.mapping(mappingSpec{name: filepath.Base(p.Bin), start: start, end: end, offset: off, htlhash: fileID(t, p.Bin)})
	var locs []int32
	for _, a := range addrs {
		locs = append(locs, b.location(m, a, "native"))
	}
	b.process(pid, p.Bin, locs)
	return b.pd, locs
}

// checkInlined asserts that every location at an address inside the
// inlined hot function has the frames readelf gives (the debug file's
// DWARF): nxv_inl_hot at the address's line, then nxv_inl_caller at the
// call's line.
func checkInlined(t *testing.T, p inlProgram, pd pprofile.Profiles, locs []int32, addrs []uint64) {
	t.Helper()
	for i, a := range addrs {
		want := dwarftest.Frames(t, p.Oracle, a)
		require.Len(t, want, 2, "readelf: %#x is in nxv_inl_hot inlined into nxv_inl_caller", a)
		require.Equal(t, "nxv_inl_hot", want[0].Name)
		require.Equal(t, "nxv_inl_caller", want[1].Name)
		got, system := frames(pd, locs[i])
		assert.Equal(t, want, got, "frames at %#x, innermost first", a)
		assert.Equal(t, []string{"nxv_inl_hot", "nxv_inl_caller"}, system)
	}
	t.Logf("%d addresses in the inlined function, e.g. %#x: %v", len(addrs), addrs[0], dwarftest.Frames(t, p.Oracle, addrs[0]))
}

// TestDWARFInlinedFromDebugLink: a stripped -g -O2 program whose DWARF is
// in a debug file its .gnu_debuglink names (next to it, found in the
// running process's root): its frames inside the inlined hot function get
// the inlined function then its caller, with the lines readelf gives; the
// frames are counted as named from DWARF lines.
func TestDWARFInlinedFromDebugLink(t *testing.T) {
	p := buildInlProgram(t, t.TempDir(), true)
	pid := startWaiting(t, p.Bin)
	addrs := dwarftest.InlinedAddrs(t, p.Oracle, "nxv_inl_hot")
	pd, locs := p.batch(t, pid, addrs)

	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	proc := newTestProcessorWith(t, testConfig(), metadatatest.NewSettings(tt))
	process(t, proc, pd)

	checkInlined(t, p, pd, locs, addrs)
	metadatatest.AssertEqualProcessorSymbolizeFramesNamed(t, tt, []metricdata.DataPoint[int64]{
		{Value: int64(len(addrs)), Attributes: attribute.NewSet(attribute.String("source", "dwarf_lines"))},
	}, metricdatatest.IgnoreTimestamp())
	// The first batch (process's copy) went out before the file was read.
	metadatatest.AssertEqualProcessorSymbolizeFramesUnsymbolized(t, tt, []metricdata.DataPoint[int64]{
		{Value: int64(len(addrs))},
	}, metricdatatest.IgnoreTimestamp())
}

// TestDWARFInlinedByBuildID: the same stripped program without a debug
// link, its debug file only in a debug_dirs directory under its build id;
// a debug_dirs entry earlier in the list holding another program's debug
// file under that build id's path is refused (its build id differs).
func TestDWARFInlinedByBuildID(t *testing.T) {
	dir := t.TempDir()
	p := buildInlProgram(t, dir, false)
	id := gnuID(t, p.Bin)
	good := filepath.Join(dir, "debug-good")
	bad := filepath.Join(dir, "debug-bad")
	place := func(root, file string) {
		dst := filepath.Join(root, ".build-id", id[:2], id[2:]+".debug")
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, data, 0o644))
	}
	place(good, p.Debug)
	other := buildInlProgram(t, t.TempDir(), false, "-DNXV_OTHER=1") // another build id
	require.NotEqual(t, id, gnuID(t, other.Bin))
	place(bad, other.Debug)
	addrs := dwarftest.InlinedAddrs(t, p.Oracle, "nxv_inl_hot")
	pd, locs := p.batch(t, 0, addrs)

	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	cfg := testConfig()
	cfg.DebugDirs = []string{bad, good}
	process(t, newTestProcessorWith(t, cfg, metadatatest.NewSettings(tt)), pd)

	checkInlined(t, p, pd, locs, addrs)
	metadatatest.AssertEqualProcessorSymbolizeFilesFailed(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "mismatch"))},
	}, metricdatatest.IgnoreTimestamp())
}

// TestDWARFDebugLinkCRC: a program without a build id is matched to its
// debug file by the CRC its .gnu_debuglink states; a file of that name
// with another content is not used.
func TestDWARFDebugLinkCRC(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt bool
	}{{"same CRC", false}, {"other CRC", true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := buildInlProgram(t, t.TempDir(), true, "-Wl,--build-id=none")
			if tc.corrupt {
				f, err := os.OpenFile(p.Debug, os.O_WRONLY|os.O_APPEND, 0)
				require.NoError(t, err)
				_, err = f.Write([]byte("x"))
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}
			addrs := dwarftest.InlinedAddrs(t, p.Oracle, "nxv_inl_hot")
			off, start, end := textMapping(t, p.Bin)
			b := newProfileBuilder()
			m := b.mapping(mappingSpec{name: filepath.Base(p.Bin), start: start, end: end, offset: off, htlhash: fileID(t, p.Bin)})
			loc := b.location(m, addrs[0], "native")
			b.process(0, p.Bin, []int32{loc})
			process(t, newTestProcessor(t), b.pd)
			got, _ := frames(b.pd, loc)
			if tc.corrupt {
				assert.Empty(t, got, "a stripped program without its debug file: no name")
				return
			}
			assert.Equal(t, dwarftest.Frames(t, p.Oracle, addrs[0]), got)
		})
	}
}

// TestDWARFInMappedFile: a program that keeps its DWARF (not stripped)
// is read alone; main's frame is named and lined too.
func TestDWARFInMappedFile(t *testing.T) {
	p := buildInlProgram(t, t.TempDir(), false)
	p.Bin = p.Full
	addrs := dwarftest.InlinedAddrs(t, p.Oracle, "nxv_inl_hot")
	mainAddr := nmSymbols(t, p.Full, false)["main"].addr
	pd, locs := p.batch(t, 0, append(addrs, mainAddr))
	process(t, newTestProcessor(t), pd)
	checkInlined(t, p, pd, locs[:len(addrs)], addrs)
	got, _ := frames(pd, locs[len(addrs)])
	assert.Equal(t, dwarftest.Frames(t, p.Oracle, mainAddr), got)
}

// TestDWARFMalformed: a debug file whose DWARF is cut short or garbled, or
// whose compressed section claims a decompressed size past the memory
// allowed (a decompression bomb), is counted as failed, and the frames are
// named from its symbol table as before, without lines.
func TestDWARFMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		damage       func(t *testing.T, debug string)
	}{
		{"garbled .debug_info", "malformed_dwarf", func(t *testing.T, debug string) {
			overwriteSection(t, debug, ".debug_info", func(b []byte) {
				for i := 4; i < len(b); i++ {
					b[i] = 0xff
				}
			})
		}},
		{"cut .debug_line", "malformed_dwarf", func(t *testing.T, debug string) {
			overwriteSection(t, debug, ".debug_line", func(b []byte) {
				binary.LittleEndian.PutUint32(b, uint32(len(b))*4) // its unit runs past the section
			})
		}},
		{"decompression bomb", "too_large", func(t *testing.T, debug string) {
			dwarftest.Run(t, "objcopy", "--compress-debug-sections=zlib", debug)
			overwriteSection(t, debug, ".debug_info", func(b []byte) {
				// Elf64_Chdr: type, reserved, size, align.
				binary.LittleEndian.PutUint64(b[8:], 1<<40)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := buildInlProgram(t, t.TempDir(), true)
			addrs := dwarftest.InlinedAddrs(t, p.Oracle, "nxv_inl_hot")
			tc.damage(t, p.Debug)
			pd, locs := p.batch(t, 0, addrs[:1])
			tt := componenttest.NewTelemetry()
			t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
			process(t, newTestProcessorWith(t, testConfig(), metadatatest.NewSettings(tt)), pd)
			got, _ := frames(pd, locs[0])
			assert.Equal(t, []dwarftest.Frame{{Name: "nxv_inl_caller", File: "inl"}}, got, "named from the debug file's symbol table")
			metadatatest.AssertEqualProcessorSymbolizeFilesFailed(t, tt, []metricdata.DataPoint[int64]{
				{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", tc.reason))},
			}, metricdatatest.IgnoreTimestamp())
		})
	}
}

// overwriteSection changes a section's bytes in place in a file.
func overwriteSection(t *testing.T, file, name string, change func([]byte)) {
	t.Helper()
	ef, err := elf.Open(file)
	require.NoError(t, err)
	s := ef.Section(name)
	require.NotNil(t, s, "%s has no %s", file, name)
	off, size := int64(s.Offset), int64(s.FileSize)
	require.NoError(t, ef.Close())
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, size)
	_, err = f.ReadAt(b, off)
	require.NoError(t, err)
	change(b)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
}

// TestDWARFLibc: a frame in a static function of the host's libc (qsort's
// merge sort, only in libc6-dbg's debug file, not in libc's .dynsym) is
// named from the debug file found by build id under /usr/lib/debug, with
// the file and line readelf gives for its address.
func TestDWARFLibc(t *testing.T) {
	lp := buildLeafProgram(t)
	pid := startWaiting(t, lp.bin)
	libc := mappedLibc(t, pid)
	id := gnuID(t, libc)
	debug := filepath.Join("/usr/lib/debug/.build-id", id[:2], id[2:]+".debug")
	_, err := os.Stat(debug)
	require.NoError(t, err, "libc's debug file (Debian's libc6-dbg: run `make prereqs`)")
	syms := nmSymbols(t, debug, false)
	var static string
	for name := range syms {
		if strings.HasPrefix(name, "msort_with_tmp") {
			static = name
		}
	}
	require.NotEmpty(t, static, "msort_with_tmp in %s", debug)
	_, inDynsym := nmSymbols(t, libc, true)[static]
	require.False(t, inDynsym, "%s is static", static)
	addr := syms[static].addr + 16

	off, start, end := textMapping(t, libc)
	b := newProfileBuilder()
	m := b.mapping(mappingSpec{name: filepath.Base(libc), start: start, end: end, offset: off, htlhash: fileID(t, libc), gnuBuildID: id})
	loc := b.location(m, addr, "native")
	b.process(pid, lp.bin, []int32{loc})
	process(t, newTestProcessor(t), b.pd)

	got, _ := frames(b.pd, loc)
	require.NotEmpty(t, got, "libc frame at %#x named", addr)
	t.Logf("%s+16 (%#x): %v", static, addr, got)
	row := dwarftest.LineAt(t, dwarftest.Lines(t, debug), addr)
	assert.Equal(t, dwarftest.Frame{Name: got[0].Name, File: row.File, Line: row.Line}, got[0], "innermost frame at readelf's line")
	assert.Equal(t, "msort_with_tmp", got[len(got)-1].Name, "the real function last")
}

// TestDWARFInProcessRoot: a static program running chrooted in a directory
// of its own, whose debug file is under its build id in that root's
// /usr/lib/debug, through an absolute link that only resolves inside the
// root (the host has no such path): the debug file is found in the
// process's root, as a container's would be, and its frames get the
// inlined function and its caller.
func TestDWARFInProcessRoot(t *testing.T) {
	p := buildInlProgram(t, t.TempDir(), false, "-static")
	root := t.TempDir()
	id := gnuID(t, p.Bin)
	store := "/nxv-debug-store-" + id[:12] // absent on the host
	_, err := os.Stat(store)
	require.True(t, os.IsNotExist(err), "%s must not exist on the host", store)
	copyFile(t, p.Bin, filepath.Join(root, "nxv-inl"), 0o755)
	copyFile(t, p.Debug, filepath.Join(root, store, "inl.debug"), 0o644)
	link := filepath.Join(root, "usr", "lib", "debug", ".build-id", id[:2], id[2:]+".debug")
	require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
	require.NoError(t, os.Symlink(store+"/inl.debug", link))
	pid := startWaitingCommand(t, "chroot", root, "/nxv-inl", "wait")

	addrs := dwarftest.InlinedAddrs(t, p.Oracle, "nxv_inl_hot")
	off, start, end := textMapping(t, p.Bin)
	b := newProfileBuilder()
	m := b.mapping(mappingSpec{name: "nxv-inl", start: start, end: end, offset: off, htlhash: fileID(t, p.Bin)})
	var locs []int32
	for _, a := range addrs {
		locs = append(locs, b.location(m, a, "native"))
	}
	b.process(pid, "", locs)
	set := processortest.NewNopSettings(metadata.Type)
	set.Logger = zaptest.NewLogger(t)
	process(t, newTestProcessorWith(t, testConfig(), set), b.pd)
	checkInlined(t, p, b.pd, locs, addrs)
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	require.NoError(t, os.WriteFile(dst, data, mode))
}

// TestDWARFBoundedByCache: a file whose DWARF sections would take more
// than the memory allowed (cache_size_mib; here 1 KiB) is not
// indexed: counted as too_large, its frames named from its debug file's
// symbol table, without lines.
func TestDWARFBoundedByCache(t *testing.T) {
	p := buildInlProgram(t, t.TempDir(), true)
	addrs := dwarftest.InlinedAddrs(t, p.Oracle, "nxv_inl_hot")
	pd, locs := p.batch(t, 0, addrs[:1])
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	proc := newTestProcessorWith(t, testConfig(), metadatatest.NewSettings(tt))
	proc.limits.indexBytes = 1 << 10
	require.Greater(t, len(dwarftest.SectionData(t, p.Debug, ".debug_info")), 1<<10, "the program's DWARF is larger than the bound")
	process(t, proc, pd)

	got, _ := frames(pd, locs[0])
	assert.Equal(t, []dwarftest.Frame{{Name: "nxv_inl_caller", File: "inl"}}, got)
	metadatatest.AssertEqualProcessorSymbolizeFilesFailed(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "too_large"))},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorSymbolizeFramesNamed(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("source", "debug_file"))},
	}, metricdatatest.IgnoreTimestamp())
}

// TestDWARFVersionsAndCompression: DWARF 4 and DWARF 5, with sections
// compressed as SHF_COMPRESSED (zlib, zstd) and as GNU .zdebug sections,
// all give the inlined function and its caller with readelf's lines.
func TestDWARFVersionsAndCompression(t *testing.T) {
	p := buildInlProgram(t, t.TempDir(), false)
	addrs := dwarftest.InlinedAddrs(t, p.Oracle, "nxv_inl_hot")
	for _, tc := range []struct {
		name, from, compress string
	}{
		{"dwarf4", p.Oracle, ""},
		{"dwarf5 zlib", p.Full, "zlib"},
		{"dwarf5 zstd", p.Full, "zstd"},
		{"dwarf4 zdebug", p.Oracle, "zlib-gnu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := p
			q.Bin = filepath.Join(t.TempDir(), "inl")
			copyFile(t, tc.from, q.Bin, 0o755)
			if tc.compress != "" {
				dwarftest.Run(t, "objcopy", "--compress-debug-sections="+tc.compress, q.Bin)
			}
			pd, locs := q.batch(t, 0, addrs)
			process(t, newTestProcessor(t), pd)
			checkInlined(t, q, pd, locs, addrs)
		})
	}
}

// TestDWARFDWZ: a program whose DWARF dwz moved partly into a common
// alternate file, made by the test with dwz: DWARF 4's form of the link
// (.gnu_debugaltlink, DW_FORM_GNU_ref_alt and DW_FORM_GNU_strp_alt, what
// dwz writes by default) and DWARF 5's (dwz --dwarf-5: .debug_sup in both
// files, DW_FORM_ref_sup4 and DW_FORM_strp_sup, the alternate identified
// by the checksum of .debug_sup, as it has no GNU build ID). With the
// alternate file where the link says, the inlined function is named from
// it and the frames are counted as dwz; without it, the frames get what
// the program's own DWARF gives (the caller, named from the symbol table,
// at the call's line, no nameless frame for the inlined function) and the
// file is counted as a dwz failure.
func TestDWARFDWZ(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dwzArgs []string
		section string
	}{
		{"gnu_debugaltlink", nil, ".gnu_debugaltlink"},
		{"debug_sup", []string{"--dwarf-5"}, ".debug_sup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := buildInlProgram(t, t.TempDir(), false, "-DNXV_OTHER=1", "-gdwarf-5")
			b := buildInlProgram(t, t.TempDir(), false, "-DNXV_OTHER=2", "-gdwarf-5")
			common := filepath.Join(t.TempDir(), "common.dwz")
			dwarftest.Run(t, "dwz", append([]string{"-m", common, "-M", common}, append(tc.dwzArgs, a.Full, b.Full)...)...)
			require.NotNil(t, dwarftest.SectionData(t, a.Full, tc.section), "dwz wrote %s", tc.section)
			checkDWZ(t, a, common)
		})
	}
}

// checkDWZ checks the frames of a program that dwz linked to the
// alternate file common: with it, then without it.
func checkDWZ(t *testing.T, a inlProgram, common string) {
	t.Helper()
	addrs := dwarftest.InlinedAddrs(t, a.Oracle, "nxv_inl_hot")
	q := a
	q.Bin = a.Full
	want := dwarftest.Frames(t, a.Oracle, addrs[0])

	// The alternate file where its link says: the inlined function is
	// named from it (internal/debugfile), innermost first.
	pd, locs := q.batch(t, 0, addrs[:1])
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	process(t, newTestProcessorWith(t, testConfig(), metadatatest.NewSettings(tt)), pd)
	got, _ := frames(pd, locs[0])
	assert.Equal(t, want, got, "the inlined function and its caller")
	metadatatest.AssertEqualProcessorSymbolizeFramesNamed(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("source", "dwz"))},
	}, metricdatatest.IgnoreTimestamp())

	// Without the alternate file: the caller at the call's line.
	require.NoError(t, os.Remove(common))
	pd, locs = q.batch(t, 0, addrs[:1])
	tt2 := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt2.Shutdown(context.Background())) })
	process(t, newTestProcessorWith(t, testConfig(), metadatatest.NewSettings(tt2)), pd)
	got, _ = frames(pd, locs[0])
	assert.Equal(t, want[1:], got, "the caller at the call's line")
	metadatatest.AssertEqualProcessorSymbolizeFilesFailed(t, tt2, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "dwz"))},
	}, metricdatatest.IgnoreTimestamp())
}
