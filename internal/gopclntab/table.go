// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package gopclntab reads a Go binary's function table (.gopclntab, the
// runtime's pcHeader and what follows it) and the inline trees its functions
// point to (FUNCDATA_InlTree), and turns a program counter into the frames
// the Go runtime itself would report there: the calls the compiler inlined
// at that address, innermost first, each with its own name, file, line and
// start line, then the physical function.
//
// The layout is the one written by Go 1.20 and later (pcHeader magic
// 0xfffffff1, _func with startLine, 16-byte inlinedCall records); it is
// documented in the Go runtime's runtime/symtab.go, runtime/symtabinl.go
// and internal/abi/symtab.go. Older layouts are refused (ErrUnsupported).
//
// Everything read from the file is treated as hostile: every offset is
// checked before use, every walk is bounded, and what is kept is bounded by
// Limits.MaxBytes, so a malformed table gives errors and fewer frames, never
// a panic nor more memory.
package gopclntab // import "github.com/nexovue/otelcol-nexovue/internal/gopclntab"

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Errors of Parse and Open.
var (
	// ErrNotGo: the file has no Go function table.
	ErrNotGo = errors.New("gopclntab: no Go function table")
	// ErrUnsupported: a Go function table of a layout older than Go 1.20.
	ErrUnsupported = errors.New("gopclntab: layout older than Go 1.20")
	// ErrMalformed: the table cannot be read.
	ErrMalformed = errors.New("gopclntab: malformed table")
	// ErrTooLarge: keeping the table would take more than Limits.MaxBytes.
	ErrTooLarge = errors.New("gopclntab: table larger than allowed")
)

const (
	go120Magic = 0xfffffff1

	// Offsets in _func (runtime2.go), Go 1.20 and later.
	funcEntryOff   = 0
	funcNameOff    = 4
	funcPcfile     = 20
	funcPcln       = 24
	funcNpcdata    = 28
	funcCuOffset   = 32
	funcStartLine  = 36
	funcNfuncdata  = 43
	funcFixedSize  = 44
	pcdataInlIndex = 2 // abi.PCDATA_InlTreeIndex
	funcdataInl    = 3 // abi.FUNCDATA_InlTree

	// inlinedCall (symtabinl.go): funcID, pad, nameOff, parentPc, startLine.
	inlCallSize      = 16
	inlNameOff       = 4
	inlParentPc      = 8
	inlStartLine     = 12
	maxInlineDepth   = 64      // inlined calls followed per address
	maxPCValueSteps  = 1 << 20 // entries of one pc-value table decoded per lookup
	maxNameLen       = 4096    // a function or file name longer than this is cut
	maxInlTreeLength = 1 << 16 // records of one function's inline tree
)

// Limits bound what a table keeps.
type Limits struct {
	// MaxBytes bounds the memory kept: the tables and function records
	// copied from the binary, and its inline trees. 0: no table is kept.
	MaxBytes int
	// SectionBytes bounds the size of the .gopclntab section Open reads
	// (in pieces: what is kept, and windows of 1 MiB).
	SectionBytes int
}

// Frame is one function at an address: an inlined call, or the physical
// function.
type Frame struct {
	// Function is the name as the Go runtime prints it (and runtime/pprof
	// writes it): a generic function's shape arguments as "[...]".
	Function string
	// SystemName is the name in the table (with the shape arguments).
	SystemName string
	File       string
	Line       int64
	StartLine  int64
}

// Table is a parsed .gopclntab with the inline trees of its functions. It
// keeps what a lookup needs: the name, CU and file tables, the pc-value
// tables, and per function a record of 40 bytes (the binary's _func
// records, with their stack-map tables, are not kept). It is safe for
// concurrent lookups.
type Table struct {
	order     binary.ByteOrder
	textStart uint64
	textEnd   uint32 // the functab's last entry: the end of the last function
	quantum   uint64

	funcnametab, cutab, filetab, pctab []byte
	funcs                              []funcRec // by entry

	// inl holds the inline trees, copied from the binary.
	inl []byte

	// NoInlineTrees tells that the binary's inline trees could not be
	// found (its go:func.* data): frames are the physical functions only.
	NoInlineTrees bool
}

