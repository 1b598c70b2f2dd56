// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package dwarftest is the tests' independent view of a program's DWARF:
// the frames binutils' readelf gives for an address (--debug-dump=
// decodedline, info and Ranges), and a C program built with -g -O2,
// stripped, with its debug file kept apart. The symbolize processor's unit
// tests and the end-to-end tests check the processor's frames against it.
package dwarftest // import "github.com/nexovue/otelcol-nexovue/internal/dwarftest"

import (
	"bufio"
	"debug/elf"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Row is a row of readelf --debug-dump=decodedline: the file's base
// name, the line ("-": the end of a sequence, line -1) and the address.
type Row struct {
	File string
	Line int64
	Addr uint64
}

func readelf(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := exec.Command("readelf", append([]string{"-W"}, args...)...).Output()
	require.NoError(tb, err, "readelf %v (binutils: run `make prereqs`)", args)
	return string(out)
}

var decodedRow = regexp.MustCompile(`^(\S+)\s+(\d+|-)\s+0x([0-9a-f]+)`)

// Lines returns the rows of a file's line table, in readelf's order.
func Lines(tb testing.TB, file string) []Row {
	tb.Helper()
	var rows []Row
	s := bufio.NewScanner(strings.NewReader(readelf(tb, "--debug-dump=decodedline", file)))
	for s.Scan() {
		m := decodedRow.FindStringSubmatch(s.Text())
		if m == nil {
			continue
		}
		r := Row{File: m[1], Line: -1}
		if m[2] != "-" {
			r.Line, _ = strconv.ParseInt(m[2], 10, 64)
		}
		r.Addr, _ = strconv.ParseUint(m[3], 16, 64)
		rows = append(rows, r)
	}
	require.NotEmpty(tb, rows, "no line rows in %s", file)
	return rows
}

// LineAt returns the row holding addr: the last row at or below it of the
// sequence holding it (rows of one address: the last is the instruction's).
func LineAt(tb testing.TB, rows []Row, addr uint64) Row {
	tb.Helper()
	var best *Row
	for i := range rows {
		r := &rows[i]
		if r.Line < 0 || r.Addr > addr {
			continue
		}
		// The sequence must still hold addr: its end is after addr.
		end := i + 1
		for end < len(rows) && rows[end].Line >= 0 {
			end++
		}
		if end < len(rows) && rows[end].Addr <= addr {
			continue
		}
		if best == nil || r.Addr >= best.Addr {
			best = r
		}
	}
	require.NotNil(tb, best, "no line row holds %#x", addr)
	return *best
}

// die is a DIE of readelf --debug-dump=info: its depth, tag and
// attributes (their printed value, after the last ": ").
type die struct {
	off   uint64
	depth int
	tag   string
	attrs map[string]string
}

var (
	dieHeader = regexp.MustCompile(`^\s*<(\d+)><([0-9a-f]+)>: Abbrev Number: \d+ \((\w+)\)`)
	// readelf -W prints an attribute's form before its value.
	formPrefix = regexp.MustCompile(`^\(\w+\)\s*`)
	dieAttr    = regexp.MustCompile(`^\s*<[0-9a-f]+>\s+(DW_AT_\w+)\s*:\s*(.*)$`)
)

func dies(tb testing.TB, file string) []die {
	tb.Helper()
	var dies []die
	s := bufio.NewScanner(strings.NewReader(readelf(tb, "--debug-dump=info", file)))
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if m := dieHeader.FindStringSubmatch(s.Text()); m != nil {
			d, _ := strconv.Atoi(m[1])
			off, _ := strconv.ParseUint(m[2], 16, 64)
			dies = append(dies, die{off: off, depth: d, tag: m[3], attrs: map[string]string{}})
			continue
		}
		if m := dieAttr.FindStringSubmatch(s.Text()); m != nil && len(dies) > 0 {
			v := formPrefix.ReplaceAllString(m[2], "")
			if i := strings.LastIndex(v, ": "); i >= 0 {
				v = v[i+2:]
			}
			dies[len(dies)-1].attrs[m[1]] = strings.TrimSpace(v)
		}
	}
	return dies
}

