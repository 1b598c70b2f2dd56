// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package dwarfindex indexes the source lines and inlined calls of an ELF
// file's DWARF (versions 2 to 5, compressed sections included) so that an
// address gives its frames, innermost first: the inlined functions at that
// address, each with the file and line it is at, and the function they are
// inlined into last.
package dwarfindex // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/dwarfindex"

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
)

// Frame is one function at an address: the innermost first.
type Frame struct {
	// Name is the function's DW_AT_name, or its demangled linkage name.
	Name string
	// SystemName is its linkage (mangled) name, else its name.
	SystemName string
	// File is the source file the line is in.
	File string
	// Line is the line of the address (innermost frame) or of the call
	// (outer frames); 0 when unknown.
	Line int64
}

// ErrTooLarge is returned when the DWARF sections, or the index built from
// them, would take more memory than allowed.
var ErrTooLarge = errors.New("DWARF larger than the memory allowed")

// ErrNoDWARF is returned for a file without line tables.
var ErrNoDWARF = errors.New("no DWARF line table")

// Limits bound what indexing a file may use.
type Limits struct {
	// SectionBytes bounds the DWARF sections read (decompressed).
	SectionBytes uint64
	// IndexBytes bounds the index kept.
	IndexBytes int
}

// maxInlineDepth bounds the frames of one address.
const maxInlineDepth = 64

type row struct {
	addr uint64
	file uint32 // string index; noFile marks the end of a sequence
	line uint32
}

const noFile = ^uint32(0)

type function struct {
	name, sys uint32 // string indices
}

// scope is a range of code of a function: a subprogram (depth 0) or an
// inlined call within one.
type scope struct {
	lo, hi   uint64
	fn       uint32
	callFile uint32 // where it is called from (depth > 0)
	callLine uint32
	depth    uint16
	// first, end are the inlined scopes within a subprogram's range
	// (depth 0 only): inl[first:end].
	first, end uint32
}

// Index is the line table and inlined calls of one file. It is immutable
// once built and safe for concurrent use.
type Index struct {
	rows  []row
	subs  []scope // depth 0, sorted by lo
	inl   []scope // the inlined scopes, grouped by subprogram
	funcs []function
	strs  []string
	size  int
}

// Size is an estimate of the index's memory in bytes.
func (ix *Index) Size() int { return ix.size }

// Lookup returns the frames at a file virtual address, innermost first, or
// nil when no line table covers it. The real function (the subprogram) is
// last; its name is empty when the DWARF has none for that address (the
// caller may fall back to a symbol table).
func (ix *Index) Lookup(addr uint64) []Frame {
	line, file, ok := ix.line(addr)
	if !ok {
		return nil
	}
	// The subprogram holding addr.
	i, _ := slices.BinarySearchFunc(ix.subs, addr, func(s scope, a uint64) int {
		if s.lo <= a {
			return -1
		}
		return 1
	})
	i-- // the last starting at or below addr
	// A subprogram nested in another starts after it: look back a little
	// for one whose range holds addr.
	for j := i; ; j-- {
		if j < 0 || i-j >= 16 {
			i = -1
			break
		}
		if ix.subs[j].hi > addr {
			i = j
			break
		}
	}
	if i < 0 {
		return []Frame{{File: ix.strs[file], Line: int64(line)}}
	}
	sub := ix.subs[i]
	var chain []scope
	for _, s := range ix.inl[sub.first:sub.end] {
		if s.lo <= addr && addr < s.hi && len(chain) < maxInlineDepth {
			chain = append(chain, s)
		}
	}
	slices.SortStableFunc(chain, func(a, b scope) int { return int(b.depth) - int(a.depth) })
	frames := make([]Frame, 0, len(chain)+1)
	for _, s := range chain {
		f := ix.funcs[s.fn]
		frames = append(frames, Frame{Name: ix.strs[f.name], SystemName: ix.strs[f.sys], File: ix.strs[file], Line: int64(line)})
		file, line = s.callFile, s.callLine
	}
	f := ix.funcs[sub.fn]
	frames = append(frames, Frame{Name: ix.strs[f.name], SystemName: ix.strs[f.sys], File: ix.strs[file], Line: int64(line)})
	return frames
}

// line returns the line row holding addr.
func (ix *Index) line(addr uint64) (line, file uint32, ok bool) {
	i, _ := slices.BinarySearchFunc(ix.rows, addr, func(r row, a uint64) int {
		if r.addr <= a {
			return -1
		}
		return 1
	})
	i--
	if i < 0 || ix.rows[i].file == noFile {
		return 0, 0, false
	}
	return ix.rows[i].line, ix.rows[i].file, true
}