// funcRec is what a lookup needs of a _func record.
type funcRec struct {
	entry     uint32 // offset from textStart
	nameOff   uint32
	pcfile    uint32 // offsets in pctab (0: none)
	pcln      uint32
	inlIndex  uint32 // PCDATA_InlTreeIndex's table
	cuOffset  uint32
	startLine int32
	inlAt     uint32 // offset in inl of the function's inline tree
	inlLen    uint32 // its records (0: none)
}

const funcRecSize = 40 // unsafe.Sizeof(funcRec{}), rounded

// Header is what Parse needs besides the table's bytes.
type Header struct {
	// TextStart is the address of runtime.text (function entries are
	// offsets from it); 0: the header's own field (Go 1.20 to 1.25).
	TextStart uint64
	// ReadGoFunc reads n bytes of the binary's go:func.* data at offset
	// off; nil when it could not be found (no inline trees).
	ReadGoFunc func(off uint64, n int) ([]byte, error)
}

// Parse reads a table from data, the bytes of .gopclntab (copied: data is
// not kept), and the inline trees through h.ReadGoFunc.
func Parse(data []byte, h Header, lim Limits) (*Table, error) {
	return parse(bytes.NewReader(data), int64(len(data)), h, lim)
}

// parse reads a table from r, the .gopclntab section of size bytes: the
// tables kept are read into their own buffer, the function records through
// a window of windowSize bytes, so that the section is never held whole.
func parse(r io.ReaderAt, size int64, h Header, lim Limits) (*Table, error) {
	if size < 8 {
		return nil, ErrNotGo
	}
	head := make([]byte, min(size, 8+8*8))
	if _, err := r.ReadAt(head, 0); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var order binary.ByteOrder
	switch {
	case binary.LittleEndian.Uint32(head) == go120Magic:
		order = binary.LittleEndian
	case binary.BigEndian.Uint32(head) == go120Magic:
		order = binary.BigEndian
	default:
		for _, o := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			switch o.Uint32(head) {
			case 0xfffffff0, 0xfffffffa, 0xfffffffb: // Go 1.18-1.19, 1.16-1.17, 1.2-1.15
				return nil, ErrUnsupported
			}
		}
		return nil, ErrNotGo
	}
	if head[4] != 0 || head[5] != 0 {
		return nil, ErrMalformed
	}
	quantum, ptrSize := uint64(head[6]), int(head[7])
	if (quantum != 1 && quantum != 2 && quantum != 4) || (ptrSize != 4 && ptrSize != 8) {
		return nil, ErrMalformed
	}
	if len(head) < 8+8*ptrSize {
		return nil, ErrMalformed
	}
	word := func(i int) uint64 {
		p := head[8+i*ptrSize:]
		if ptrSize == 8 {
			return order.Uint64(p)
		}
		return uint64(order.Uint32(p))
	}
	nfunc := word(0)
	t := &Table{order: order, quantum: quantum, textStart: h.TextStart}
	if t.textStart == 0 {
		t.textStart = word(2)
	}
	// Offsets of the tables, in the order the linker writes them.
	offs := [5]uint64{word(3), word(4), word(5), word(6), word(7)} // funcname, cu, file, pc, pcln
	for i, o := range offs {
		if o < uint64(8+8*ptrSize) || o > uint64(size) || (i > 0 && o < offs[i-1]) {
			return nil, ErrMalformed
		}
	}
	// functab: nfunc+1 pairs {entryOff, funcOff} at the start of pclntab.
	pclnLen := uint64(size) - offs[4]
	if nfunc == 0 || pclnLen < 16 || nfunc > pclnLen/8-1 {
		return nil, ErrMalformed
	}
	kept := int(offs[4]-offs[0]) + int(nfunc)*funcRecSize
	if kept > lim.MaxBytes || kept < 0 {
		return nil, ErrTooLarge
	}
	own := make([]byte, offs[4]-offs[0])
	if _, err := r.ReadAt(own, int64(offs[0])); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	base := offs[0]
	t.funcnametab = own[offs[0]-base : offs[1]-base]
	t.cutab = own[offs[1]-base : offs[2]-base]
	t.filetab = own[offs[2]-base : offs[3]-base]
	t.pctab = own[offs[3]-base : offs[4]-base]
	t.funcs = make([]funcRec, 0, nfunc)
	// The functab and the records, through windows of their own (the
	// records follow the functab, in about the same order).
	ftab := &window{r: r, size: size}
	recs := &window{r: r, size: size}
	prev := uint32(0)
	for i := uint64(0); i < nfunc; i++ {
		fe, err := ftab.read(offs[4]+i*8, 8)
		if err != nil {
			return nil, ErrMalformed
		}
		entry := order.Uint32(fe)
		off := uint64(order.Uint32(fe[4:]))
		if entry < prev {
			return nil, ErrMalformed // the binary search needs them in order
		}
		prev = entry
		if off > pclnLen || pclnLen-off < funcFixedSize {
			return nil, ErrMalformed
		}
		rec, err := recs.read(offs[4]+off, funcFixedSize)
		if err != nil {
			return nil, ErrMalformed
		}
		npc := uint64(order.Uint32(rec[funcNpcdata:]))
		nfd := uint64(rec[funcNfuncdata])
		if uint64(funcFixedSize)+4*npc+4*nfd > pclnLen-off || order.Uint32(rec[funcEntryOff:]) != entry {
			return nil, ErrMalformed // the functab and the record disagree
		}
		f := funcRec{
			entry:     entry,
			nameOff:   order.Uint32(rec[funcNameOff:]),
			pcfile:    order.Uint32(rec[funcPcfile:]),
			pcln:      order.Uint32(rec[funcPcln:]),
			cuOffset:  order.Uint32(rec[funcCuOffset:]),
			startLine: int32(order.Uint32(rec[funcStartLine:])),
			inlAt:     ^uint32(0),
		}
		if npc > pcdataInlIndex {
			v, err := recs.read(offs[4]+off+funcFixedSize+4*pcdataInlIndex, 4)
			if err != nil {
				return nil, ErrMalformed
			}
			f.inlIndex = order.Uint32(v)
		}
		if nfd > funcdataInl {
			// The inline tree's offset in go:func.*, until it is read.
			v, err := recs.read(offs[4]+off+funcFixedSize+4*npc+4*funcdataInl, 4)
			if err != nil {
				return nil, ErrMalformed
			}
			f.inlAt = order.Uint32(v)
		}
		t.funcs = append(t.funcs, f)
	}
	fe, err := ftab.read(offs[4]+nfunc*8, 4)
	if err != nil {
		return nil, ErrMalformed
	}
	t.textEnd = order.Uint32(fe)
	if t.textEnd < prev {
		return nil, ErrMalformed
	}
	if h.ReadGoFunc == nil {
		t.NoInlineTrees = true
		for i := range t.funcs {
			t.funcs[i].inlAt = 0
		}
		return t, nil
	}
	if err := t.readInlineTrees(h.ReadGoFunc, lim.MaxBytes-kept); err != nil {
		return nil, err
	}
	return t, nil
}