var (
	rangeRow  = regexp.MustCompile(`^\s*([0-9a-f]{8}) ([0-9a-f]{8,}) ([0-9a-f]{8,})\s*$`)
	rangeList = regexp.MustCompile(`^\s*Offset: 0x([0-9a-f]+)`)
)

// ranges returns the range lists of .debug_ranges (DWARF 4: each
// row starts with its list's offset) or .debug_rnglists (DWARF 5: under an
// "Offset:" header; binutils 2.40 prints only the first list there, so
// the tests read DWARF 4 builds of the same code, see inlProgram) by
// offset.
func ranges(tb testing.TB, file string) map[uint64][][2]uint64 {
	tb.Helper()
	out := map[uint64][][2]uint64{}
	var cur uint64
	v5 := false
	s := bufio.NewScanner(strings.NewReader(readelf(tb, "--debug-dump=Ranges", file)))
	for s.Scan() {
		if strings.Contains(s.Text(), ".debug_rnglists") {
			v5 = true
		}
		if m := rangeList.FindStringSubmatch(s.Text()); m != nil {
			cur, _ = strconv.ParseUint(m[1], 16, 64)
			continue
		}
		if m := rangeRow.FindStringSubmatch(s.Text()); m != nil {
			key := cur
			if !v5 {
				key, _ = strconv.ParseUint(m[1], 16, 64)
			}
			lo, _ := strconv.ParseUint(m[2], 16, 64)
			hi, _ := strconv.ParseUint(m[3], 16, 64)
			out[key] = append(out[key], [2]uint64{lo, hi})
		}
	}
	return out
}

func parseHex(s string) uint64 {
	v, _ := strconv.ParseUint(strings.TrimPrefix(strings.Fields(s)[0], "0x"), 16, 64)
	return v
}

// Frame is a frame as the tests expect it: the function's name,
// the base name of its file and the line.
type Frame struct {
	Name, File string
	Line       int64
}

// Frames returns the frames at addr from readelf's output of a
// small program (one compilation unit, subprograms with low_pc/high_pc):
// the inlined subroutines whose ranges hold addr, deepest first, then the
// subprogram; the innermost at addr's line row, each caller at the call
// line of the call inside it.
func Frames(tb testing.TB, file string, addr uint64) []Frame {
	tb.Helper()
	dies := dies(tb, file)
	ranges := ranges(tb, file)
	rows := Lines(tb, file)
	byOff := map[uint64]die{}
	for _, d := range dies {
		byOff[d.off] = d
	}
	name := func(d die) string {
		for range 4 {
			if n := d.attrs["DW_AT_name"]; n != "" {
				return n
			}
			d = byOff[parseHex(strings.Trim(d.attrs["DW_AT_abstract_origin"], "<>"))]
		}
		return ""
	}
	holds := func(d die) bool {
		if r, ok := d.attrs["DW_AT_ranges"]; ok {
			for _, rg := range ranges[parseHex(r)] {
				if rg[0] <= addr && addr < rg[1] {
					return true
				}
			}
			return false
		}
		lo, ok := d.attrs["DW_AT_low_pc"]
		if !ok {
			return false
		}
		l := parseHex(lo)
		return l <= addr && addr < l+parseHex(d.attrs["DW_AT_high_pc"])
	}
	var chain []die // outermost first
	for _, d := range dies {
		if (d.tag == "DW_TAG_subprogram" || d.tag == "DW_TAG_inlined_subroutine") && holds(d) {
			chain = append(chain, d)
		}
	}
	require.NotEmpty(tb, chain, "no subprogram holds %#x", addr)
	slices.Reverse(chain)
	row := LineAt(tb, rows, addr)
	out := []Frame{}
	f, l := row.File, row.Line
	for _, d := range chain {
		out = append(out, Frame{Name: name(d), File: f, Line: l})
		if d.tag == "DW_TAG_inlined_subroutine" {
			l, _ = strconv.ParseInt(d.attrs["DW_AT_call_line"], 10, 64)
			f = row.File // one source file: the call is in it too
		}
	}
	return out
}

