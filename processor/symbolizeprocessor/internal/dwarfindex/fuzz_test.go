// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package dwarfindex

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"os/exec"
	"path/filepath"
	"testing"
)

// FuzzBuild: whatever .debug_info and .debug_line hold (the other sections
// of a real -g -O2 program kept), indexing never panics nor grows past its
// limit, and every lookup returns at most maxInlineDepth+1 frames. Seeds:
// the program's own sections, cut and with bytes flipped.
func FuzzBuild(f *testing.F) {
	bin := filepath.Join(f.TempDir(), "inl")
	src, err := filepath.Abs(filepath.Join("..", "..", "testdata", "src", "inl.c"))
	if err != nil {
		f.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-g", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		f.Fatalf("gcc (run `make prereqs`): %v: %s", err, out)
	}
	ef, err := elf.Open(bin)
	if err != nil {
		f.Fatal(err)
	}
	defer ef.Close()
	sec := map[string][]byte{}
	for _, n := range dwarfSections {
		if s := ef.Section(".debug_" + n); s != nil {
			if sec[n], err = s.Data(); err != nil {
				f.Fatal(err)
			}
		}
	}
	info, line := sec["info"], sec["line"]
	f.Add(info, line)
	for _, n := range []int{11, len(info) / 2, len(info) - 3} {
		f.Add(info[:n], line)
	}
	for _, n := range []int{20, len(line) / 2} {
		f.Add(info, line[:n])
	}
	flip := func(b []byte, step int) []byte {
		b = bytes.Clone(b)
		for i := 12; i < len(b); i += step {
			b[i] ^= 0x5a
		}
		return b
	}
	f.Add(flip(info, 13), line)
	f.Add(info, flip(line, 7))
	f.Fuzz(func(t *testing.T, info, line []byte) {
		d, err := dwarf.New(sec["abbrev"], nil, nil, info, line, nil, sec["ranges"], sec["str"])
		if err != nil {
			return
		}
		for _, k := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
			if sec[k] != nil {
				if err := d.AddSection(".debug_"+k, sec[k]); err != nil {
					return
				}
			}
		}
		const limit = 1 << 20
		ix, err := Build(d, Limits{IndexBytes: limit}, func(s string) string { return s })
		if err != nil {
			return
		}
		if ix.Size() > limit {
			t.Fatalf("index of %d bytes past its limit %d", ix.Size(), limit)
		}
		for _, r := range ix.rows {
			for _, a := range []uint64{r.addr, r.addr + 1, r.addr - 1} {
				if fr := ix.Lookup(a); len(fr) > maxInlineDepth+1 {
					t.Fatalf("%d frames at %#x", len(fr), a)
				}
			}
		}
	})
}