// windowSize is the bytes a window reads at once.
const windowSize = 1 << 20

// window reads bytes of r (of size bytes) windowSize bytes at a time.
type window struct {
	r    io.ReaderAt
	size int64
	off  uint64
	buf  []byte
}

// read returns n bytes at off (valid until the next read).
func (w *window) read(off uint64, n int) ([]byte, error) {
	if w.buf != nil && off >= w.off && off-w.off <= uint64(len(w.buf)) && uint64(n) <= uint64(len(w.buf))-(off-w.off) {
		return w.buf[off-w.off : off-w.off+uint64(n)], nil
	}
	if off > uint64(w.size) || uint64(n) > uint64(w.size)-off {
		return nil, io.ErrUnexpectedEOF
	}
	m := min(max(uint64(n), windowSize), uint64(w.size)-off)
	if uint64(cap(w.buf)) < m {
		w.buf = make([]byte, m)
	}
	w.buf = w.buf[:m]
	if _, err := w.r.ReadAt(w.buf, int64(off)); err != nil && !errors.Is(err, io.EOF) {
		w.buf = nil
		return nil, err
	}
	w.off = off
	return w.buf[:n], nil
}

// readInlineTrees copies each function's inline tree (as many records as
// its PCDATA_InlTreeIndex table refers to) from the go:func.* data.
func (t *Table) readInlineTrees(read func(off uint64, n int) ([]byte, error), budget int) error {
	for i := range t.funcs {
		f := &t.funcs[i]
		off := f.inlAt
		f.inlAt = 0
		if off == ^uint32(0) || f.inlIndex == 0 {
			continue
		}
		// The tree's length: one past the largest index the function's
		// table uses.
		maxIdx := int32(-1)
		t.walkPCValue(f.inlIndex, t.textStart+uint64(f.entry), ^uint64(0), func(v int32) { maxIdx = max(maxIdx, v) })
		if maxIdx < 0 {
			continue
		}
		n := int(maxIdx) + 1
		if n > maxInlTreeLength {
			return ErrMalformed
		}
		if len(t.inl)+n*inlCallSize > budget || len(t.inl)+n*inlCallSize > 1<<32-1 {
			return ErrTooLarge
		}
		b, err := read(uint64(off), n*inlCallSize)
		if err != nil || len(b) != n*inlCallSize {
			// Out of the binary's data: this function's frames are its
			// own, without inlined calls.
			continue
		}
		f.inlAt, f.inlLen = uint32(len(t.inl)), uint32(n)
		t.inl = append(t.inl, b...)
	}
	t.inl = t.inl[:len(t.inl):len(t.inl)]
	return nil
}