// InlinedAddrs returns the addresses of line rows inside the ranges of the
// inlined calls of a function (by name).
func InlinedAddrs(tb testing.TB, file, fn string) []uint64 {
	tb.Helper()
	dies := dies(tb, file)
	ranges := ranges(tb, file)
	var origin uint64
	for _, d := range dies {
		if d.tag == "DW_TAG_subprogram" && d.attrs["DW_AT_name"] == fn {
			origin = d.off
		}
	}
	require.NotZero(tb, origin, "no subprogram %s", fn)
	var spans [][2]uint64
	for _, d := range dies {
		if d.tag != "DW_TAG_inlined_subroutine" || parseHex(strings.Trim(d.attrs["DW_AT_abstract_origin"], "<>")) != origin {
			continue
		}
		if r, ok := d.attrs["DW_AT_ranges"]; ok {
			spans = append(spans, ranges[parseHex(r)]...)
		} else if lo, ok := d.attrs["DW_AT_low_pc"]; ok {
			spans = append(spans, [2]uint64{parseHex(lo), parseHex(lo) + parseHex(d.attrs["DW_AT_high_pc"])})
		}
	}
	require.NotEmpty(tb, spans, "%s is not inlined in %s", fn, file)
	var addrs []uint64
	for _, r := range Lines(tb, file) {
		for _, s := range spans {
			if s[0] <= r.Addr && r.Addr < s[1] && !slices.Contains(addrs, r.Addr) {
				addrs = append(addrs, r.Addr)
			}
		}
	}
	return addrs
}

// BaseName is the base name of a path (frames are compared by it).
func BaseName(p string) string { return path.Base(p) }

// Program is a C program built with -g -O2, stripped, its DWARF kept in a
// separate debug file.
type Program struct {
	Bin, Debug string // the stripped program, its debug file
	Full       string // the program before stripping
	// Oracle is the same program built with DWARF 4, whose code is the
	// same (checked): expected frames are read from it, as binutils 2.40's
	// readelf does not print every DWARF 5 range list.
	Oracle string
}

// Build builds the C source src into dir as name (DWARF 5, gcc's default),
// its debug file name.debug (objcopy --only-keep-debug) and the program
// stripped (strip --strip-all); with link, the stripped program gets a
// .gnu_debuglink to the debug file. extra are gcc's further flags.
func Build(tb testing.TB, src, dir, name string, link bool, extra ...string) Program {
	tb.Helper()
	p := Program{
		Bin:    filepath.Join(dir, name),
		Debug:  filepath.Join(dir, name+".debug"),
		Full:   filepath.Join(dir, name+"-full"),
		Oracle: filepath.Join(dir, name+"-dwarf4"),
	}
	flags := append([]string{"-g", "-O2", "-fno-omit-frame-pointer", "-Wl,--build-id"}, extra...)
	Run(tb, "gcc", append(flags, "-o", p.Full, src)...)
	Run(tb, "gcc", append(flags, "-gdwarf-4", "-o", p.Oracle, src)...)
	require.Equal(tb, SectionData(tb, p.Full, ".text"), SectionData(tb, p.Oracle, ".text"), "the DWARF 4 build has the same code")
	Run(tb, "objcopy", "--only-keep-debug", p.Full, p.Debug)
	Run(tb, "strip", "--strip-all", "-o", p.Bin, p.Full)
	if link {
		Run(tb, "objcopy", "--add-gnu-debuglink="+p.Debug, p.Bin)
	}
	return p
}

// Run runs a command of the machine (gcc, binutils), failing the test with
// its output.
func Run(tb testing.TB, name string, args ...string) {
	tb.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(tb, err, "%s %v (gcc and binutils: run `make prereqs`): %s", name, args, out)
}

// SectionData returns a section's (decompressed) bytes.
func SectionData(tb testing.TB, file, name string) []byte {
	tb.Helper()
	ef, err := elf.Open(file)
	require.NoError(tb, err)
	defer ef.Close()
	s := ef.Section(name)
	require.NotNil(tb, s, "%s has no %s", file, name)
	b, err := s.Data()
	require.NoError(tb, err)
	return b
}
