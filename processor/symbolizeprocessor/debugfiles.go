// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor"

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
	"github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/dwarfindex"
)

// Sources of names read by internal/debugfile (the source attribute of
// the frames_named metric, with those of symbols.go).
const (
	sourceDebuginfod    = "debuginfod"    // a debug file fetched from a debuginfod server
	sourceMiniDebugInfo = "minidebuginfo" // the mapped file's .gnu_debugdata
	sourceVDSO          = "vdso"          // the process's [vdso] mapping
	sourceDWZ           = "dwz"           // DWARF lines whose names are in a DWZ alternate file
)

// maxMiniDebugInfo caps a .gnu_debugdata section decompressed (a symbol
// table: Fedora's are tens to hundreds of KiB); with max_file_size_mib
// when that is lower.
const maxMiniDebugInfo = 64 << 20

// debuginfodStep is the lookup chain's last step: a debug file fetched by
// build ID from the configured debuginfod servers. A file not fetched yet
// is asked for here (the fetch runs on the client's workers) and the
// mapping's symbols are marked to be read again once it is there.
var debuginfodStep = debugSource{sourceDebuginfod, func(mf *mappedFileInfo, _ []string) []debugCandidate {
	if mf.debuginfod == nil || mf.buildID == "" {
		return nil
	}
	p, ok := mf.debuginfod.Lookup(strings.ToLower(mf.buildID))
	if !ok {
		mf.awaiting = true
		return nil
	}
	return []debugCandidate{{path: p, origin: sourceDebuginfod}}
}}

// addMiniDebugInfo uses the mapped file's MiniDebugInfo when it names more
// functions than its own symbol table (a stripped file keeps only its
// exported ones in .dynsym).
func (s *symbols) addMiniDebugInfo(ef *elf.File, lim loadLimits) {
	data, err := debugfile.MiniDebugInfo(ef, min(lim.maxFileSize, maxMiniDebugInfo))
	switch {
	case errors.Is(err, debugfile.ErrNoMiniDebugInfo):
		return
	case errors.Is(err, debugfile.ErrTooLarge):
		s.failures = append(s.failures, reasonTooLarge)
		return
	case err != nil:
		s.failures = append(s.failures, reasonMalformed)
		return
	}
	tab, err := parseSymtab(bytes.NewReader(data), s.tab.path)
	if err != nil {
		s.failures = append(s.failures, reasonMalformed)
		return
	}
	if len(tab.syms) > len(s.tab.syms) {
		tab.segments = s.tab.segments // addresses translate by the mapped file's segments
		s.tab, s.tabSource = tab, sourceMiniDebugInfo
	}
}

// openAlt finds the DWZ alternate file of a debug file: in the process's
// root (by build ID under /usr/lib/debug, then at the link's path), then
// in debug_dirs on the host.
func openAlt(ef *elf.File, where debugCandidate, lim loadLimits) (*debugfile.Alt, error) {
	link, err := debugfile.ReadAltLink(ef)
	if err != nil {
		return nil, err
	}
	self, _ := debugfile.BuildID(ef)
	dir := path.Dir(where.path)
	inRoot := func(p string) (*os.File, error) { return openInRoot(where.pid, p) }
	alt, err := debugfile.OpenAlt(link, self, dir, []string{globalDebugDir}, inRoot, int64(lim.indexBytes))
	if err == nil || len(lim.debugDirs) == 0 {
		return alt, err
	}
	hostLink := debugfile.AltLink{Path: path.Join(lim.debugDirs[0], path.Base(link.Path)), BuildID: link.BuildID}
	alt2, err2 := debugfile.OpenAlt(hostLink, self, lim.debugDirs[0], lim.debugDirs, os.Open, int64(lim.indexBytes))
	if err2 == nil {
		return alt2, nil
	}
	return nil, errors.Join(err, err2)
}

// buildDWARF indexes d, with the names of a DWZ alternate file when ef
// refers to one. It returns the source the frames it names count under.
func buildDWARF(ef *elf.File, d *dwarf.Data, where debugCandidate, lim loadLimits, limits dwarfindex.Limits) (*dwarfindex.Index, string, []string, error) {
	if ef.Section(".gnu_debugaltlink") == nil && ef.Section(".debug_sup") == nil {
		ix, err := dwarfindex.Build(d, limits, demangleName)
		return ix, sourceDWARFLines, nil, err
	}
	alt, err := openAlt(ef, where, lim)
	if err != nil {
		// Lines, and the names that are in the file itself.
		ix, err2 := dwarfindex.Build(d, limits, demangleName)
		return ix, sourceDWARFLines, []string{reasonDWZ}, err2
	}
	names := debugfile.Names{Main: d, Alt: alt}
	ix, err := dwarfindex.BuildWithAlt(d, limits, demangleName, names.Name)
	return ix, sourceDWZ, nil, err
}

// loadVDSO reads the vDSO of the mapping's processes from their memory and
// keeps its symbol table when it is the mapping's (same file id).
func loadVDSO(req loadRequest) (*symbols, error) {
	var errs []error
	for _, pr := range req.procs {
		if pr.pid <= 0 {
			continue
		}
		v, err := debugfile.ReadVDSO(procRoot, int(pr.pid))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r := bytes.NewReader(v.Image)
		switch {
		case req.id.htlhash != "":
			h, err := htlhash(r, int64(len(v.Image)))
			if err != nil || !strings.EqualFold(h, req.id.htlhash) {
				errs = append(errs, fmt.Errorf("[vdso] of %d: file id %s, mapping's %s: %w", pr.pid, h, req.id.htlhash, errMismatch))
				continue
			}
		case !strings.EqualFold(v.BuildID, req.id.gnu):
			errs = append(errs, fmt.Errorf("[vdso] of %d: build id %s, mapping's %s: %w", pr.pid, v.BuildID, req.id.gnu, errMismatch))
			continue
		}
		tab, err := parseSymtab(r, debugfile.VDSONames[0])
		if err != nil {
			return nil, fmt.Errorf("[vdso]: %w: %w", err, errUnusable)
		}
		return &symbols{tab: tab, tabSource: sourceVDSO}, nil
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("[vdso]: no process to read it from: %w", os.ErrNotExist)
	}
	return nil, errors.Join(errs...)
}

// loadHeld reads a mapping's file from the files the profiling receiver
// holds (debugfile.Held, or a test's): the file of a process that has exited, or of a
// container that stopped, which the profiler saw. Its debug files are
// looked for on the host.
func loadHeld(held *debugfile.HeldFiles, req loadRequest, lim loadLimits) (*symbols, bool) {
	if req.id.htlhash == "" {
		return nil, false
	}
	f, shown, ok := held.Open(req.id.htlhash)
	if !ok {
		return nil, false
	}
	defer f.Close()
	c := candidate{open: "/proc/self/fd/" + strconv.Itoa(int(f.Fd())), shown: shown}
	lim.symtabOnly = lim.symtabOnly || !req.full // as for a file found by its processes
	syms, err := loadSymbols(c, req.id, lim)
	return syms, err == nil
}