// Size is an estimate of the memory the table keeps, in bytes.
func (t *Table) Size() int {
	return len(t.funcnametab) + len(t.cutab) + len(t.filetab) + len(t.pctab) + cap(t.funcs)*funcRecSize + cap(t.inl) + 256
}

// TextStart is the address function entries are offsets from.
func (t *Table) TextStart() uint64 { return t.textStart }

// TextEnd is the address where the table's last function ends.
func (t *Table) TextEnd() uint64 { return t.textStart + uint64(t.textEnd) }

// Funcs is the number of functions of the table.
func (t *Table) Funcs() int { return len(t.funcs) }

// funcRange returns function i's name and [entry, end) addresses.
func (t *Table) funcRange(i int) (string, uint64, uint64) {
	name, _ := cstring(t.funcnametab, uint64(t.funcs[i].nameOff))
	return name, t.textStart + uint64(t.funcs[i].entry), t.textStart + uint64(t.end(i))
}

// end is the offset from textStart where function i ends.
func (t *Table) end(i int) uint32 {
	if i+1 < len(t.funcs) {
		return t.funcs[i+1].entry
	}
	return t.textEnd
}

// find returns the index of the function holding pc, -1 if none.
func (t *Table) find(pc uint64) int {
	if pc < t.textStart || pc-t.textStart >= 1<<32 {
		return -1
	}
	off := uint32(pc - t.textStart)
	// The last i with entry(i) <= off.
	lo, hi := 0, len(t.funcs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.funcs[m].entry <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo - 1
	if i < 0 || off >= t.end(i) {
		return -1
	}
	return i
}

// readVarint reads an unsigned varint of at most 5 bytes.
func readVarint(p []byte) (n int, v uint32, ok bool) {
	var shift uint
	for n < len(p) && n < 5 {
		b := p[n]
		n++
		v |= uint32(b&0x7f) << shift
		if b&0x80 == 0 {
			return n, v, true
		}
		shift += 7
	}
	return 0, 0, false
}

// walkPCValue decodes the pc-value table at off of a function entering at
// entry, calling visit with each value, until the entry holding target
// (^0: to its end). It returns the value at target, -1 when there is none.
func (t *Table) walkPCValue(off uint32, entry, target uint64, visit func(int32)) int32 {
	if off == 0 || uint64(off) >= uint64(len(t.pctab)) {
		return -1
	}
	p := t.pctab[off:]
	pc, val := entry, int32(-1)
	for step := 0; step < maxPCValueSteps; step++ {
		n, uv, ok := readVarint(p)
		if !ok || (uv == 0 && step > 0) {
			return -1 // the end of the table, or a table cut short
		}
		p = p[n:]
		val += int32(-(uv & 1) ^ (uv >> 1))
		n, pcd, ok := readVarint(p)
		if !ok || pcd == 0 {
			return -1
		}
		p = p[n:]
		pc += uint64(pcd) * t.quantum
		if visit != nil {
			visit(val)
		}
		if target < pc {
			return val
		}
	}
	return -1
}

func (t *Table) pcvalue(f *funcRec, off uint32, pc uint64) int32 {
	return t.walkPCValue(off, t.textStart+uint64(f.entry), pc, nil)
}

// cstring returns the NUL-terminated string at off of tab, cut at
// maxNameLen; ok is false when off is outside tab.
func cstring(tab []byte, off uint64) (string, bool) {
	if off >= uint64(len(tab)) {
		return "", false
	}
	b := tab[off:]
	end := min(len(b), maxNameLen)
	for i := 0; i < end; i++ {
		if b[i] == 0 {
			return string(b[:i]), true
		}
	}
	return string(b[:end]), true
}

// fileLine returns the file and line of pc in f ("", 0 when unknown).
func (t *Table) fileLine(f *funcRec, pc uint64) (string, int64) {
	fileno := t.pcvalue(f, f.pcfile, pc)
	line := t.pcvalue(f, f.pcln, pc)
	if fileno < 0 || line < 0 {
		return "", 0
	}
	ci := uint64(f.cuOffset) + uint64(fileno)
	if ci >= uint64(len(t.cutab))/4 {
		return "", int64(line)
	}
	fo := t.order.Uint32(t.cutab[ci*4:])
	if fo == ^uint32(0) {
		return "", int64(line)
	}
	file, _ := cstring(t.filetab, uint64(fo))
	return file, int64(line)
}

// Lookup appends to buf the frames at pc, innermost first: the inlined
// calls at pc, then the physical function. It appends nothing when no
// function holds pc. pc is a "call PC": the caller of a frame that is not
// the leaf looks up its return address minus one.
func (t *Table) Lookup(pc uint64, buf []Frame) []Frame {
	i := t.find(pc)
	if i < 0 {
		return buf
	}
	f := &t.funcs[i]
	name, ok := cstring(t.funcnametab, uint64(f.nameOff))
	if !ok || name == "" {
		return buf
	}
	entry, end := t.textStart+uint64(f.entry), t.textStart+uint64(t.end(i))
	start := len(buf)
	tree := t.inl[f.inlAt : f.inlAt+f.inlLen*inlCallSize]
	cur := pc
	for depth := 0; ; depth++ {
		idx := int32(-1)
		if len(tree) > 0 && depth < maxInlineDepth {
			idx = t.pcvalue(f, f.inlIndex, cur)
		}
		if idx < 0 || int(idx) >= len(tree)/inlCallSize {
			// The physical function.
			file, line := t.fileLine(f, cur)
			return append(buf, Frame{Function: forPrint(name), SystemName: name, File: file, Line: line, StartLine: int64(f.startLine)})
		}
		rec := tree[int(idx)*inlCallSize:]
		callee, ok := cstring(t.funcnametab, uint64(t.order.Uint32(rec[inlNameOff:])))
		if !ok || callee == "" {
			return buf[:start]
		}
		file, line := t.fileLine(f, cur)
		buf = append(buf, Frame{Function: forPrint(callee), SystemName: callee, File: file, Line: line, StartLine: int64(int32(t.order.Uint32(rec[inlStartLine:])))})
		parent := int64(int32(t.order.Uint32(rec[inlParentPc:])))
		next := uint64(int64(entry) + parent)
		if parent < 0 || next >= end {
			return buf[:start]
		}
		cur = next
	}
}

// forPrint is the runtime's funcNameForPrint: the part of a generic
// function's name from its first '[' to its last ']' as "[...]".
func forPrint(name string) string {
	i := strings.IndexByte(name, '[')
	j := strings.LastIndexByte(name, ']')
	if i < 0 || j <= i {
		return name
	}
	return name[:i] + "[...]" + name[j+1:]
}
