// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

func TestReadVDSONamesClockGettime(t *testing.T) {
	// Another process (the way the processor reads one): a sleep started
	// here, and this test's own process.
	// The shell prints once it runs, so its exec (which maps the vDSO) is
	// over when the line arrives: read right after Start, the process can
	// be between its old and its new image, with no [vdso] yet.
	cmd := exec.Command("sh", "-c", "echo running; sleep 60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "running\n" {
		t.Fatalf("the shell did not start: %q, %v", line, err)
	}
	var ids []string
	for _, pid := range []int{cmd.Process.Pid, os.Getpid()} {
		v, err := ReadVDSO("/proc", pid)
		if err != nil {
			t.Fatalf("pid %d: %v", pid, err)
		}
		if uint64(len(v.Image)) != v.End-v.Start {
			t.Fatalf("pid %d: read %d bytes of a %d-byte mapping", pid, len(v.Image), v.End-v.Start)
		}
		f, err := elf.NewFile(bytes.NewReader(v.Image))
		if err != nil {
			t.Fatal(err)
		}
		syms, err := f.DynamicSymbols()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, s := range syms {
			found = found || s.Name == "__vdso_clock_gettime"
		}
		if !found {
			t.Fatalf("pid %d: the vDSO has no __vdso_clock_gettime in %d symbols", pid, len(syms))
		}
		ids = append(ids, v.BuildID)
	}
	if ids[0] != ids[1] {
		t.Fatalf("two processes of one kernel map different vDSOs: %v", ids)
	}
	if !IsVDSO("linux-vdso.1.so") || !IsVDSO("[vdso]") || IsVDSO("libc.so.6") {
		t.Fatal("IsVDSO")
	}
}

// fakeProc makes a /proc-like directory with one process's maps and mem.
func fakeProc(t *testing.T, maps string, mem []byte) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "42")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "maps"), []byte(maps), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mem"), mem, 0o600); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestReadVDSOBadMappings(t *testing.T) {
	noVDSO := fakeProc(t, "00400000-00401000 r-xp 00000000 08:01 1 /bin/true\n", nil)
	if _, err := ReadVDSO(noVDSO, 42); !errors.Is(err, ErrNoVDSO) {
		t.Fatalf("no [vdso]: %v", err)
	}
	huge := fakeProc(t, "7f0000000000-7f1000000000 r-xp 00000000 00:00 0 [vdso]\n", nil)
	if _, err := ReadVDSO(huge, 42); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 64 GiB [vdso]: %v", err)
	}
	notELF := fakeProc(t, "0-2000 r-xp 00000000 00:00 0 [vdso]\n", bytes.Repeat([]byte{0xcc}, 0x2000))
	if _, err := ReadVDSO(notELF, 42); err == nil {
		t.Fatal("a [vdso] that is not ELF was read")
	}
	short := fakeProc(t, "0-2000 r-xp 00000000 00:00 0 [vdso]\n", []byte("\x7fELF"))
	if _, err := ReadVDSO(short, 42); err == nil {
		t.Fatal("a truncated [vdso] was read")
	}
}
