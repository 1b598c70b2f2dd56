// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor"

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path"
	"strings"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
)

// globalDebugDir is the distribution's debug directory, as a process sees
// it in its own root.
const globalDebugDir = "/usr/lib/debug"

// mappedFileInfo is what a separate debug file is looked up by: the mapped
// file's path as its process sees it, the process's root, and the file's
// GNU build id and .gnu_debuglink.
type mappedFileInfo struct {
	// pid is the process whose root the file is seen in (0: the host's).
	pid     int64
	shown   string
	buildID string // hex, "" when the file has none
	link    string // .gnu_debuglink's file name, "" when it has none
	linkCRC uint32
	// debuginfod is the client of the debuginfod step (nil: off); awaiting
	// is set when it was asked for a file it has not fetched yet.
	debuginfod *debugfile.Debuginfod
	awaiting   bool
}

// debugCandidate is a place a separate debug file may be: a path opened in
// the root of a process (pid > 0) or on the host, or content that open
// gives (a debug file that is not a file of its own: MiniDebugInfo, say).
type debugCandidate struct {
	pid  int64
	path string
	// open, when set, gives the content in place of opening path; the
	// caller calls closeFn when done.
	open func() (r io.ReaderAt, size int64, closeFn func(), err error)
	// origin, when set, is the frames_named source of the frames it names
	// (such as "debuginfod"); else they count as debug_file or dwarf_lines.
	origin string
}

// openContent opens the candidate: its open function, else its path in
// its process's root, which must be a regular file.
func (dc debugCandidate) openContent() (io.ReaderAt, int64, func(), error) {
	if dc.open != nil {
		return dc.open()
	}
	f, err := openInRoot(dc.pid, dc.path)
	if err != nil {
		return nil, 0, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file", dc.path)
	}
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	return f, fi.Size(), func() { f.Close() }, nil
}

// debugSource is one step of the lookup chain of a mapped file's separate
// debug file: the places it names are tried in order, and a file there is
// used only when it is the mapped file's (same GNU build id, or the CRC its
// .gnu_debuglink states).
type debugSource struct {
	name       string
	candidates func(mf *mappedFileInfo, debugDirs []string) []debugCandidate
}

// debugSources is the lookup chain after the mapped file itself (whose own
// DWARF, when it has any, wins): the first verified hit wins. A step is
// added here.
var debugSources = []debugSource{
	// By build id in the process's root: <root>/usr/lib/debug/.build-id/xx/yyyy.debug.
	{"build_id", func(mf *mappedFileInfo, _ []string) []debugCandidate {
		if p := buildIDPath(globalDebugDir, mf.buildID); p != "" {
			return []debugCandidate{{pid: mf.pid, path: p}}
		}
		return nil
	}},
	// By .gnu_debuglink in the process's root: next to the file, in its
	// .debug directory, under the global debug directory.
	{"debuglink", func(mf *mappedFileInfo, _ []string) []debugCandidate {
		if mf.link == "" {
			return nil
		}
		dir := path.Dir(mf.shown)
		return []debugCandidate{
			{pid: mf.pid, path: path.Join(dir, mf.link)},
			{pid: mf.pid, path: path.Join(dir, ".debug", mf.link)},
			{pid: mf.pid, path: path.Join(globalDebugDir, dir, mf.link)},
		}
	}},
	// The configured debug_dirs, on the host: by build id, then by
	// debuglink (under the file's directory, then at the top).
	{"debug_dirs", func(mf *mappedFileInfo, dirs []string) []debugCandidate {
		var out []debugCandidate
		for _, d := range dirs {
			if p := buildIDPath(d, mf.buildID); p != "" {
				out = append(out, debugCandidate{path: p})
			}
			if mf.link != "" {
				out = append(out,
					debugCandidate{path: path.Join(d, path.Dir(mf.shown), mf.link)},
					debugCandidate{path: path.Join(d, mf.link)})
			}
		}
		return out
	}},
	// Last, a debuginfod server's (debugfiles.go).
	debuginfodStep,
}

// buildIDPath is the .build-id layout's path of a build id under dir ("" for
// an id that cannot be one).
func buildIDPath(dir, id string) string {
	id = strings.ToLower(id)
	if !debugfile.ValidBuildID(id) {
		return ""
	}
	return debugfile.BuildIDPath(dir, id)
}

// debugLink reads a file's .gnu_debuglink: the debug file's name and the
// CRC-32 of its content.
func debugLink(f *elf.File) (name string, crc uint32, ok bool) {
	s := f.Section(".gnu_debuglink")
	if s == nil || s.Type == elf.SHT_NOBITS || s.Size > 4096 {
		return "", 0, false
	}
	data, err := s.Data()
	if err != nil {
		return "", 0, false
	}
	n := bytes.IndexByte(data, 0)
	if n <= 0 {
		return "", 0, false
	}
	off := (n + 4) &^ 3
	if off+4 > len(data) {
		return "", 0, false
	}
	name = string(data[:n])
	if strings.Contains(name, "/") || name == "." || name == ".." {
		return "", 0, false // a file name, never a path
	}
	return name, f.ByteOrder.Uint32(data[off:]), true
}

// errNotTheFile is returned for a candidate debug file that is not the
// mapped file's.
var errNotTheFile = errors.New("not the mapped file's debug file")

// verifyDebugFile checks that f is the mapped file's debug file: the same
// GNU build id when the mapped file has one, else the CRC of its
// .gnu_debuglink (the whole file read, up to maxSize).
func verifyDebugFile(f io.ReaderAt, size int64, mf *mappedFileInfo, maxSize int64) error {
	if mf.buildID != "" {
		id, err := gnuBuildID(f)
		if err != nil {
			return err
		}
		if !strings.EqualFold(id, mf.buildID) {
			return fmt.Errorf("build id %q, the file's %s: %w", id, mf.buildID, errNotTheFile)
		}
		return nil
	}
	if mf.link == "" {
		return errNotTheFile
	}
	if size > maxSize {
		return fmt.Errorf("%d bytes: %w", size, errTooLarge)
	}
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, size)); err != nil {
		return err
	}
	if h.Sum32() != mf.linkCRC {
		return fmt.Errorf("CRC %08x, the debuglink's %08x: %w", h.Sum32(), mf.linkCRC, errNotTheFile)
	}
	return nil
}
