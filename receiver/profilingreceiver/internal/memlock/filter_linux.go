// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package memlock // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/memlock"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The layout of struct seccomp_data, what a seccomp filter reads:
// nr (u32), arch (u32), instruction_pointer (u64), args[6] (u64 each).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// argLow is the offset of the low 32 bits of argument i (both amd64 and arm64
// are little-endian). The arguments compared below are C ints (pid_t, the
// resource number), of which the kernel reads the low 32 bits only; a pointer
// is compared on both halves.
func argLow(i int) uint32  { return uint32(offArgs + 8*i) }
func argHigh(i int) uint32 { return uint32(offArgs + 8*i + 4) }

// nativeArch is the audit architecture of the running binary.
func nativeArch() uint32 {
	if runtime.GOARCH == "arm64" {
		return unix.AUDIT_ARCH_AARCH64
	}
	return unix.AUDIT_ARCH_X86_64
}

// retSucceed makes the filtered call return 0 without running:
// SECCOMP_RET_ERRNO with errno 0.
const retSucceed = uint32(unix.SECCOMP_RET_ERRNO | 0)

// Filter returns the seccomp program. It answers retSucceed to exactly these
// calls, and SECCOMP_RET_ALLOW (run the call as usual) to every other:
//
//	arch == the binary's own audit architecture (AUDIT_ARCH_X86_64 or AUDIT_ARCH_AARCH64), and
//	  nr == prlimit64 && pid == 0 && resource == RLIMIT_MEMLOCK && new_limit != NULL, or
//	  nr == setrlimit && resource == RLIMIT_MEMLOCK
//
// How "every other system call keeps its behaviour" is guaranteed: the
// program has two outcomes only, and it reaches retSucceed solely through
// the equality tests above (BPF_JEQ on the whole 32-bit word: the
// architecture, the system call number, the resource argument, the pid, both
// halves of the new-limit pointer); any mismatch jumps to SECCOMP_RET_ALLOW.
// A different architecture or ABI (a 32-bit compat call, x32 whose numbers
// carry bit 30) never matches. Reads of the limit (prlimit64 with a NULL new
// limit, getrlimit) and calls on another process run. TestFilterDecisions
// checks this on the program itself for every system call number;
// TestFilterInChild checks it in a real process.
//
// Setting RLIMIT_MEMLOCK is what upstream's rlimit.MaximizeMemlock does
// (prlimit64(0, RLIMIT_MEMLOCK, &infinity, &old)), and its restore function
// (setrlimit, which Go issues as prlimit64(0, ...)): both must succeed. As
// the first is not run, old stays zero and the restore would set the limit to
// 0; it is not run either, so the limit stays what it was.
func Filter() []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	// jt and jf count instructions from the next one.
	jump := func(k uint32, jt, jf uint8) unix.SockFilter { return unix.SockFilter{Code: jeq, K: k, Jt: jt, Jf: jf} }
	return []unix.SockFilter{
		/* 0 */ stmt(ld, offArch),
		/* 1 */ jump(nativeArch(), 0, 13), // else -> 15 allow
		/* 2 */ stmt(ld, offNr),
		/* 3 */ jump(uint32(unix.SYS_PRLIMIT64), 1, 0), // -> 5
		/* 4 */ jump(uint32(unix.SYS_SETRLIMIT), 8, 10), // -> 13, else -> 15 allow
		// prlimit64(pid, resource, new_limit, old_limit)
		/* 5 */ stmt(ld, argLow(0)),
		/* 6 */ jump(0, 0, 8), // pid 0 (this process), else -> 15 allow
		/* 7 */ stmt(ld, argLow(1)),
		/* 8 */ jump(unix.RLIMIT_MEMLOCK, 0, 6), // else -> 15 allow
		/* 9 */ stmt(ld, argLow(2)),
		/* 10 */ jump(0, 0, 5), // new_limit's low half != 0 -> 16 succeed
		/* 11 */ stmt(ld, argHigh(2)),
		/* 12 */ jump(0, 2, 3), // new_limit == NULL, a read -> 15 allow; else -> 16 succeed
		// setrlimit(resource, rlim)
		/* 13 */ stmt(ld, argLow(0)),
		/* 14 */ jump(unix.RLIMIT_MEMLOCK, 1, 0), // -> 16 succeed, else -> 15 allow
		/* 15 */ stmt(ret, unix.SECCOMP_RET_ALLOW),
		/* 16 */ stmt(ret, retSucceed),
	}
}

// Install applies Filter to every thread of the process. It reports whether
// it had to set no_new_privs (see the package comment).
func Install() (setNoNewPrivs bool, err error) {
	prog := Filter()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	install := func() error {
		r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
			unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
		runtime.KeepAlive(prog)
		if errno != 0 {
			return errno
		}
		if r != 0 {
			// With TSYNC, a positive result is a thread that could not be
			// synchronised (it runs another seccomp filter).
			return fmt.Errorf("thread %d could not take the filter", r)
		}
		return nil
	}
	err = install()
	if errors.Is(err, unix.EACCES) {
		// No CAP_SYS_ADMIN: the kernel then requires no_new_privs.
		if perr := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); perr != nil {
			return false, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", perr)
		}
		setNoNewPrivs = true
		err = install()
	}
	if err != nil {
		return setNoNewPrivs, fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", err)
	}
	return setNoNewPrivs, nil
}
