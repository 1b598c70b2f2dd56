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
// checked before use, every walk is bounded (a function's pc-value walks by
// its code, the reading's all together by the size of the pc-value tables,
// a lookup's by maxLookupSteps), and what is kept is bounded by
// Limits.MaxBytes, so a malformed table gives errors and fewer frames, never
// a panic nor more memory or time.
package gopclntab // import "github.com/nexovue/otelcol-nexovue/internal/gopclntab"

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
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
	// ErrNoTextStart: the address function entries are offsets from
	// (runtime.text) cannot be found, or does not match the moduledata's
	// first function (a stripped binary linked externally, whose .text
	// begins with C code, gives no other).
	ErrNoTextStart = errors.New("gopclntab: runtime.text not found")
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
	inlParentIdx     = 0       // in the copy kept: the parent's index (see readInlineTrees)
	maxInlineDepth   = 64      // inlined calls followed per address
	maxLookupSteps   = 1 << 20 // pc-value entries decoded per lookup, its three tables together
	maxNameLen       = 4096    // a function or file name longer than this is cut
	maxInlTreeLength = 1 << 16 // records of one function's inline tree

	// loadStepsPerByte bounds the pc-value entries the reading of the
	// inline trees decodes, all functions together, per byte of the
	// pc-value tables. An entry takes two bytes at least, and only the
	// inline-index tables are walked, twice (their length, then their
	// parents): a table walked once per function that uses it stays
	// below one step per byte (0.12 to 0.16 for the test binary, the Go
	// compiler and the collector). Functions that share one long table
	// (the linker shares identical tables; a hostile file, one for all)
	// cannot make it more: the reading stops, ErrMalformed.
	loadStepsPerByte = 2
	loadStepsMin     = 1 << 16
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

	// loadSteps is the pc-value entries decoded while reading the table.
	loadSteps int
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
	// MinPC and MaxPC, when not 0, are the moduledata's: the addresses
	// of the first function and of the last one's end, which TextStart
	// plus the table's entries must give (else ErrNoTextStart).
	MinPC, MaxPC uint64
	// TextSectionSize, when not 0, tells that TextStart is the .text
	// section's address, for want of a better source, and is its size:
	// the table's code must fill it (at most maxTextPadding bytes after
	// its last function), else ErrNoTextStart (C code linked in could be
	// before it).
	TextSectionSize uint64

	// steps, when set (by tests), is given the pc-value entries decoded
	// while reading the table (when it fails too).
	steps *int
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
		if i > 0 && entry <= prev {
			// The binary search needs them in order, and every function
			// a range of its own: its pc-value walks stop at its end.
			return nil, ErrMalformed
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
	if t.textEnd <= prev {
		return nil, ErrMalformed
	}
	switch {
	case h.MinPC != 0 && (t.textStart+uint64(t.funcs[0].entry) != h.MinPC || t.TextEnd() != h.MaxPC),
		h.MinPC == 0 && h.TextSectionSize != 0 && (t.funcs[0].entry != 0 || h.TextSectionSize < uint64(t.textEnd) || h.TextSectionSize-uint64(t.textEnd) > maxTextPadding):
		// The text start found is not the one the entries are
		// offsets from: every frame would be another function's.
		return nil, ErrNoTextStart
	}
	if h.ReadGoFunc == nil {
		t.NoInlineTrees = true
		for i := range t.funcs {
			t.funcs[i].inlAt = 0
		}
		return t, nil
	}
	err = t.readInlineTrees(h.ReadGoFunc, lim.MaxBytes-kept)
	if h.steps != nil {
		*h.steps = t.loadSteps
	}
	if err != nil {
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

// read returns n bytes at off (valid until the next read). Bytes the
// reader does not have (a file shorter than its section says) are an
// error, io.ErrUnexpectedEOF: never bytes of an earlier window.
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
	got, err := w.r.ReadAt(w.buf, int64(off))
	if err != nil && !errors.Is(err, io.EOF) {
		w.buf = nil
		return nil, err
	}
	w.buf, w.off = w.buf[:got], off
	if got < n {
		return nil, io.ErrUnexpectedEOF
	}
	return w.buf[:n], nil
}

// readInlineTrees copies each function's inline tree (as many records as
// its PCDATA_InlTreeIndex table refers to) from the go:func.* data, into
// one buffer of the trees' exact size, and writes into each record kept
// (over its funcID and padding, which lookups do not use) the index of its
// parent: the inline index at its parentPc (-1: the physical function;
// badParent: a parentPc outside the function). A lookup then follows the
// chain of inlined calls without walking a table again. Each walk stops at
// the function's end, and all of them at loadStepsPerByte steps per byte
// of the pc-value tables (ErrMalformed).
func (t *Table) readInlineTrees(read func(off uint64, n int) ([]byte, error), budget int) error {
	steps := max(loadStepsPerByte*len(t.pctab), loadStepsMin)
	defer func() { t.loadSteps = max(loadStepsPerByte*len(t.pctab), loadStepsMin) - steps }()
	// Each tree's length: one past the largest index the function's table
	// uses. Until the trees are read, inlAt is the tree's offset in
	// go:func.*, inlLen its length.
	total := 0
	for i := range t.funcs {
		f := &t.funcs[i]
		if f.inlAt == ^uint32(0) || f.inlIndex == 0 {
			f.inlLen = 0
			continue
		}
		maxIdx := int32(-1)
		if !t.walkPCValue(f.inlIndex, t.textStart+uint64(f.entry), t.textStart+uint64(t.end(i)), &steps, func(_, _ uint64, v int32) bool {
			maxIdx = max(maxIdx, v)
			return true
		}) && steps <= 0 {
			return ErrMalformed
		}
		if maxIdx < 0 {
			f.inlLen = 0
			continue
		}
		n := int(maxIdx) + 1
		if n > maxInlTreeLength {
			return ErrMalformed
		}
		f.inlLen = uint32(n)
		total += n * inlCallSize
		if total > budget || total > 1<<32-1 {
			return ErrTooLarge
		}
	}
	t.inl = make([]byte, total)
	at := 0
	var targets []uint64
	for i := range t.funcs {
		f := &t.funcs[i]
		off, n := f.inlAt, int(f.inlLen)
		f.inlAt, f.inlLen = 0, 0
		if n == 0 {
			continue
		}
		b, err := read(uint64(off), n*inlCallSize)
		if err != nil || len(b) != n*inlCallSize {
			// Out of the binary's data: this function's frames are its
			// own, without inlined calls.
			continue
		}
		tree := t.inl[at : at+n*inlCallSize]
		copy(tree, b)
		f.inlAt, f.inlLen = uint32(at), uint32(n)
		at += n * inlCallSize
		// The parents: the records' parentPcs in order (each with its
		// record's index), the inline index at each, in one walk.
		entry, size := uint64(f.entry), uint64(t.end(i)-f.entry)
		targets = targets[:0]
		for r := 0; r < n; r++ {
			rec := tree[r*inlCallSize:]
			parent := int64(int32(t.order.Uint32(rec[inlParentPc:])))
			t.order.PutUint32(rec[inlParentIdx:], ^uint32(-badParent-1)) // badParent
			if parent >= 0 && uint64(parent) < size {
				targets = append(targets, uint64(parent)<<32|uint64(r))
				t.order.PutUint32(rec[inlParentIdx:], ^uint32(0)) // -1 unless the table says otherwise
			}
		}
		slices.Sort(targets)
		next := 0
		if !t.walkPCValue(f.inlIndex, t.textStart+entry, t.textStart+entry+size, &steps, func(lo, hi uint64, v int32) bool {
			for ; next < len(targets) && t.textStart+entry+targets[next]>>32 < hi; next++ {
				if v >= 0 && int(v) < n {
					t.order.PutUint32(tree[int(uint32(targets[next]))*inlCallSize+inlParentIdx:], uint32(v))
				}
			}
			return next < len(targets)
		}) && steps <= 0 {
			return ErrMalformed
		}
	}
	return nil
}

// badParent marks an inlined call whose parentPc is outside its function:
// the frames at an address inside it are not given.
const badParent = -2

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

// walkPCValue decodes the pc-value table at off of a function whose
// code is [entry, end), calling visit with each run of addresses [lo, hi)
// and its value, until visit returns false, the table ends, or its runs
// reach end. Each entry decoded takes one of *steps; it returns false
// when the table is malformed or *steps ran out before the walk ended.
func (t *Table) walkPCValue(off uint32, entry, end uint64, steps *int, visit func(lo, hi uint64, val int32) bool) bool {
	if off == 0 || uint64(off) >= uint64(len(t.pctab)) {
		return false
	}
	p := t.pctab[off:]
	pc, val := entry, int32(-1)
	for first := true; pc < end; first = false {
		if *steps <= 0 {
			return false
		}
		*steps--
		n, uv, ok := readVarint(p)
		if !ok {
			return false // a table cut short
		}
		if uv == 0 && !first {
			return true // the end of the table
		}
		p = p[n:]
		val += int32(-(uv & 1) ^ (uv >> 1))
		n, pcd, ok := readVarint(p)
		if !ok || pcd == 0 {
			return false
		}
		p = p[n:]
		lo := pc
		pc += uint64(pcd) * t.quantum
		if !visit(lo, pc, val) {
			return true
		}
	}
	return true
}

// valuesAt sets vals[k] to the value of the pc-value table at off at
// pcs[k] (-1 where it has none), for a function [entry, end), in one
// walk; order holds the indices of pcs by increasing address.
func (t *Table) valuesAt(off uint32, entry, end uint64, pcs []uint64, order []int, vals []int32, steps *int) {
	for k := range vals {
		vals[k] = -1
	}
	next := 0
	t.walkPCValue(off, entry, end, steps, func(_, hi uint64, v int32) bool {
		for ; next < len(order) && pcs[order[next]] < hi; next++ {
			vals[order[next]] = v
		}
		return next < len(order)
	})
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

// file returns the name of file fileno of f's compilation unit ("" when
// unknown).
func (t *Table) file(f *funcRec, fileno int32) string {
	if fileno < 0 {
		return ""
	}
	ci := uint64(f.cuOffset) + uint64(fileno)
	if ci >= uint64(len(t.cutab))/4 {
		return ""
	}
	fo := t.order.Uint32(t.cutab[ci*4:])
	if fo == ^uint32(0) {
		return ""
	}
	name, _ := cstring(t.filetab, uint64(fo))
	return name
}

// Lookup appends to buf the frames at pc, innermost first: the inlined
// calls at pc, then the physical function. It appends nothing when no
// function holds pc. pc is a "call PC": the caller of a frame that is not
// the leaf looks up its return address minus one.
func (t *Table) Lookup(pc uint64, buf []Frame) []Frame {
	buf, _ = t.lookup(pc, buf)
	return buf
}

// lookup is Lookup, which also returns the pc-value entries it decoded:
// each of the function's three tables (inline index, files, lines) is
// walked once, up to the largest address it needs, whatever the depth of
// the inlined calls; at most maxLookupSteps entries together.
func (t *Table) lookup(pc uint64, buf []Frame) ([]Frame, int) {
	i := t.find(pc)
	if i < 0 {
		return buf, 0
	}
	f := &t.funcs[i]
	name, ok := cstring(t.funcnametab, uint64(f.nameOff))
	if !ok || name == "" {
		return buf, 0
	}
	entry, end := t.textStart+uint64(f.entry), t.textStart+uint64(t.end(i))
	steps := maxLookupSteps
	tree := t.inl[f.inlAt : f.inlAt+f.inlLen*inlCallSize]
	// The chain of inlined calls at pc: recs[k] is the call at pcs[k],
	// pcs[k+1] its parentPc; the physical function is at pcs[depth].
	var pcs [maxInlineDepth + 1]uint64
	var recs [maxInlineDepth]int32
	pcs[0] = pc
	depth := 0
	if len(tree) > 0 {
		var idx [1]int32
		t.valuesAt(f.inlIndex, entry, end, pcs[:1], []int{0}, idx[:], &steps)
		for r := idx[0]; r >= 0 && int(r) < len(tree)/inlCallSize && depth < maxInlineDepth; depth++ {
			rec := tree[int(r)*inlCallSize:]
			recs[depth] = r
			r = int32(t.order.Uint32(rec[inlParentIdx:]))
			if r == badParent {
				return buf, maxLookupSteps - steps
			}
			pcs[depth+1] = entry + uint64(t.order.Uint32(rec[inlParentPc:]))
		}
	}
	// The file and line at each of the chain's addresses, in one walk of
	// each table.
	var order [maxInlineDepth + 1]int
	for k := 0; k <= depth; k++ {
		order[k] = k
	}
	slices.SortFunc(order[:depth+1], func(a, b int) int {
		switch {
		case pcs[a] < pcs[b]:
			return -1
		case pcs[a] > pcs[b]:
			return 1
		}
		return 0
	})
	var files, lines [maxInlineDepth + 1]int32
	t.valuesAt(f.pcfile, entry, end, pcs[:depth+1], order[:depth+1], files[:depth+1], &steps)
	t.valuesAt(f.pcln, entry, end, pcs[:depth+1], order[:depth+1], lines[:depth+1], &steps)
	used := maxLookupSteps - steps
	at := func(k int) (string, int64) {
		if files[k] < 0 || lines[k] < 0 {
			return "", 0
		}
		return t.file(f, files[k]), int64(lines[k])
	}
	start := len(buf)
	for k := 0; k < depth; k++ {
		rec := tree[int(recs[k])*inlCallSize:]
		callee, ok := cstring(t.funcnametab, uint64(t.order.Uint32(rec[inlNameOff:])))
		if !ok || callee == "" {
			return buf[:start], used
		}
		file, line := at(k)
		buf = append(buf, Frame{Function: forPrint(callee), SystemName: callee, File: file, Line: line, StartLine: int64(int32(t.order.Uint32(rec[inlStartLine:])))})
	}
	file, line := at(depth)
	return append(buf, Frame{Function: forPrint(name), SystemName: name, File: file, Line: line, StartLine: int64(f.startLine)}), used
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
