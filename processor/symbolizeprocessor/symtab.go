// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor"

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ianlancetaylor/demangle"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
	"github.com/nexovue/otelcol-nexovue/internal/gopclntab"
)

// maxSymbolNameLen bounds the length of a symbol name kept (longer ones are
// cut) and given to the demangler.
const maxSymbolNameLen = 4096

// pageSize is the page size the loader aligns a segment's mapping to (the
// mapping's file offset may come before the segment's own offset).
const pageSize = 4096

// symbol is a function symbol of an ELF file: [addr, addr+size), or up to
// the next symbol when size is 0.
type symbol struct {
	addr uint64
	size uint64
	// name is the symbol's name in the table's names blob.
	nameOff, nameLen uint32
}

// loadSegment is an executable PT_LOAD program header: the profiler maps
// only executable mappings, and only they translate a mapping's file offset
// (a page-aligned offset may fall in the last page of the read-only segment
// before, as lld lays files out).
type loadSegment struct {
	off, vaddr, filesz uint64
}

// symtab is the parsed symbol table of one ELF file (one file identity).
type symtab struct {
	// path is the file's path as the process sees it (the function's
	// filename).
	path     string
	segments []loadSegment
	syms     []symbol // sorted by addr, one per addr
	names    string
	// demangled memoizes the demangled name per symbol index (filled as
	// symbols are looked up).
	demangled map[int]string
	// size is an estimate of the table's memory, in bytes.
	size int
	// goSyms are runtime.text and go:func.* in the file's .symtab (a Go
	// binary's table reads them from here: .symtab is read once).
	goSyms gopclntab.Symbols
}

// symbolizedName is the name of a symbol, demangled, and its raw name.
type symbolizedName struct {
	name, raw string
}

// vaddr translates an address of a mapping into the file's virtual address
// space: memStart is mapped from the file's fileOffset. The eBPF profiler
// sends addresses and mapping bounds already in the file's virtual address
// space (memStart is the virtual address fileOffset loads at), where this
// is the identity; a producer of process addresses (pprof's convention) gets
// them translated by the same formula.
func (st *symtab) vaddr(addr, memStart, memLimit, fileOffset uint64) (uint64, bool) {
	if memStart == 0 && memLimit == 0 {
		return addr, true // no range: the address is the file's
	}
	if addr < memStart {
		return 0, false
	}
	for _, s := range st.segments {
		aligned := s.off &^ (pageSize - 1)
		if fileOffset >= aligned && fileOffset < s.off+s.filesz {
			base := s.vaddr - (s.off - fileOffset)
			return addr - memStart + base, true
		}
	}
	return 0, false
}

// lookup returns the index of the symbol holding the file virtual address
// addr, or -1.
func (st *symtab) lookup(addr uint64) int {
	i, found := slices.BinarySearchFunc(st.syms, addr, func(s symbol, a uint64) int {
		switch {
		case s.addr < a:
			return -1
		case s.addr > a:
			return 1
		}
		return 0
	})
	if !found {
		i-- // the last symbol starting below addr
	}
	if i < 0 {
		return -1
	}
	s := st.syms[i]
	if s.size > 0 {
		if addr-s.addr >= s.size {
			return -1
		}
		return i
	}
	if i+1 < len(st.syms) || addr == s.addr {
		return i // up to the next symbol
	}
	return -1 // past the last symbol, which has no size
}

// name returns the demangled and raw names of symbol i. The demangled name
// is memoized; grown is the bytes it added to the table.
func (st *symtab) name(i int) (n symbolizedName, grown int) {
	s := st.syms[i]
	raw := st.names[s.nameOff : s.nameOff+s.nameLen]
	if d, ok := st.demangled[i]; ok {
		return symbolizedName{name: d, raw: raw}, 0
	}
	d := demangleName(raw)
	if d == raw {
		d = raw // share the memory
	} else {
		grown = len(d)
	}
	if st.demangled == nil {
		st.demangled = map[int]string{}
	}
	st.demangled[i] = d
	grown += 48 // the map entry
	st.size += grown
	return symbolizedName{name: d, raw: raw}, grown
}

// demangleName demangles a C++ (Itanium ABI) or Rust (legacy or v0) name,
// without the function's parameters or clone suffixes (".cold",
// ".isra.0"), so that every clone of a function shows as the function. Other
// names are returned as they are.
func demangleName(raw string) string {
	if !strings.HasPrefix(raw, "_Z") && !strings.HasPrefix(raw, "_R") {
		return raw
	}
	d, err := demangle.ToString(raw, demangle.NoParams, demangle.NoEnclosingParams, demangle.MaxLength(14))
	if err != nil || d == "" {
		return raw
	}
	return d
}

// errTooLarge is returned for a file larger than max_file_size_mib.
var errTooLarge = errors.New("file larger than max_file_size_mib")

