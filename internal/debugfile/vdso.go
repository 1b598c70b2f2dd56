// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile // import "github.com/nexovue/otelcol-nexovue/internal/debugfile"

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// VDSONames are the names the vDSO's frames carry: the eBPF profiler's
// mapping filename, and the name /proc/<pid>/maps gives the mapping.
var VDSONames = []string{"linux-vdso.1.so", "[vdso]"}

// IsVDSO reports whether a mapping's filename is the vDSO's.
func IsVDSO(name string) bool {
	for _, n := range VDSONames {
		if name == n {
			return true
		}
	}
	return false
}

// maxVDSOSize bounds the vDSO read (it is two to a few pages).
const maxVDSOSize = 1 << 20

// VDSO is a process's vDSO image, read from its memory.
type VDSO struct {
	// Start and End are the bounds of the [vdso] mapping in the process.
	Start, End uint64
	// Image is the mapping's bytes: an ELF file (check with elf.NewFile).
	Image   []byte
	BuildID string // GNU build ID, "" when it has none
}

// ErrNoVDSO is returned by ReadVDSO for a process without a [vdso] mapping.
var ErrNoVDSO = errors.New("no [vdso] mapping")

// ReadVDSO reads the [vdso] mapping of a process from /proc/<pid>/mem,
// within the mapping's bounds (at most 1 MiB), and checks that it is an ELF
// file. procRoot is "/proc" (tests give another). Every process of a kernel
// (of one ABI) maps the same vDSO: callers keep it by build ID.
func ReadVDSO(procRoot string, pid int) (*VDSO, error) {
	start, end, err := vdsoBounds(fmt.Sprintf("%s/%d/maps", procRoot, pid))
	if err != nil {
		return nil, err
	}
	if end <= start || end-start > maxVDSOSize {
		return nil, fmt.Errorf("[vdso] mapping of %d bytes: %w", end-start, ErrTooLarge)
	}
	mem, err := os.Open(fmt.Sprintf("%s/%d/mem", procRoot, pid))
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	img := make([]byte, end-start)
	if _, err := mem.ReadAt(img, int64(start)); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading [vdso]: %w", err)
	}
	ef, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return nil, fmt.Errorf("[vdso]: %w", err)
	}
	id, _ := BuildID(ef)
	return &VDSO{Start: start, End: end, Image: img, BuildID: id}, nil
}

func vdsoBounds(maps string) (start, end uint64, err error) {
	f, err := os.Open(maps)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasSuffix(line, " [vdso]") {
			continue
		}
		rng, _, _ := strings.Cut(line, " ")
		lo, hi, ok := strings.Cut(rng, "-")
		if !ok {
			break
		}
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			break
		}
		return s, e, nil
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	return 0, 0, ErrNoVDSO
}
