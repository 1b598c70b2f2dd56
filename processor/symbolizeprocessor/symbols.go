// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor"

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unsafe"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
	"github.com/nexovue/otelcol-nexovue/internal/gopclntab"
	"github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/dwarfindex"
)

// Sources of a frame's name (the source attribute of the frames_named
// metric).
const (
	sourceSymtab     = "symtab"      // the mapped file's symbol table
	sourceDebugFile  = "debug_file"  // a separate debug file's symbol table
	sourceDWARFLines = "dwarf_lines" // DWARF: lines and inlined calls
	sourceGopclntab  = "gopclntab"   // a Go binary's .gopclntab: Go frames with inlined calls and start lines
)

// Reasons a file failed (the reason attribute of the files_failed metric).
const (
	reasonNotFound  = "not_found"           // no such file where the process sees it, or not allowed
	reasonMismatch  = "mismatch"            // a file of that name, not the mapping's
	reasonTooLarge  = "too_large"           // past max_file_size_mib, or its DWARF past the memory allowed
	reasonMalformed = "malformed"           // an ELF file that cannot be read
	reasonDWARF     = "malformed_dwarf"     // its DWARF cannot be read (its symbol table is used)
	reasonDWZ       = "dwz"                 // its DWARF refers to a DWZ alternate file (.gnu_debugaltlink) that was not found or not usable
	reasonGopclntab = "malformed_gopclntab" // a Go binary's .gopclntab cannot be read (its Go frames stay as the profiler named them)
	reasonOldGo     = "unsupported_go"      // a Go binary older than Go 1.20 (its Go frames stay as the profiler named them)
	reasonGoText    = "unknown_go_text"     // a Go binary whose runtime.text cannot be found (a stripped binary linked externally, its moduledata not found): its Go frames stay as the profiler named them
)

// symbols is what the processor knows of one file identity: a symbol table
// (the mapped file's, or its debug file's) and, when DWARF was found, its
// lines and inlined calls.
type symbols struct {
	tab       *symtab
	tabSource string
	lines     *dwarfindex.Index // nil without DWARF
	// gotab is a Go binary's function table (nil: not a Go binary, or its
	// table could not be read).
	gotab *gopclntab.Table
	// goBinary: the file has a Go table (read or not): no second reading
	// (its DWARF would name only C code linked in).
	goBinary bool
	// goMemo keeps the frames of the addresses looked up in gotab (at most
	// maxGoMemo; then it starts again), goMemoBytes their estimated size:
	// a service's hot addresses come back in every batch.
	goMemo      map[uint64][]gopclntab.Frame
	goMemoBytes int
	// linesSource is the source the frames named from lines count under.
	linesSource string
	// awaitBuildID is set when a debuginfod server was asked for the
	// file's debug file: once it is fetched, the file is read again.
	awaitBuildID string
	// failures are the reasons of what could not be used on the way
	// (counted once, when the file is loaded).
	failures []string
	// origin, when set, is the frames_named source of every frame named
	// from these symbols (the debug file's debugCandidate.origin, such as
	// debuginfod); else symtab, debug_file or dwarf_lines by what named it.
	origin string
}

// namedBy is the frames_named source of a frame named by what (symtab,
// debug_file or dwarf_lines): the origin of the symbols when they have one.
func (s *symbols) namedBy(what string) string {
	if s.origin != "" {
		return s.origin
	}
	return what
}

// size is an estimate of the memory kept, in bytes.
func (s *symbols) size() int {
	n := s.tab.size
	if s.lines != nil {
		n += s.lines.Size()
	}
	if s.gotab != nil {
		n += s.gotab.Size() + s.goMemoBytes
	}
	return n
}

// loadLimits bound the reading of one file.
type loadLimits struct {
	maxFileSize int64    // max_file_size_mib: the files read
	indexBytes  int      // cache_size_mib: a file's DWARF sections read (decompressed), and the symbols and lines kept of it
	debugDirs   []string // debug_dirs
	// debuginfod fetches debug files (nil: off).
	debuginfod *debugfile.Debuginfod
	// symtabOnly reads the mapped file's symbol table alone, as the
	// processor did before DWARF (the benchmarks' baseline).
	symtabOnly bool
}

