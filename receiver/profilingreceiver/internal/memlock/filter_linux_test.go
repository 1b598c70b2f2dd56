// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package memlock

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// seccompData is struct seccomp_data.
type seccompData struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

func (d seccompData) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[offNr:], d.nr)
	binary.LittleEndian.PutUint32(b[offArch:], d.arch)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[offArgs+8*i:], a)
	}
	return b
}

// run interprets the classic BPF instructions Filter uses (load word
// absolute, jump if equal, return), failing on any other.
func run(t *testing.T, prog []unix.SockFilter, d seccompData) uint32 {
	t.Helper()
	data := d.bytes()
	var acc uint32
	for pc, steps := 0, 0; pc < len(prog); steps++ {
		require.Less(t, steps, len(prog), "the program loops")
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
			pc++
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			if acc == in.K {
				pc += 1 + int(in.Jt)
			} else {
				pc += 1 + int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: unexpected code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ran past its end")
	return 0
}

// TestFilterDecisions runs the program on every system call number of the
// native architecture and of others, with the arguments that matter, and
// checks that it answers "succeed" only to setting RLIMIT_MEMLOCK of this
// process and "allow" to everything else.
func TestFilterDecisions(t *testing.T) {
	prog := Filter()
	native := nativeArch()
	const newLimit = 0x000000c000123450 // a pointer to the new limit
	argSets := [][6]uint64{
		{0, unix.RLIMIT_MEMLOCK, newLimit, 0},         // prlimit64(0, MEMLOCK, &new, NULL)
		{0, unix.RLIMIT_MEMLOCK, newLimit, newLimit},  // prlimit64(0, MEMLOCK, &new, &old)
		{0, unix.RLIMIT_MEMLOCK, 1 << 40, 0},          // new with a zero low half
		{0, unix.RLIMIT_MEMLOCK, 0, newLimit},         // a read
		{1234, unix.RLIMIT_MEMLOCK, newLimit, 0},      // another process
		{0, unix.RLIMIT_NOFILE, newLimit, 0},          // another limit
		{0, unix.RLIMIT_STACK, newLimit, 0},           //
		{unix.RLIMIT_MEMLOCK, newLimit, 0, 0},         // setrlimit(MEMLOCK, &new)
		{unix.RLIMIT_NOFILE, newLimit, 0, 0},          // setrlimit(NOFILE, &new)
		{unix.RLIMIT_MEMLOCK, unix.RLIMIT_MEMLOCK, 0}, // anything else
		{},
	}
	want := func(arch, nr uint32, a [6]uint64) uint32 {
		if arch != native {
			return unix.SECCOMP_RET_ALLOW
		}
		switch nr {
		case uint32(unix.SYS_PRLIMIT64):
			if a[0] == 0 && a[1] == unix.RLIMIT_MEMLOCK && a[2] != 0 {
				return retSucceed
			}
		case uint32(unix.SYS_SETRLIMIT):
			if a[0] == unix.RLIMIT_MEMLOCK {
				return retSucceed
			}
		}
		return unix.SECCOMP_RET_ALLOW
	}
	succeeded := 0
	for _, arch := range []uint32{native, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64, unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM} {
		for nr := uint32(0); nr < 1024; nr++ {
			// x32 system calls are AUDIT_ARCH_X86_64 with bit 30 set.
			for _, n := range []uint32{nr, nr | 0x40000000} {
				for _, a := range argSets {
					got := run(t, prog, seccompData{nr: n, arch: arch, args: a})
					require.Equal(t, want(arch, n, a), got, "arch %#x nr %d args %v", arch, n, a)
					if got == retSucceed {
						succeeded++
					}
				}
			}
		}
	}
	// Per pass over the native architecture: prlimit64 with three argument
	// sets (new limit given, with and without old; a pointer with a zero low
	// half), setrlimit with two (resource MEMLOCK). The native architecture is
	// listed twice (as native and by name).
	require.Equal(t, 2*(3+2), succeeded, "calls answered without running")
	require.Equal(t, uint32(0), retSucceed&unix.SECCOMP_RET_DATA, "the answer is errno 0: success")
	require.Equal(t, uint32(unix.SECCOMP_RET_ERRNO), retSucceed&unix.SECCOMP_RET_ACTION_FULL)
	fmt.Printf("filter: %d instructions, %d calls answered of %d tried\n", len(prog), succeeded, 5*1024*2*len(argSets))
}
