package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat (USER_HZ, 100
// on every Linux architecture Go supports).
const userHZ = 100

// ProcStat is what the tests read of a process's /proc/<pid>/stat.
type ProcStat struct {
	Comm  string        // field 2, without its parentheses
	State string        // field 3: R, S, Z, …
	CPU   time.Duration // utime + stime (fields 14 and 15)
}

// ReadProcStat reads /proc/<pid>/stat.
func ReadProcStat(pid int) (ProcStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcStat{}, err
	}
	return ParseProcStat(b)
}

// ParseProcStat parses a /proc/<pid>/stat line. The command name (field 2)
// is in parentheses and may contain spaces and parentheses, so fields are
// counted after the last ')'.
func ParseProcStat(b []byte) (ProcStat, error) {
	open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return ProcStat{}, errors.New("testenv: malformed /proc stat line")
	}
	f := strings.Fields(string(b[closing+1:]))
	// f[0] is field 3 (state): utime is field 14 -> f[11], stime f[12].
	if len(f) < 13 {
		return ProcStat{}, errors.New("testenv: short /proc stat line")
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return ProcStat{}, fmt.Errorf("testenv: /proc stat time %q: %w", s, err)
		}
		ticks += v
	}
	return ProcStat{Comm: string(b[open+1 : closing]), State: f[0], CPU: time.Duration(ticks) * time.Second / userHZ}, nil
}

// OwnCPU returns the CPU time (user + system) this process has used, from
// getrusage: finer than /proc's ticks.
func OwnCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// LoadAvg returns the first three fields of /proc/loadavg ("unknown" when
// it cannot be read): the machine's load, logged next to a test's figures.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
