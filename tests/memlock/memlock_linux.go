// Package memlock is a test-only launcher for the eBPF profiler on machines
// where the process may not raise RLIMIT_MEMLOCK.
//
// Why it exists: the eBPF profiler raises RLIMIT_MEMLOCK to infinity before it
// loads its maps (go.opentelemetry.io/ebpf-profiler/rlimit) and stops with
// "failed to set temporary rlimit: operation not permitted" when it may not.
// Raising a hard limit needs CAP_SYS_RESOURCE. The CI and development machines
// of this project run as root with CAP_BPF and CAP_PERFMON but without
// CAP_SYS_RESOURCE, under an 8 MiB hard memlock limit, and even a
// `--privileged` container there does not get it. Since Linux 5.11 the kernel
// charges BPF memory to the memory cgroup and no longer checks RLIMIT_MEMLOCK
// for it, so on those kernels the call the profiler makes changes nothing but
// fails. The launcher installs a seccomp filter that answers "success" to the
// calls that would set RLIMIT_MEMLOCK (prlimit64 and setrlimit with a new
// limit), without running them, and then executes the collector. Every other
// system call, and every read of the limit, runs as usual.
//
// It is used by tests only, and only where CAP_SYS_RESOURCE is missing and the
// kernel is 5.11 or newer (Needed). It is never part of the shipped image or
// of the README's way of running the collector.
package memlock // import "github.com/nexovue/otelcol-nexovue/tests/memlock"

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

const capSysResource = 24

// Needed reports whether the launcher is needed: the process lacks
// CAP_SYS_RESOURCE. It fails when the kernel is older than 5.11, where BPF
// memory is still charged against RLIMIT_MEMLOCK and faking the call would
// hide a real limit.
func Needed() (bool, error) {
	has, err := hasCapability(capSysResource)
	if err != nil {
		return false, err
	}
	if has {
		return false, nil
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false, fmt.Errorf("uname: %w", err)
	}
	release := unix.ByteSliceToString(u.Release[:])
	major, minor, err := kernelVersion(release)
	if err != nil {
		return false, err
	}
	if major < 5 || (major == 5 && minor < 11) {
		return false, fmt.Errorf("kernel %s charges BPF memory to RLIMIT_MEMLOCK and the process lacks CAP_SYS_RESOURCE: the eBPF profiler cannot load here", release)
	}
	return true, nil
}

func kernelVersion(release string) (major, minor int, err error) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, fmt.Errorf("unexpected kernel release %q", release)
	}
	major, err = strconv.Atoi(parts[0])
	if err != nil {
		return 0, 0, fmt.Errorf("unexpected kernel release %q", release)
	}
	minor, err = strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err != nil {
		return 0, 0, fmt.Errorf("unexpected kernel release %q", release)
	}
	return major, minor, nil
}

func hasCapability(bit uint) (bool, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("parse CapEff %q: %w", v, err)
			}
			return caps&(1<<bit) != 0, nil
		}
	}
	return false, errors.New("no CapEff line in /proc/self/status")
}

// seccomp_data layout: nr (u32), arch (u32), instruction_pointer (u64), args[6] (u64).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

func argLow(i int) uint32  { return uint32(offArgs + 8*i) }
func argHigh(i int) uint32 { return uint32(offArgs + 8*i + 4) }

func auditArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	}
	return 0, fmt.Errorf("memlock launcher: unsupported architecture %s", runtime.GOARCH)
}

// Filter returns the seccomp program: prlimit64(pid, RLIMIT_MEMLOCK, new != NULL, old)
// and setrlimit(RLIMIT_MEMLOCK, ...) return 0 without running; everything else runs.
func Filter() ([]unix.SockFilter, error) {
	arch, err := auditArch()
	if err != nil {
		return nil, err
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	succeed := uint32(unix.SECCOMP_RET_ERRNO) // errno 0: the call returns 0
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: jeq, K: k, Jt: jt, Jf: jf}
	}
	// Jump offsets count from the next instruction.
	prog := []unix.SockFilter{
		/* 0 */ stmt(ld, offArch),
		/* 1 */ jump(arch, 0, 11), // another ABI: 13 (allow)
		/* 2 */ stmt(ld, offNr),
		/* 3 */ jump(uint32(unix.SYS_PRLIMIT64), 1, 0), // 5
		/* 4 */ jump(uint32(unix.SYS_SETRLIMIT), 6, 8), // 11, else 13 (allow)
		// prlimit64(pid, resource, new, old)
		/* 5 */ stmt(ld, argLow(1)),
		/* 6 */ jump(unix.RLIMIT_MEMLOCK, 0, 6), // else 13 (allow)
		/* 7 */ stmt(ld, argLow(2)),
		/* 8 */ jump(0, 0, 5), // new != NULL: 14 (succeed)
		/* 9 */ stmt(ld, argHigh(2)),
		/* 10 */ jump(0, 2, 3), // new == NULL, a read: 13 (allow); else 14 (succeed)
		// setrlimit(resource, rlim)
		/* 11 */ stmt(ld, argLow(0)),
		/* 12 */ jump(unix.RLIMIT_MEMLOCK, 1, 0), // 14 (succeed), else 13 (allow)
		/* 13 */ stmt(ret, allow),
		/* 14 */ stmt(ret, succeed),
	}
	return prog, nil
}

// Install applies Filter to every thread of the calling process; it is kept
// across execve.
func Install() error {
	prog, err := Filter()
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	runtime.KeepAlive(prog)
	return nil
}
