// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package gopclntab // import "github.com/nexovue/otelcol-nexovue/internal/gopclntab"

import (
	"debug/elf"
	"fmt"
	"io"
)

// Words of runtime.moduledata (runtime/symtab.go, Go 1.20 to 1.26): the
// pcHeader pointer, then six slices, findfunctab, minpc, maxpc, text, …,
// rodata, gofunc.
const (
	mdPcHeader    = 0
	mdFuncnametab = 1
	mdMinPC       = 20
	mdMaxPC       = 21
	mdText        = 22
	mdRodata      = 39
	mdGofunc      = 40
	mdWords       = 41
)

// maxModuledataScan bounds the bytes of a section searched for the
// moduledata; maxRelocScan the bytes of dynamic relocations read (through
// a window) to find a PIE's.
const (
	maxModuledataScan = 16 << 20
	maxRelocScan      = 256 << 20
	maxTextPadding    = 64 // bytes of .text after the last Go function, when it holds Go code alone
)

// Symbols are a binary's runtime.text and go:func.* as its .symtab gives
// them (0: not there), for a caller that has read it.
type Symbols struct {
	Text, GoFunc uint64
}

// SymbolsOf returns the runtime.text and go:func.* of a symbol table.
func SymbolsOf(syms []elf.Symbol) Symbols {
	var out Symbols
	for _, s := range syms {
		switch {
		case s.Name == "runtime.text" && out.Text == 0:
			out.Text = s.Value
		case s.Name == "go:func.*" && out.GoFunc == 0:
			out.GoFunc = s.Value
		}
	}
	return out
}

// Open reads the Go function table of an ELF file, with the inline trees,
// within lim. It returns ErrNotGo for a file without one. It reads the
// file's .symtab when the moduledata does not give what it needs: OpenWith
// takes it from a caller that has read it.
func Open(ef *elf.File, lim Limits) (*Table, error) {
	return OpenWith(ef, lim, nil)
}

// OpenWith is Open with the binary's symbols read by the caller (nil:
// Open reads them when it needs them).
//
// The table is the .gopclntab section (kept by -ldflags=-s -w; PIE builds
// too). runtime.text, the base of function entries, is the moduledata's
// text field (the .go.module section since Go 1.26, else found in the data
// sections; in a PIE linked by a linker that leaves the words of dynamic
// relocations empty, lld's default, their addends), else the .symtab's
// runtime.text, else the pcHeader's own field (Go 1.20 to 1.25), else
// the .text section's address when .text holds the table's code alone
// (an external linker puts C code in it too). When the moduledata is
// found, its first function's address and its last one's end must be
// runtime.text plus the table's entries: else, and when no runtime.text
// is found, ErrNoTextStart (every frame would be another function's). The
// inline trees are read from go:func.* (the moduledata's gofunc field,
// else its symbol).
func OpenWith(ef *elf.File, lim Limits, syms *Symbols) (t *Table, err error) {
	defer func() {
		// debug/elf has panicked on hostile files before; a panic is a
		// malformed file, never the caller's end.
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("%w: %v", ErrMalformed, p)
		}
	}()
	sec := ef.Section(".gopclntab")
	if sec == nil {
		sec = ef.Section(".data.rel.ro.gopclntab")
	}
	if sec == nil || sec.Type == elf.SHT_NOBITS {
		return nil, ErrNotGo
	}
	if sec.Size < 16 || sec.Flags&elf.SHF_COMPRESSED != 0 {
		return nil, ErrMalformed // the linker never compresses it
	}
	if sec.Size > uint64(lim.SectionBytes) {
		return nil, ErrTooLarge
	}
	// The header, and what follows it up to the functab (the moduledata
	// is checked against them).
	data := make([]byte, min(sec.Size, 8+8*8))
	if _, err := sec.ReadAt(data, 0); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	ptr := 8
	if ef.Class == elf.ELFCLASS32 {
		ptr = 4
	}
	var h Header
	var text, gofunc uint64
	if md, ok := findModuledata(ef, sec.Addr, data, ptr); ok {
		if md[mdText] != 0 && md[mdText] <= md[mdMinPC] {
			text = md[mdText]
		}
		if md[mdRodata] != 0 && md[mdRodata] <= md[mdGofunc] {
			gofunc = md[mdGofunc]
		}
		if md[mdMinPC] != 0 && md[mdMaxPC] > md[mdMinPC] {
			h.MinPC, h.MaxPC = md[mdMinPC], md[mdMaxPC]
		}
	}
	if text == 0 || gofunc == 0 {
		if syms == nil {
			all, _ := ef.Symbols()
			s := SymbolsOf(all)
			syms = &s
		}
		if text == 0 {
			text = syms.Text
		}
		if gofunc == 0 {
			gofunc = syms.GoFunc
		}
	}
	if text == 0 && len(data) >= 8+3*ptr {
		text = word(ef.ByteOrder, data[8+2*ptr:], ptr)
	}
	if text == 0 {
		ts := ef.Section(".text")
		if ts == nil {
			return nil, ErrNoTextStart
		}
		text, h.TextSectionSize = ts.Addr, ts.Size
	}
	h.TextStart = text
	if gofunc != 0 {
		h.ReadGoFunc = goFuncReader(ef, gofunc)
	}
	return parse(sec, int64(sec.Size), h, lim)
}