// loadSymbols reads a mapping's file at c (verified against id): its symbol
// table; DWARF from the file itself when it has some, else from the first
// separate debug file of the lookup chain (debugSources) that is the
// file's. The mapped file's symbol table stays when no debug file is found.
func loadSymbols(c candidate, id fileIdentity, lim loadLimits) (*symbols, error) {
	f, _, err := openMapped(c.open, id, lim.maxFileSize)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readSymbols(f, c, lim)
}

// readSymbols is loadSymbols once the file is open and verified.
func readSymbols(f io.ReaderAt, c candidate, lim loadLimits) (*symbols, error) {
	tab, err := parseSymtab(f, c.shown)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", c.open, err, errUnusable)
	}
	s := &symbols{tab: tab, tabSource: sourceSymtab}
	ef, err := safeELF(f)
	if err != nil {
		return s, nil
	}
	if s.addGopclntab(ef, lim) {
		// A Go binary: its Go frames are named from its table, read in
		// the first reading (or, when it failed, as the profiler named
		// them); its DWARF, which would name only the frames of C code
		// linked in (cgo), is not read.
		return s, nil
	}
	if lim.symtabOnly {
		return s, nil
	}
	if hasDWARF(ef) {
		s.addDWARF(ef, debugCandidate{pid: c.pid, path: c.shown}, lim)
		return s, nil
	}
	mf := &mappedFileInfo{pid: c.pid, shown: c.shown, debuginfod: lim.debuginfod}
	mf.buildID, _ = gnuBuildID(f)
	mf.link, mf.linkCRC, _ = debugLink(ef)
	for _, src := range debugSources {
		for _, dc := range src.candidates(mf, lim.debugDirs) {
			ok, reason := s.tryDebugFile(dc, mf, lim)
			if reason != "" {
				s.failures = append(s.failures, reason)
			}
			if ok {
				return s, nil
			}
		}
	}
	if mf.awaiting {
		s.awaitBuildID = strings.ToLower(mf.buildID)
	}
	// No debug file: the names of the file's MiniDebugInfo, if any.
	s.addMiniDebugInfo(ef, lim)
	return s, nil
}

// tryDebugFile uses the debug file at dc when it is the mapped file's. It
// returns whether it did, and the reason it failed when the file was there
// but could not be used ("" when it was not there).
func (s *symbols) tryDebugFile(dc debugCandidate, mf *mappedFileInfo, lim loadLimits) (bool, string) {
	r, size, closeFn, err := dc.openContent()
	if err != nil {
		return false, ""
	}
	defer closeFn()
	if size > lim.maxFileSize {
		return false, reasonTooLarge
	}
	if err := verifyDebugFile(r, size, mf, lim.maxFileSize); err != nil {
		if errors.Is(err, errNotTheFile) {
			return false, reasonMismatch
		}
		return false, reasonOf(err)
	}
	tab, err := parseSymtab(r, s.tab.path)
	if err != nil {
		return false, reasonMalformed
	}
	if len(tab.syms) > 0 {
		tab.segments = s.tab.segments // addresses translate by the mapped file's segments
		s.tab, s.tabSource = tab, sourceDebugFile
	}
	if ef, err := safeELF(r); err == nil && hasDWARF(ef) {
		s.addDWARF(ef, dc, lim)
	}
	s.origin = dc.origin
	return true, ""
}

// maxGoMemo bounds the addresses whose Go frames a file's symbols keep.
const maxGoMemo = 8192

// goFrames returns the Go frames at a file address (none: no function
// there), and the bytes the memo grew by (negative when it started again).
// keep tells whether to remember them: not for symbols that have left the
// cache (a batch that got them before another file's reading evicted
// them), whose growth the cache would not count.
func (s *symbols) goFrames(addr uint64, keep bool) ([]gopclntab.Frame, int) {
	if fs, ok := s.goMemo[addr]; ok {
		return fs, 0
	}
	fs := s.gotab.Lookup(addr, nil)
	if !keep {
		return fs, 0
	}
	grown := 0
	if len(s.goMemo) >= maxGoMemo || s.goMemo == nil {
		grown = -s.goMemoBytes
		s.goMemo, s.goMemoBytes = make(map[uint64][]gopclntab.Frame, 64), 0
	}
	n := 64 // the map entry
	for _, f := range fs {
		n += int(unsafe.Sizeof(f)) + len(f.Function) + len(f.SystemName) + len(f.File)
	}
	s.goMemo[addr] = fs
	s.goMemoBytes += n
	return fs, grown + n
}

