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

// mappedFile is a file a process maps: its path as the process sees it and
// the address ranges ("start-end", as /proc/<pid>/map_files names them) it
// is mapped at.
type mappedFile struct {
	path   string
	ranges []string
}

// maxRangesPerFile bounds the ranges kept per mapped file.
const maxRangesPerFile = 4

// mappedFiles returns the files mapped by a process, from /proc/<pid>/maps.
func mappedFiles(pid int64) ([]mappedFile, error) {
	f, err := os.Open(fmt.Sprintf("%s/%d/maps", procRoot, pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mappedFile
	index := map[string]int{}
	s := bufio.NewScanner(&limitedReader{r: f, n: maxMapsBytes})
	s.Buffer(make([]byte, 0, 4096), 64<<10)
	for s.Scan() {
		// start-end perms offset dev inode   path
		line := s.Text()
		rng, _, _ := strings.Cut(line, " ")
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
		if !strings.HasPrefix(p, "/") {
			continue
		}
		k, ok := index[p]
		if !ok {
			k = len(out)
			index[p] = k
			out = append(out, mappedFile{path: p})
		}
		if len(out[k].ranges) < maxRangesPerFile {
			out[k].ranges = append(out[k].ranges, rng)
		}
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
	// pid is the process whose root the file is seen in (0: the host's).
	pid int64
}

// candidates returns where to look for a mapping's file, in order: for
// each process, the file it maps itself (/proc/<pid>/map_files/<range>,
// which is the mapped file even when it was deleted or replaced on disk
// since), then its path through the process's root (/proc/<pid>/root/<path>,
// the path as the process sees it, in its container); then the same paths
// on the host. name is the mapping's filename: the eBPF profiler sends the
// file's base name, which is looked up among the process's mapped files
// (and its executable); an absolute path is taken as it is.
func candidates(name string, procs []procRef, maps func(pid int64) []mappedFile) []candidate {
	var inProcs, host []candidate
	seen := map[candidate]bool{}
	add := func(list *[]candidate, c candidate) {
		if !seen[c] {
			seen[c] = true
			*list = append(*list, c)
		}
	}
	matches := func(p string) bool {
		if strings.HasPrefix(name, "/") {
			return p == name
		}
		return path.Base(p) == name
	}
	for _, pr := range procs {
		root := procRoot + "/" + strconv.FormatInt(pr.pid, 10)
		var paths []string
		if pr.pid > 0 {
			for _, mf := range maps(pr.pid) {
				if !matches(mf.path) {
					continue
				}
				for _, r := range mf.ranges {
					add(&inProcs, candidate{open: root + "/map_files/" + mapFilesName(r), shown: mf.path, pid: pr.pid})
				}
				paths = append(paths, mf.path)
			}
		}
		if pr.exe != "" && matches(pr.exe) {
			paths = append(paths, pr.exe)
		}
		if strings.HasPrefix(name, "/") {
			paths = append(paths, name)
		}
		for _, p := range paths {
			if pr.pid > 0 {
				add(&inProcs, candidate{open: root + "/root" + p, shown: p, pid: pr.pid})
			}
			add(&host, candidate{open: p, shown: p})
		}
	}
	if strings.HasPrefix(name, "/") {
		add(&host, candidate{open: name, shown: name})
	}
	return append(inProcs, host...)
}

// mapFilesName is the name /proc/<pid>/map_files gives a range of
// /proc/<pid>/maps: maps pads addresses to 8 hex digits ("00400000-00401000",
// a non-PIE executable's), map_files does not ("400000-401000").
func mapFilesName(r string) string {
	lo, hi, _ := strings.Cut(r, "-")
	trim := func(s string) string {
		if t := strings.TrimLeft(s, "0"); t != "" {
			return t
		}
		return "0"
	}
	return trim(lo) + "-" + trim(hi)
}

// procRef is a process whose stacks hold a mapping: its pid (0 when
// unknown) and executable path.
type procRef struct {
	pid int64
	exe string
}

// errUnusable wraps the error of a file that is the mapping's but cannot
// be used: too large, or its symbols unreadable. Other errors (not there,
// not allowed, another file) mean the next place is worth a try.
var errUnusable = errors.New("the mapping's file cannot be used")

// openMapped opens the file at open and checks that it is the mapping's
// file, within maxSize. The caller closes it.
func openMapped(open string, id fileIdentity, maxSize int64) (*os.File, int64, error) {
	f, err := os.Open(open)
	if err != nil {
		return nil, 0, err
	}
	size, err := verifyMapped(f, open, id, maxSize)
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

func verifyMapped(f *os.File, open string, id fileIdentity, maxSize int64) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s: not a regular file", open)
	}
	switch {
	case id.htlhash != "":
		h, err := htlhash(f, fi.Size())
		if err != nil {
			return 0, err
		}
		if !strings.EqualFold(h, id.htlhash) {
			return 0, fmt.Errorf("%s: file id %s, mapping's %s: %w", open, h, id.htlhash, errMismatch)
		}
	case id.gnu != "":
		b, err := gnuBuildID(f)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", open, err)
		}
		if !strings.EqualFold(b, id.gnu) {
			return 0, fmt.Errorf("%s: GNU build id %q, mapping's %s: %w", open, b, id.gnu, errMismatch)
		}
	default:
		return 0, errMismatch
	}
	if fi.Size() > maxSize {
		return 0, fmt.Errorf("%s: %d bytes, %w: %w", open, fi.Size(), errTooLarge, errUnusable)
	}
	return fi.Size(), nil
}
