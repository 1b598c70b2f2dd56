// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// makeMiniDebugInfo builds hotC, strips it and adds MiniDebugInfo as
// Fedora does (the symbol table of an only-keep-debug copy without its
// debug sections, xz-compressed, in .gnu_debugdata). It returns the
// stripped file and nxv_hot's address.
func makeMiniDebugInfo(t *testing.T, dir string) (string, uint64) {
	t.Helper()
	need(t, "objcopy", "strip", "xz")
	bin, addr := buildHot(t, dir)
	mini := filepath.Join(dir, "mini")
	run(t, "objcopy", "--only-keep-debug", bin, mini)
	run(t, "objcopy", "--strip-debug", "--remove-section", ".comment", mini)
	run(t, "xz", "-k", mini)
	stripped := filepath.Join(dir, "hot.stripped")
	run(t, "strip", "--strip-all", "-o", stripped, bin)
	run(t, "objcopy", "--add-section", ".gnu_debugdata="+mini+".xz", stripped)
	if symbolAddr(t, stripped, "nxv_hot") != 0 {
		t.Fatal("the stripped file still names nxv_hot")
	}
	return stripped, addr
}

func TestMiniDebugInfoNamesAStrippedFunction(t *testing.T) {
	stripped, addr := makeMiniDebugInfo(t, t.TempDir())
	f, err := elf.Open(stripped)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := MiniDebugInfo(f, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the decompressed MiniDebugInfo is not ELF: %v", err)
	}
	syms, err := inner.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == "nxv_hot" {
			if s.Value != addr {
				t.Fatalf("nxv_hot at %#x in MiniDebugInfo, %#x in the unstripped file", s.Value, addr)
			}
			return
		}
	}
	t.Fatal("MiniDebugInfo has no nxv_hot")
}

func TestMiniDebugInfoAbsent(t *testing.T) {
	bin, _ := buildHot(t, t.TempDir())
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := MiniDebugInfo(f, 1<<20); !errors.Is(err, ErrNoMiniDebugInfo) {
		t.Fatalf("got %v, want ErrNoMiniDebugInfo", err)
	}
}

// xzOf compresses data with the xz tool.
func xzOf(t testing.TB, data []byte, args ...string) []byte {
	t.Helper()
	need(t, "xz")
	dir := t.TempDir()
	p := filepath.Join(dir, "data")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, "xz", append(args, p)...)
	out, err := os.ReadFile(p + ".xz")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestDecompressXZBombIsCutAtTheCap(t *testing.T) {
	// 64 MiB of zeros: about 10 KiB of xz.
	bomb := xzOf(t, make([]byte, 64<<20), "-0") // -0: fast, the bomb the same
	if len(bomb) > 1<<20 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	const maxSize = 4 << 20
	var err error
	n := allocated(func() { _, err = DecompressXZ(bomb, maxSize) })
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	// The output (grown by doubling up to maxSize: at most 2×maxSize
	// allocated in all) and a dictionary no larger than maxSize: the bound,
	// whatever the stream holds.
	if n > 3*maxSize+1<<20 {
		t.Fatalf("decompressing the bomb allocated %d bytes, over 3×%d + 1 MiB", n, maxSize)
	}
	t.Logf("64 MiB bomb, cap %d: %d bytes allocated in all", maxSize, n)
}

func TestDecompressXZHugeDictionaryHeaderIsNotAllocated(t *testing.T) {
	small := xzOf(t, []byte("nexovue nexovue nexovue"), "-0")
	// The block header starts after the 12-byte stream header: size byte,
	// flags, filter id 0x21, props size 1, dictionary code. Declare the
	// largest dictionary (4 GiB - 1) and fix the header's CRC.
	hdr := small[12:]
	size := (int(hdr[0]) + 1) * 4
	if hdr[1]&0xc0 != 0 || hdr[2] != 0x21 || hdr[3] != 1 {
		t.Fatalf("unexpected block header % x", hdr[:size])
	}
	hdr[4] = 40
	binary.LittleEndian.PutUint32(hdr[size-4:], crc32.ChecksumIEEE(hdr[:size-4]))
	var out []byte
	var err error
	n := allocated(func() { out, err = DecompressXZ(small, 1<<20) })
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "nexovue nexovue nexovue" {
		t.Fatalf("got %q", out)
	}
	if n > 4<<20 {
		t.Fatalf("a header declaring a 4 GiB dictionary made it allocate %d bytes", n)
	}
}

func TestDecompressXZMalformed(t *testing.T) {
	good := xzOf(t, bytes.Repeat([]byte("nexovue "), 1000), "-6")
	if out, err := DecompressXZ(good, 1<<20); err != nil || len(out) != 8000 {
		t.Fatalf("good stream: %d bytes, %v", len(out), err)
	}
	cases := map[string][]byte{
		"empty":       nil,
		"not xz":      []byte("\x7fELF and more bytes"),
		"truncated":   good[:len(good)/2],
		"header only": good[:12],
	}
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)/2] ^= 0xff
	cases["corrupt data"] = corrupt
	sha := xzOf(t, bytes.Repeat([]byte("nexovue "), 1000), "-6", "--check=sha256")
	badCheck := bytes.Clone(sha)
	// The check is the 32 bytes before the index; flip the index-side
	// neighbour of the data: find it as the last 0x00 index indicator.
	badCheck[len(badCheck)-12-8-32-1] ^= 0x01
	cases["bad check"] = badCheck
	for name, data := range cases {
		if _, err := DecompressXZ(data, 1<<20); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if out, err := DecompressXZ(sha, 1<<20); err != nil || len(out) != 8000 {
		t.Fatalf("sha256-checked stream: %d bytes, %v", len(out), err)
	}
}