// goFuncReader reads the go:func.* data at addr of the PT_LOAD segment
// holding it, through a window.
func goFuncReader(ef *elf.File, addr uint64) func(off uint64, n int) ([]byte, error) {
	for _, p := range ef.Progs {
		if p.Type != elf.PT_LOAD || addr < p.Vaddr || addr-p.Vaddr >= p.Filesz {
			continue
		}
		w := &window{r: p, size: int64(p.Filesz)}
		start := addr - p.Vaddr
		return func(off uint64, n int) ([]byte, error) {
			if off > uint64(p.Filesz)-start {
				return nil, io.ErrUnexpectedEOF
			}
			return w.read(start+off, n)
		}
	}
	return nil
}

func word(order interface {
	Uint64([]byte) uint64
	Uint32([]byte) uint32
}, b []byte, ptr int) uint64 {
	if ptr == 8 {
		return order.Uint64(b)
	}
	return uint64(order.Uint32(b))
}

// moduledataSections are the sections the moduledata is looked for in.
var moduledataSections = []string{".go.module", ".noptrdata", ".data.rel.ro", ".data"}

// findModuledata looks for runtime.firstmoduledata: a word that is the
// table's address followed by funcnametab's, in .go.module (Go 1.26), else
// .noptrdata, .data.rel.ro and .data; in a PIE whose dynamic relocations
// hold the words (RELA, their place left 0), among those relocations. It
// returns the first mdWords words.
func findModuledata(ef *elf.File, tabAddr uint64, tab []byte, ptr int) ([mdWords]uint64, bool) {
	var md [mdWords]uint64
	if len(tab) < 8+8*ptr {
		return md, false
	}
	fnameOff := word(ef.ByteOrder, tab[8+3*ptr:], ptr)
	for _, name := range moduledataSections {
		s := ef.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS || s.Size < uint64(mdWords*ptr) || s.Size > maxModuledataScan {
			continue
		}
		b := make([]byte, s.Size)
		if _, err := s.ReadAt(b, 0); err != nil {
			continue
		}
		for i := 0; i+mdWords*ptr <= len(b); i += ptr {
			if word(ef.ByteOrder, b[i:], ptr) != tabAddr || word(ef.ByteOrder, b[i+ptr:], ptr) != tabAddr+fnameOff {
				continue
			}
			for w := range md {
				md[w] = word(ef.ByteOrder, b[i+w*ptr:], ptr)
			}
			return md, true
		}
	}
	return relocatedModuledata(ef, tabAddr, tabAddr+fnameOff)
}

// relativeReloc is the relocation type of each machine that gives a word
// the load address plus its addend (R_*_RELATIVE).
var relativeReloc = map[elf.Machine]uint32{
	elf.EM_X86_64:    uint32(elf.R_X86_64_RELATIVE),
	elf.EM_AARCH64:   uint32(elf.R_AARCH64_RELATIVE),
	elf.EM_PPC64:     uint32(elf.R_PPC64_RELATIVE),
	elf.EM_RISCV:     uint32(elf.R_RISCV_RELATIVE),
	elf.EM_S390:      uint32(elf.R_390_RELATIVE),
	elf.EM_LOONGARCH: uint32(elf.R_LARCH_RELATIVE),
}

// relocatedModuledata finds the moduledata of a 64-bit PIE among its
// dynamic relative relocations (RELA): a relocation to the table's
// address, in one of moduledataSections, whose next word's relocation is
// to the name table's (name). Its words are the section's, with the
// relocations' addends where they have one.
func relocatedModuledata(ef *elf.File, tabAddr, nameAddr uint64) ([mdWords]uint64, bool) {
	var md [mdWords]uint64
	typ, ok := relativeReloc[ef.Machine]
	if !ok || ef.Class != elf.ELFCLASS64 {
		return md, false
	}
	var secs []*elf.Section
	for _, name := range moduledataSections {
		if s := ef.Section(name); s != nil && s.Type != elf.SHT_NOBITS && s.Size >= mdWords*8 {
			secs = append(secs, s)
		}
	}
	in := func(addr uint64) *elf.Section {
		for _, s := range secs {
			if addr >= s.Addr && addr-s.Addr <= s.Size-mdWords*8 {
				return s
			}
		}
		return nil
	}
	// Each relative relocation's place and addend, through a window.
	each := func(fn func(off, addend uint64)) {
		for _, s := range ef.Sections {
			if s.Type != elf.SHT_RELA || s.Size > maxRelocScan || s.Flags&elf.SHF_ALLOC == 0 {
				continue
			}
			w := &window{r: s, size: int64(s.Size)}
			for at := uint64(0); at+24 <= s.Size; at += 24 {
				r, err := w.read(at, 24)
				if err != nil {
					break
				}
				if uint32(ef.ByteOrder.Uint64(r[8:])) == typ {
					fn(ef.ByteOrder.Uint64(r), ef.ByteOrder.Uint64(r[16:]))
				}
			}
		}
	}
	// The places relocated to the table's address, then the addends of
	// the words from each.
	var cands []uint64
	each(func(off, addend uint64) {
		if addend == tabAddr && len(cands) < 8 && in(off) != nil {
			cands = append(cands, off)
		}
	})
	if len(cands) == 0 {
		return md, false
	}
	addends := map[uint64]uint64{}
	each(func(off, addend uint64) {
		for _, c := range cands {
			if off >= c && off < c+mdWords*8 {
				addends[off] = addend
			}
		}
	})
	for _, c := range cands {
		if addends[c+8] != nameAddr {
			continue
		}
		s := in(c)
		b := make([]byte, mdWords*8)
		if _, err := s.ReadAt(b, int64(c-s.Addr)); err != nil {
			continue
		}
		for w := range md {
			md[w] = ef.ByteOrder.Uint64(b[w*8:])
			if a, ok := addends[c+uint64(w)*8]; ok {
				md[w] = a
			}
		}
		return md, true
	}
	return md, false
}
