// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// need fails the test when a tool it runs is missing (make prereqs
// installs them all).
func need(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (make prereqs installs it): %v", tool, err)
		}
	}
}

// run runs a command and fails the test with its output when it fails.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// hotC is a C program whose static function nxv_hot is not exported: a
// stripped build keeps no name for it.
const hotC = `
#include <stdio.h>
__attribute__((noinline)) static unsigned long nxv_hot(unsigned long n) {
	unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++) x = x * 31 + i;
	return x;
}
int main(int argc, char **argv) {
	printf("%lu\n", nxv_hot(argc * 1000UL));
	return 0;
}
`

// buildHot compiles hotC with -g -O2 into dir and returns the unstripped
// binary's path and nxv_hot's address.
func buildHot(t testing.TB, dir string) (string, uint64) {
	t.Helper()
	need(t, "gcc")
	src := filepath.Join(dir, "hot.c")
	if err := os.WriteFile(src, []byte(hotC), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hot")
	run(t, "gcc", "-g", "-O2", "-Wl,--build-id", "-o", bin, src)
	return bin, symbolAddr(t, bin, "nxv_hot")
}

// symbolAddr returns the address of a function symbol of an ELF file, 0 if
// it has none.
func symbolAddr(t testing.TB, path, name string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == name && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			return s.Value
		}
	}
	return 0
}

func buildIDOf(t testing.TB, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id, err := BuildID(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return id
}