// addGopclntab reads a Go binary's function table and inline trees,
// within what the cache leaves for them besides the symbol table. It
// returns whether the file is a Go binary (whose table was read or
// failed; goBinary is then set). Once the table is read and fits with
// it, the symbol table keeps the functions outside the Go table only (C
// code linked in with cgo); when it is not, the symbol table stays whole
// and names the Go functions of frames typed native. A failure is counted
// by the first reading (a second reading, of a file that is not a Go
// binary or whose table failed, fails the same way).
func (s *symbols) addGopclntab(ef *elf.File, lim loadLimits) bool {
	t, err := gopclntab.OpenWith(ef, gopclntab.Limits{MaxBytes: lim.indexBytes, SectionBytes: lim.indexBytes}, &s.tab.goSyms)
	var rest *symtab
	if err == nil {
		rest = s.tab.without(t.TextStart(), t.TextEnd())
		if rest.size+t.Size() > lim.indexBytes {
			err = gopclntab.ErrTooLarge
		}
	}
	if errors.Is(err, gopclntab.ErrNotGo) {
		return false
	}
	s.goBinary = true
	switch {
	case err == nil:
		s.gotab, s.tab = t, rest
	case !lim.symtabOnly:
	case errors.Is(err, gopclntab.ErrTooLarge):
		s.failures = append(s.failures, reasonTooLarge)
	case errors.Is(err, gopclntab.ErrUnsupported):
		s.failures = append(s.failures, reasonOldGo)
	case errors.Is(err, gopclntab.ErrNoTextStart):
		s.failures = append(s.failures, reasonGoText)
	default:
		s.failures = append(s.failures, reasonGopclntab)
	}
	return true
}

// inGoText tells whether a file address is in the Go table's code.
func (s *symbols) inGoText(addr uint64) bool {
	return s.gotab != nil && addr >= s.gotab.TextStart() && addr < s.gotab.TextEnd()
}

// addDWARF indexes a file's DWARF lines and inlined calls; a failure is
// recorded and the symbol table used alone.
// where is the file (as its process sees it), for its DWZ alternate file.
func (s *symbols) addDWARF(ef *elf.File, where debugCandidate, lim loadLimits) {
	// The sections read, decompressed, and the index kept each fit in
	// cache_size_mib, whatever the file holds (a DWZ alternate's too).
	d, err := dwarfindex.Open(ef, dwarfindex.Limits{SectionBytes: uint64(lim.indexBytes)})
	if err == nil {
		var altFailures []string
		s.lines, s.linesSource, altFailures, err = buildDWARF(ef, d, where, lim, dwarfindex.Limits{IndexBytes: lim.indexBytes - s.tab.size})
		s.failures = append(s.failures, altFailures...)
	}
	switch {
	case err == nil:
	case errors.Is(err, dwarfindex.ErrTooLarge):
		s.failures = append(s.failures, reasonTooLarge)
	case errors.Is(err, dwarfindex.ErrNoDWARF):
	default:
		s.failures = append(s.failures, reasonDWARF)
	}
}

// hasDWARF tells whether a file has line tables (not a stripped file's
// empty or NOBITS sections).
func hasDWARF(ef *elf.File) bool {
	for _, n := range []string{".debug_line", ".zdebug_line"} {
		if s := ef.Section(n); s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0 {
			return true
		}
	}
	return false
}

func safeELF(f io.ReaderAt) (ef *elf.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			ef, err = nil, fmt.Errorf("malformed ELF file: %v", p)
		}
	}()
	return elf.NewFile(f)
}

// reasonOf classifies why a file could not be used.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return reasonNotFound
	case errors.Is(err, errMismatch), errors.Is(err, errNotTheFile):
		return reasonMismatch
	case errors.Is(err, errTooLarge), errors.Is(err, dwarfindex.ErrTooLarge):
		return reasonTooLarge
	}
	return reasonMalformed
}
