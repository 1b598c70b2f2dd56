// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor"

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
)

// fileIdentity is what a mapping says of its file: the eBPF profiler's file
// id and the GNU build id (either may be empty).
type fileIdentity struct {
	htlhash, gnu string
}

// key is the cache key of the identity ("" when it has none: such a file
// cannot be verified and is not read).
func (id fileIdentity) key() string {
	switch {
	case id.htlhash != "":
		return "htlhash:" + id.htlhash
	case id.gnu != "":
		return "gnu:" + id.gnu
	}
	return ""
}

// errMismatch is returned for a file that is not the mapping's.
var errMismatch = errors.New("file identity does not match the mapping's build id")

// procRoot is where the processes' files are found (a variable for tests).
var procRoot = "/proc"

// maxMapsBytes bounds how much of a /proc/<pid>/maps file is read.
const maxMapsBytes = 4 << 20

// mapsPaths returns the paths of the files mapped by a process, as the
// process sees them, from /proc/<pid>/maps.
func mapsPaths(pid int64) ([]string, error) {
	f, err := os.Open(fmt.Sprintf("%s/%d/maps", procRoot, pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	seen := map[string]bool{}
	s := bufio.NewScanner(&limitedReader{r: f, n: maxMapsBytes})
	s.Buffer(make([]byte, 0, 4096), 64<<10)
	for s.Scan() {
		// start-end perms offset dev inode   path
		line := s.Text()
		fields := 0
		i := 0
		for i < len(line) && fields < 5 {
			for i < len(line) && line[i] != ' ' {
				i++
			}
			for i < len(line) && line[i] == ' ' {
				i++
			}
			fields++
		}
		p := strings.TrimSuffix(line[i:], " (deleted)")
		if !strings.HasPrefix(p, "/") || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, s.Err()
}

type limitedReader struct {
	r interface{ Read([]byte) (int, error) }
	n int
}

func (l *limitedReader) Read(b []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("maps file too large")
	}
	if len(b) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	l.n -= n
	return n, err
}

// candidate is a place to look for a mapping's file: the path to open and
// the path the process sees (the function's filename).
type candidate struct {
	open, shown string
}

// candidates returns where to look for a mapping's file, in order: through
// each process's root (/proc/<pid>/root/<path>, the path as the process
// sees it, in its container), then the same paths on the host. name is the
// mapping's filename: the eBPF profiler sends the file's base name, which is
// looked up among the process's mapped files (and its executable); an
// absolute path is taken as it is.
func candidates(name string, procs []procRef, maps func(pid int64) []string) []candidate {
	var inProcs, host []candidate
	seen := map[candidate]bool{}
	add := func(list *[]candidate, c candidate) {
		if !seen[c] {
			seen[c] = true
			*list = append(*list, c)
		}
	}
	for _, pr := range procs {
		var paths []string
		if strings.HasPrefix(name, "/") {
			paths = []string{name}
		} else {
			if pr.exe != "" && path.Base(pr.exe) == name {
				paths = append(paths, pr.exe)
			}
			if pr.pid > 0 {
				for _, p := range maps(pr.pid) {
					if path.Base(p) == name && p != pr.exe {
						paths = append(paths, p)
					}
				}
			}
		}
		for _, p := range paths {
			if pr.pid > 0 {
				add(&inProcs, candidate{open: procRoot + "/" + strconv.FormatInt(pr.pid, 10) + "/root" + p, shown: p})
			}
			add(&host, candidate{open: p, shown: p})
		}
	}
	if strings.HasPrefix(name, "/") {
		add(&host, candidate{open: name, shown: name})
	}
	return append(inProcs, host...)
}

// procRef is a process whose stacks hold a mapping: its pid (0 when
// unknown) and executable path.
type procRef struct {
	pid int64
	exe string
}

// loadFile opens the file at path (open: the path to open; shown: the path
// the process sees), checks that it is the mapping's file and parses its
// symbol table.
func loadFile(open, shown string, id fileIdentity, maxSize int64) (*symtab, error) {
	f, err := os.Open(open)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", open)
	}
	if fi.Size() > maxSize {
		return nil, fmt.Errorf("%s: %d bytes: %w", open, fi.Size(), errTooLarge)
	}
	switch {
	case id.htlhash != "":
		h, err := htlhash(f, fi.Size())
		if err != nil {
			return nil, err
		}
		if !strings.EqualFold(h, id.htlhash) {
			return nil, fmt.Errorf("%s: file id %s, mapping's %s: %w", open, h, id.htlhash, errMismatch)
		}
	case id.gnu != "":
		b, err := gnuBuildID(f)
		if err != nil {
			return nil, err
		}
		if !strings.EqualFold(b, id.gnu) {
			return nil, fmt.Errorf("%s: GNU build id %q, mapping's %s: %w", open, b, id.gnu, errMismatch)
		}
	default:
		return nil, errMismatch
	}
	return parseSymtab(f, shown)
}
