// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"testing"
)

// FuzzParseSymtab: whatever a mapped file holds, reading its identity and
// symbols and looking addresses up in them never panics, and a table is
// sorted with one symbol per address. Seeds: ELF files built by gcc (when
// it is there), cut at several lengths and with bytes flipped, and a bare
// ELF header claiming sections and segments it does not have.
func FuzzParseSymtab(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x7fELF"))
	f.Add(bareHeader(1000, 0xffff, 0xffff))
	f.Add(bareHeader(64, 3, 64))
	if _, err := exec.LookPath("gcc"); err == nil {
		dir := f.TempDir()
		for _, bin := range []string{
			compile(f, dir, "nxv.c", "nxv"),
			stripped(f, compile(f, dir, "libnxv.c", "libnxv.so", "-shared", "-fPIC")),
		} {
			data, err := os.ReadFile(bin)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
			for _, n := range []int{64, 512, len(data) / 2, len(data) - 100} {
				f.Add(data[:n])
			}
			flipped := bytes.Clone(data)
			for i := 0x28; i < len(flipped); i += 97 {
				flipped[i] ^= 0xa5
			}
			f.Add(flipped)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		_, _ = htlhash(r, int64(len(data)))
		_, _ = gnuBuildID(r)
		st, err := parseSymtab(r, "/fuzz")
		if err != nil {
			return
		}
		for i := 1; i < len(st.syms); i++ {
			if st.syms[i-1].addr >= st.syms[i].addr {
				t.Fatalf("symbols not sorted by address at %d", i)
			}
		}
		for i, s := range st.syms {
			for _, a := range []uint64{s.addr, s.addr + 1, s.addr - 1, s.addr + s.size} {
				if j := st.lookup(a); j >= 0 {
					st.name(j)
				}
			}
			st.name(i)
			st.vaddr(s.addr, 0x1000, 0x2000, 0)
		}
		st.lookup(0)
		st.lookup(^uint64(0))
	})
}

// bareHeader is a 64-bit little-endian ELF header with the given section
// header offset and counts, and nothing behind it.
func bareHeader(shoff uint64, shnum, phnum uint16) []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF\x02\x01\x01")
	binary.LittleEndian.PutUint16(h[16:], 3)    // ET_DYN
	binary.LittleEndian.PutUint16(h[18:], 0x3e) // x86-64
	binary.LittleEndian.PutUint32(h[20:], 1)
	binary.LittleEndian.PutUint64(h[32:], 64) // phoff
	binary.LittleEndian.PutUint64(h[40:], shoff)
	binary.LittleEndian.PutUint16(h[52:], 64)
	binary.LittleEndian.PutUint16(h[54:], 56)
	binary.LittleEndian.PutUint16(h[56:], phnum)
	binary.LittleEndian.PutUint16(h[58:], 64)
	binary.LittleEndian.PutUint16(h[60:], shnum)
	return h
}
