// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"bufio"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The expected frames of the DWARF tests come from binutils' readelf
// (--debug-dump=decodedline, info and Ranges), read here independently of
// the processor's reader (Go's debug/dwarf).

// readelfRow is a row of readelf --debug-dump=decodedline: the file's base
// name, the line ("-": the end of a sequence, line -1) and the address.
type readelfRow struct {
	file string
	line int64
	addr uint64
}

func readelf(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := exec.Command("readelf", append([]string{"-W"}, args...)...).Output()
	require.NoError(tb, err, "readelf %v (binutils: run `make prereqs`)", args)
	return string(out)
}

var decodedRow = regexp.MustCompile(`^(\S+)\s+(\d+|-)\s+0x([0-9a-f]+)`)

// readelfLines returns the rows of a file's line table, in readelf's order.
func readelfLines(tb testing.TB, file string) []readelfRow {
	tb.Helper()
	var rows []readelfRow
	s := bufio.NewScanner(strings.NewReader(readelf(tb, "--debug-dump=decodedline", file)))
	for s.Scan() {
		m := decodedRow.FindStringSubmatch(s.Text())
		if m == nil {
			continue
		}
		r := readelfRow{file: m[1], line: -1}
		if m[2] != "-" {
			r.line, _ = strconv.ParseInt(m[2], 10, 64)
		}
		r.addr, _ = strconv.ParseUint(m[3], 16, 64)
		rows = append(rows, r)
	}
	require.NotEmpty(tb, rows, "no line rows in %s", file)
	return rows
}

// lineAt returns the row holding addr: the last row at or below it of the
// sequence holding it (rows of one address: the last is the instruction's).
func lineAt(tb testing.TB, rows []readelfRow, addr uint64) readelfRow {
	tb.Helper()
	var best *readelfRow
	for i := range rows {
		r := &rows[i]
		if r.line < 0 || r.addr > addr {
			continue
		}
		// The sequence must still hold addr: its end is after addr.
		end := i + 1
		for end < len(rows) && rows[end].line >= 0 {
			end++
		}
		if end < len(rows) && rows[end].addr <= addr {
			continue
		}
		if best == nil || r.addr >= best.addr {
			best = r
		}
	}
	require.NotNil(tb, best, "no line row holds %#x", addr)
	return *best
}

// readelfDIE is a DIE of readelf --debug-dump=info: its depth, tag and
// attributes (their printed value, after the last ": ").
type readelfDIE struct {
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

func readelfDIEs(tb testing.TB, file string) []readelfDIE {
	tb.Helper()
	var dies []readelfDIE
	s := bufio.NewScanner(strings.NewReader(readelf(tb, "--debug-dump=info", file)))
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if m := dieHeader.FindStringSubmatch(s.Text()); m != nil {
			d, _ := strconv.Atoi(m[1])
			off, _ := strconv.ParseUint(m[2], 16, 64)
			dies = append(dies, readelfDIE{off: off, depth: d, tag: m[3], attrs: map[string]string{}})
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

// readelfRanges returns the range lists of .debug_ranges (DWARF 4: each
// row starts with its list's offset) or .debug_rnglists (DWARF 5: under an
// "Offset:" header; binutils 2.40 prints only the first list there, so
// the tests read DWARF 4 builds of the same code, see inlProgram) by
// offset.
func readelfRanges(tb testing.TB, file string) map[uint64][][2]uint64 {
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

// expectedFrame is a frame as the tests expect it: the function's name,
// the base name of its file and the line.
type expectedFrame struct {
	name, file string
	line       int64
}

// readelfFrames returns the frames at addr from readelf's output of a
// small program (one compilation unit, subprograms with low_pc/high_pc):
// the inlined subroutines whose ranges hold addr, deepest first, then the
// subprogram; the innermost at addr's line row, each caller at the call
// line of the call inside it.
func readelfFrames(tb testing.TB, file string, addr uint64) []expectedFrame {
	tb.Helper()
	dies := readelfDIEs(tb, file)
	ranges := readelfRanges(tb, file)
	rows := readelfLines(tb, file)
	byOff := map[uint64]readelfDIE{}
	for _, d := range dies {
		byOff[d.off] = d
	}
	name := func(d readelfDIE) string {
		for range 4 {
			if n := d.attrs["DW_AT_name"]; n != "" {
				return n
			}
			d = byOff[parseHex(strings.Trim(d.attrs["DW_AT_abstract_origin"], "<>"))]
		}
		return ""
	}
	holds := func(d readelfDIE) bool {
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
	var chain []readelfDIE // outermost first
	for _, d := range dies {
		if (d.tag == "DW_TAG_subprogram" || d.tag == "DW_TAG_inlined_subroutine") && holds(d) {
			chain = append(chain, d)
		}
	}
	require.NotEmpty(tb, chain, "no subprogram holds %#x", addr)
	slices.Reverse(chain)
	row := lineAt(tb, rows, addr)
	out := []expectedFrame{}
	f, l := row.file, row.line
	for _, d := range chain {
		out = append(out, expectedFrame{name: name(d), file: f, line: l})
		if d.tag == "DW_TAG_inlined_subroutine" {
			l, _ = strconv.ParseInt(d.attrs["DW_AT_call_line"], 10, 64)
			f = row.file // one source file: the call is in it too
		}
	}
	return out
}

// inlinedAddrs returns the addresses of line rows inside the ranges of the
// inlined calls of a function (by name).
func inlinedAddrs(tb testing.TB, file, fn string) []uint64 {
	tb.Helper()
	dies := readelfDIEs(tb, file)
	ranges := readelfRanges(tb, file)
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
	for _, r := range readelfLines(tb, file) {
		for _, s := range spans {
			if s[0] <= r.addr && r.addr < s[1] && !slices.Contains(addrs, r.addr) {
				addrs = append(addrs, r.addr)
			}
		}
	}
	return addrs
}

// linesOf returns a location's lines as expected frames (file: base name).
func baseName(p string) string { return path.Base(p) }