// dwarfSections are the sections read; others (locations, frames, types,
// macros) are not needed for lines and inlined calls.
var dwarfSections = []string{"abbrev", "info", "str", "line", "ranges", "addr", "line_str", "str_offsets", "rnglists"}

// Open reads the DWARF sections of an ELF file that lines and inlined
// calls need, within limits.SectionBytes (their decompressed sizes, as the
// headers state them, are checked before anything is decompressed).
func Open(f *elf.File, limits Limits) (d *dwarf.Data, err error) {
	defer func() {
		if p := recover(); p != nil {
			d, err = nil, fmt.Errorf("malformed DWARF: %v", p)
		}
	}()
	secs := map[string]*elf.Section{}
	var total uint64
	for _, s := range f.Sections {
		var suffix string
		switch {
		case strings.HasPrefix(s.Name, ".debug_"):
			suffix = s.Name[len(".debug_"):]
		case strings.HasPrefix(s.Name, ".zdebug_"):
			suffix = s.Name[len(".zdebug_"):]
		default:
			continue
		}
		if !slices.Contains(dwarfSections, suffix) || secs[suffix] != nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		size := s.Size
		if strings.HasPrefix(s.Name, ".zdebug_") {
			var hdr [12]byte
			if _, err := s.ReadAt(hdr[:], 0); err == nil && string(hdr[:4]) == "ZLIB" {
				size = binary.BigEndian.Uint64(hdr[4:])
			}
		}
		total += size
		if size > limits.SectionBytes || total > limits.SectionBytes {
			return nil, fmt.Errorf("%s: %d bytes of DWARF sections: %w", s.Name, total, ErrTooLarge)
		}
		secs[suffix] = s
	}
	if secs["info"] == nil || secs["line"] == nil {
		return nil, ErrNoDWARF
	}
	dat := map[string][]byte{}
	for k, s := range secs {
		b, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		dat[k] = b
	}
	d, err = dwarf.New(dat["abbrev"], nil, nil, dat["info"], dat["line"], nil, dat["ranges"], dat["str"])
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
		if b := dat[k]; b != nil {
			if err := d.AddSection(".debug_"+k, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// builder accumulates an index within a byte budget.
type builder struct {
	ix       *Index
	strIdx   map[string]uint32
	fnIdx    map[function]uint32
	names    map[dwarf.Offset]function // DIE offset -> its names
	demangle func(string) string
	limit    int
	// nameOf names an entry, following its abstract origin or
	// specification (debugfile.Names.Name: into the DWZ alternate file
	// when there is one).
	nameOf func(*dwarf.Entry) (name, linkage string, err error)
}

func (b *builder) str(s string) uint32 {
	if i, ok := b.strIdx[s]; ok {
		return i
	}
	i := uint32(len(b.ix.strs))
	b.ix.strs = append(b.ix.strs, s)
	b.strIdx[s] = i
	b.ix.size += len(s) + 16 + 48
	return i
}

func (b *builder) grow(n int) error {
	b.ix.size += n
	if b.ix.size > b.limit {
		return fmt.Errorf("index of %d bytes: %w", b.ix.size, ErrTooLarge)
	}
	return nil
}

// Build indexes the line tables and the subprograms and inlined
// subroutines of d. demangle gives a linkage name's display name. It never
// panics: a malformed input is an error.
func Build(d *dwarf.Data, limits Limits, demangle func(string) string) (ix *Index, err error) {
	return BuildWithAlt(d, limits, demangle, debugfile.Names{Main: d}.Name)
}

// BuildWithAlt is Build for DWARF that dwz compressed: entries are named
// by nameOf (debugfile.Names.Name with the alternate file), which follows
// DW_AT_name, DW_AT_linkage_name and DW_AT_abstract_origin in
// DW_FORM_GNU_strp_alt, DW_FORM_GNU_ref_alt and DWARF 5's _sup forms
// (which debug/dwarf leaves as offsets) into the alternate file.
func BuildWithAlt(d *dwarf.Data, limits Limits, demangle func(string) string, nameOf func(*dwarf.Entry) (name, linkage string, err error)) (ix *Index, err error) {
	defer func() {
		if p := recover(); p != nil {
			ix, err = nil, fmt.Errorf("malformed DWARF: %v", p)
		}
	}()
	b := &builder{
		ix:       &Index{size: 256},
		strIdx:   map[string]uint32{},
		fnIdx:    map[function]uint32{},
		names:    map[dwarf.Offset]function{},
		demangle: demangle,
		limit:    limits.IndexBytes,
		nameOf:   nameOf,
	}
	b.str("")
	r := d.Reader()
	var seqs [][]row
	for {
		cu, err := r.Next()
		if err != nil {
			return nil, err
		}
		if cu == nil {
			break
		}
		if cu.Tag != dwarf.TagCompileUnit && cu.Tag != dwarf.TagPartialUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(cu)
		if err != nil {
			return nil, err
		}
		var files []*dwarf.LineFile
		if lr != nil {
			if seqs, err = b.lines(lr, seqs); err != nil {
				return nil, err
			}
			files = lr.Files()
		}
		if !cu.Children {
			continue
		}
		if err := b.unit(d, r, cu, files); err != nil {
			return nil, err
		}
	}
	if len(seqs) == 0 {
		return nil, ErrNoDWARF
	}
	slices.SortStableFunc(seqs, func(a, c []row) int {
		switch {
		case a[0].addr < c[0].addr:
			return -1
		case a[0].addr > c[0].addr:
			return 1
		}
		return 0
	})
	n := 0
	for _, s := range seqs {
		n += len(s)
	}
	b.ix.rows = make([]row, 0, n)
	for _, s := range seqs {
		b.ix.rows = append(b.ix.rows, s...)
	}
	slices.SortStableFunc(b.ix.subs, func(a, c scope) int {
		switch {
		case a.lo < c.lo:
			return -1
		case a.lo > c.lo:
			return 1
		}
		return 0
	})
	b.ix.inl = slices.Clip(b.ix.inl)
	b.ix.funcs = slices.Clip(b.ix.funcs)
	b.ix.strs = slices.Clip(b.ix.strs)
	return b.ix, nil
}

// lines appends the sequences of one unit's line table. A sequence
// starting at address 0 (a function the linker dropped) is skipped.
func (b *builder) lines(lr *dwarf.LineReader, seqs [][]row) ([][]row, error) {
	var seq []row
	var e dwarf.LineEntry
	fileOf := map[*dwarf.LineFile]uint32{}
	for {
		if err := lr.Next(&e); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		if e.EndSequence {
			if len(seq) > 0 && seq[0].addr != 0 {
				seq = append(seq, row{addr: e.Address, file: noFile})
				if err := b.grow(16 * len(seq)); err != nil {
					return nil, err
				}
				seqs = append(seqs, slices.Clip(seq))
			}
			seq = nil
			continue
		}
		fi := uint32(0)
		if e.File != nil {
			var ok bool
			if fi, ok = fileOf[e.File]; !ok {
				fi = b.str(e.File.Name)
				fileOf[e.File] = fi
			}
		}
		line := uint32(0)
		if e.Line > 0 {
			line = uint32(e.Line)
		}
		seq = append(seq, row{addr: e.Address, file: fi, line: line})
	}
	return seqs, nil
}

// function returns the index of a DIE's function, its names found through
// its abstract origin or specification when it has none itself.
func (b *builder) function(e *dwarf.Entry) (uint32, error) {
	name, sys := b.names0(e)
	f := function{name: b.str(name), sys: b.str(sys)}
	if i, ok := b.fnIdx[f]; ok {
		return i, nil
	}
	i := uint32(len(b.ix.funcs))
	b.ix.funcs = append(b.ix.funcs, f)
	b.fnIdx[f] = i
	return i, b.grow(8 + 40)
}

// names0 returns a DIE's display name and system (linkage) name: its own,
// else those its abstract origin or specification chain gives
// (debugfile.Names, which follows references into a DWZ alternate file and
// bounds the chain). A DIE without names of its own is named as its origin
// in d, remembered by the origin's offset (the inlined calls of one
// function share it).
func (b *builder) names0(e *dwarf.Entry) (name, sys string) {
	origin, memo := sameFileOrigin(e)
	if memo {
		if f, ok := b.names[origin]; ok {
			return b.ix.strs[f.name], b.ix.strs[f.sys]
		}
	}
	// A chain cut short (a loop, a missing alternate file) still gives
	// the names found on the way.
	n, link, _ := b.nameOf(e)
	switch {
	case link != "":
		name, sys = b.demangle(link), link
	case n != "":
		name, sys = n, n
	}
	if memo {
		b.names[origin] = function{name: b.str(name), sys: b.str(sys)}
	}
	return name, sys
}

// sameFileOrigin returns the offset of the entry a DIE without names of
// its own takes them from, when that entry is in the same file.
func sameFileOrigin(e *dwarf.Entry) (dwarf.Offset, bool) {
	for _, a := range []dwarf.Attr{dwarf.AttrName, dwarf.AttrLinkageName, attrMIPSLinkageName} {
		if e.AttrField(a) != nil {
			return 0, false
		}
	}
	f := debugfile.Origin(e)
	if f == nil {
		return 0, false
	}
	off, ok := f.Val.(dwarf.Offset)
	return off, ok
}

// attrMIPSLinkageName is DW_AT_MIPS_linkage_name, which older compilers
// write instead of DW_AT_linkage_name.
const attrMIPSLinkageName = dwarf.Attr(0x2007)

// code returns the address ranges of a subprogram or inlined subroutine
// and its function (nil ranges: it has no code; a range list that cannot
// be read counts as none).
func (b *builder) code(d *dwarf.Data, e *dwarf.Entry) ([][2]uint64, uint32, error) {
	rs, err := d.Ranges(e)
	if err != nil || len(rs) == 0 {
		return nil, 0, nil
	}
	fn, err := b.function(e)
	return rs, fn, err
}

// scopeTags are the DIEs whose children may hold code besides subprograms
// and inlined subroutines with code: the rest is skipped.
var scopeTags = map[dwarf.Tag]bool{
	dwarf.TagLexDwarfBlock:   true,
	dwarf.TagNamespace:       true,
	dwarf.TagModule:          true,
	dwarf.TagTryDwarfBlock:   true,
	dwarf.TagCatchDwarfBlock: true,
}

// open is a DIE whose children are being read.
type open struct {
	sub    bool     // a subprogram with code
	inline bool     // an inlined subroutine with code
	subs   []uint32 // sub: its entries in ix.subs
	depth  uint16   // inline: its depth
}

// unit reads the DIEs of one compilation unit (r is just past its entry).
func (b *builder) unit(d *dwarf.Data, r *dwarf.Reader, cu *dwarf.Entry, files []*dwarf.LineFile) error {
	stack := []open{{}}
	// cur is the innermost open subprogram with code (-1: none).
	cur := -1
	depthOf := func() uint16 {
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i].inline {
				return stack[i].depth
			}
			if stack[i].sub {
				return 0
			}
		}
		return 0
	}
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			return nil
		}
		if e.Tag == 0 { // the end of a list of children
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if top.sub {
				for _, si := range top.subs {
					b.ix.subs[si].end = uint32(len(b.ix.inl))
				}
				cur = -1
				for i := len(stack) - 1; i >= 0; i-- {
					if stack[i].sub {
						cur = i
						break
					}
				}
			}
			continue
		}
		o := open{}
		switch e.Tag {
		case dwarf.TagSubprogram:
			rs, fn, err := b.code(d, e)
			if err != nil {
				return err
			}
			if rs == nil {
				break
			}
			o.sub = true
			for _, rg := range rs {
				if rg[0] == 0 || rg[1] <= rg[0] {
					continue // dropped by the linker
				}
				o.subs = append(o.subs, uint32(len(b.ix.subs)))
				b.ix.subs = append(b.ix.subs, scope{lo: rg[0], hi: rg[1], fn: fn, first: uint32(len(b.ix.inl)), end: uint32(len(b.ix.inl))})
				if err := b.grow(48); err != nil {
					return err
				}
			}
		case dwarf.TagInlinedSubroutine:
			if cur < 0 {
				break
			}
			rs, fn, err := b.code(d, e)
			if err != nil {
				return err
			}
			if rs == nil {
				break
			}
			o.inline = true
			o.depth = depthOf() + 1
			callFile := uint32(0)
			if fi, ok := e.Val(dwarf.AttrCallFile).(int64); ok && fi >= 0 && fi < int64(len(files)) && files[fi] != nil {
				callFile = b.str(files[fi].Name)
			}
			callLine := uint32(0)
			if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok && l > 0 && l < 1<<31 {
				callLine = uint32(l)
			}
			for _, rg := range rs {
				if rg[1] <= rg[0] {
					continue
				}
				b.ix.inl = append(b.ix.inl, scope{lo: rg[0], hi: rg[1], fn: fn, callFile: callFile, callLine: callLine, depth: o.depth})
				if err := b.grow(48); err != nil {
					return err
				}
			}
		}
		if e.Children && !o.sub && !o.inline && !scopeTags[e.Tag] {
			// Types, and functions without code (declarations, abstract
			// instances): nothing of theirs has code.
			r.SkipChildren()
			continue
		}
		if e.Children {
			stack = append(stack, o)
			if o.sub {
				cur = len(stack) - 1
			}
		}
	}
	return nil
}
