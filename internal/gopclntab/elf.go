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
	mdText        = 22
	mdRodata      = 39
	mdGofunc      = 40
	mdWords       = 41
)

// maxModuledataScan bounds the bytes of a section searched for the
// moduledata.
const maxModuledataScan = 16 << 20

// Open reads the Go function table of an ELF file, with the inline trees,
// within lim. It returns ErrNotGo for a file without one.
//
// The table is the .gopclntab section (kept by -ldflags=-s -w; PIE builds
// too). runtime.text, the base of function entries, is the .symtab's
// runtime.text when the file has one, else the moduledata's text field
// (the .go.module section since Go 1.26, found in the data sections before
// it), else the pcHeader's own field (Go 1.20 to 1.25), else the .text
// section's address. The inline trees are read from go:func.* (its symbol,
// else the moduledata's gofunc field).
func Open(ef *elf.File, lim Limits) (t *Table, err error) {
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
	var text, gofunc uint64
	if md, ok := findModuledata(ef, sec.Addr, data, ptr); ok {
		if md[mdText] != 0 && md[mdText] <= md[mdMinPC] {
			text = md[mdText]
		}
		if md[mdRodata] != 0 && md[mdRodata] <= md[mdGofunc] {
			gofunc = md[mdGofunc]
		}
	}
	if text == 0 || gofunc == 0 {
		// A PIE build whose moduledata holds relocations, not addresses.
		if syms, err := ef.Symbols(); err == nil {
			for _, s := range syms {
				switch {
				case s.Name == "runtime.text" && text == 0:
					text = s.Value
				case s.Name == "go:func.*" && gofunc == 0:
					gofunc = s.Value
				}
			}
		}
	}
	if text == 0 && len(data) >= 8+3*ptr {
		text = word(ef.ByteOrder, data[8+2*ptr:], ptr)
	}
	if text == 0 {
		if ts := ef.Section(".text"); ts != nil {
			text = ts.Addr
		}
	}
	h := Header{TextStart: text}
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

// findModuledata looks for runtime.firstmoduledata: a word that is the
// table's address followed by funcnametab's, in .go.module (Go 1.26), else
// .noptrdata, .data.rel.ro and .data. It checks minpc against the table's
// first function. It returns the first mdWords words.
func findModuledata(ef *elf.File, tabAddr uint64, tab []byte, ptr int) ([mdWords]uint64, bool) {
	var md [mdWords]uint64
	if len(tab) < 8+8*ptr {
		return md, false
	}
	fnameOff := word(ef.ByteOrder, tab[8+3*ptr:], ptr)
	for _, name := range []string{".go.module", ".noptrdata", ".data.rel.ro", ".data"} {
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
	return md, false
}