// parseSymtab reads the function symbols of an ELF file: .symtab, else
// .dynsym. It never panics, whatever the file holds: the standard library's
// ELF reader is guarded, and a panic in it is returned as an error.
func parseSymtab(r io.ReaderAt, path string) (st *symtab, err error) {
	defer func() {
		if p := recover(); p != nil {
			st, err = nil, fmt.Errorf("malformed ELF file: %v", p)
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	st = &symtab{path: path}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			st.segments = append(st.segments, loadSegment{off: p.Off, vaddr: p.Vaddr, filesz: p.Filesz})
		}
	}
	syms, err := f.Symbols()
	st.goSyms = gopclntab.SymbolsOf(syms)
	if err != nil || !hasFunctions(syms) {
		if dyn, derr := f.DynamicSymbols(); derr == nil {
			syms, err = dyn, nil
		}
	}
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, err
	}
	st.build(syms)
	return st, nil
}

func hasFunctions(syms []elf.Symbol) bool {
	for _, s := range syms {
		if isFunction(s) {
			return true
		}
	}
	return false
}

func isFunction(s elf.Symbol) bool {
	t := elf.ST_TYPE(s.Info)
	return (t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC) &&
		s.Section != elf.SHN_UNDEF && s.Value != 0 && s.Name != ""
}

// build keeps the function symbols, one per address: of aliases, a global
// one before a weak one before a local one, then a name without a leading
// underscore, then the shortest, then the first in byte order.
func (st *symtab) build(syms []elf.Symbol) {
	kept := make([]elf.Symbol, 0, len(syms))
	for _, s := range syms {
		if isFunction(s) {
			if len(s.Name) > maxSymbolNameLen {
				s.Name = s.Name[:maxSymbolNameLen]
			}
			kept = append(kept, s)
		}
	}
	slices.SortFunc(kept, func(a, b elf.Symbol) int {
		if a.Value != b.Value {
			if a.Value < b.Value {
				return -1
			}
			return 1
		}
		return preferSymbol(a, b)
	})
	var names bytes.Buffer
	for i, s := range kept {
		if i > 0 && kept[i-1].Value == s.Value {
			continue // an alias of the preferred symbol before it
		}
		size := s.Size
		st.syms = append(st.syms, symbol{addr: s.Value, size: size, nameOff: uint32(names.Len()), nameLen: uint32(len(s.Name))})
		names.WriteString(s.Name)
	}
	st.syms = slices.Clip(st.syms)
	st.names = names.String()
	st.size = 256 + len(st.path) + len(st.names) + 24*len(st.syms) + 24*len(st.segments)
}

// without returns a copy of the table without the symbols in [lo, hi) (a
// Go binary's functions, which its Go table names), with the others' names
// only.
func (st *symtab) without(lo, hi uint64) *symtab {
	var names strings.Builder
	out := &symtab{path: st.path, segments: st.segments, goSyms: st.goSyms}
	var kept []symbol
	for _, s := range st.syms {
		if s.addr >= lo && s.addr < hi {
			continue
		}
		name := st.names[s.nameOff : s.nameOff+s.nameLen]
		s.nameOff = uint32(names.Len())
		names.WriteString(name)
		kept = append(kept, s)
	}
	out.syms = slices.Clip(kept)
	out.names = names.String()
	out.size = 256 + len(out.path) + len(out.names) + 24*len(out.syms) + 24*len(out.segments)
	return out
}

func bindRank(s elf.Symbol) int {
	switch elf.ST_BIND(s.Info) {
	case elf.STB_GLOBAL:
		return 0
	case elf.STB_WEAK:
		return 1
	}
	return 2
}

func preferSymbol(a, b elf.Symbol) int {
	if ra, rb := bindRank(a), bindRank(b); ra != rb {
		return ra - rb
	}
	ua, ub := strings.HasPrefix(a.Name, "_"), strings.HasPrefix(b.Name, "_")
	if ua != ub {
		if ub {
			return -1
		}
		return 1
	}
	if len(a.Name) != len(b.Name) {
		return len(a.Name) - len(b.Name)
	}
	return strings.Compare(a.Name, b.Name)
}

// htlhash is the eBPF profiler's file id of a file
// (process.executable.build_id.htlhash): the first 16 bytes of the SHA-256
// of its first 4 KiB, its last 4 KiB and its size (8 bytes, big-endian),
// in lower-case hex.
func htlhash(r io.ReaderAt, size int64) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, min(size, 4096))); err != nil {
		return "", err
	}
	tail := min(size, 4096)
	if _, err := io.Copy(h, io.NewSectionReader(r, size-tail, tail)); err != nil {
		return "", err
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(size))
	h.Write(n[:])
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// gnuBuildID returns the GNU build id of an ELF file in hex ("" when it has
// none).
func gnuBuildID(r io.ReaderAt) (id string, err error) {
	defer func() {
		if p := recover(); p != nil {
			id, err = "", fmt.Errorf("malformed ELF file: %v", p)
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return "", err
	}
	id, err = debugfile.BuildID(f)
	if errors.Is(err, debugfile.ErrNoBuildID) {
		return "", nil
	}
	return id, err
}
