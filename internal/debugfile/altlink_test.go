// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// libbfd is Debian's libbfd, whose debug file in libbinutils-dbg is
// DWZ-compressed: its .gnu_debugaltlink names
// /usr/lib/debug/.dwz/x86_64-linux-gnu/libbinutils.debug.
const (
	libbfd   = "/usr/lib/x86_64-linux-gnu/libbfd-2.40-system.so"
	debugDir = "/usr/lib/debug"
)

// libbfdDebug opens libbfd's debug file (found by the library's build ID)
// and returns it with the library's build ID.
func libbfdDebug(t *testing.T) (*elf.File, string) {
	t.Helper()
	if _, err := os.Stat(libbfd); err != nil {
		t.Fatalf("%v (make prereqs installs binutils)", err)
	}
	id := buildIDOf(t, libbfd)
	p := BuildIDPath(debugDir, id)
	f, err := elf.Open(p)
	if err != nil {
		t.Fatalf("libbfd's debug file: %v (make prereqs installs libbinutils-dbg)", err)
	}
	t.Cleanup(func() { f.Close() })
	return f, id
}

func TestDWZAlternateNamesSubprograms(t *testing.T) {
	f, selfID := libbfdDebug(t)
	link, err := ReadAltLink(f)
	if err != nil {
		t.Fatal(err)
	}
	if link.Path != "/usr/lib/debug/.dwz/x86_64-linux-gnu/libbinutils.debug" || len(link.BuildID) != 40 {
		t.Fatalf("alt link %+v", link)
	}
	alt, err := OpenAlt(link, selfID, filepath.Dir(BuildIDPath(debugDir, selfID)), []string{debugDir}, os.Open, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if alt.BuildID != link.BuildID {
		t.Fatalf("alt build ID %s, link's %s", alt.BuildID, link.BuildID)
	}
	d, err := f.DWARF()
	if err != nil {
		t.Fatalf("Go's debug/dwarf on a DWZ debug file: %v", err)
	}
	// The library's own .dynsym names its exported functions: the names
	// found through the alternate must agree with them.
	lib, err := elf.Open(libbfd)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	dyn, err := lib.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[uint64]string{}
	for _, s := range dyn {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			exported[s.Value] = s.Name
		}
	}
	with, without := Names{Main: d, Alt: alt}, Names{Main: d}
	var viaAlt, checked, mismatched int
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagSubprogram {
			continue
		}
		low, ok := e.Val(dwarf.AttrLowpc).(uint64)
		if !ok {
			continue
		}
		name, _, err := with.Name(e)
		if err != nil {
			t.Fatalf("subprogram at %#x: %v", low, err)
		}
		if n, _, err := without.Name(e); err == nil && n == name {
			continue // named without the alternate
		}
		viaAlt++
		if want, ok := exported[low]; ok {
			checked++
			if want != name {
				mismatched++
				t.Errorf("subprogram at %#x: %q through the alternate, %q in .dynsym", low, name, want)
			}
		}
	}
	t.Logf("libbfd: %d subprograms named only through the DWZ alternate, %d of them checked against .dynsym", viaAlt, checked)
	if viaAlt == 0 || checked == 0 {
		t.Fatalf("no subprogram named through the alternate (%d) and checked (%d)", viaAlt, checked)
	}
}

// copyFile copies a file into dir and returns the copy's path.
func copyFile(t *testing.T, src, dir string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDWZAlternateLoopsAndMismatchesAreRefused(t *testing.T) {
	need(t, "objcopy")
	f, selfID := libbfdDebug(t)
	link, err := ReadAltLink(f)
	if err != nil {
		t.Fatal(err)
	}
	// A link to the debug file itself.
	self := AltLink{Path: link.Path, BuildID: selfID}
	if _, err := OpenAlt(self, selfID, "/", []string{debugDir}, os.Open, 64<<20); err == nil {
		t.Fatal("a link to the debug file itself was followed")
	}
	// An alternate that links to another (itself): not followed.
	dir := t.TempDir()
	chained := copyFile(t, link.Path, dir)
	raw := filepath.Join(dir, "link")
	if err := os.WriteFile(raw, append([]byte(link.Path+"\x00"), hexBytes(t, link.BuildID)...), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, "objcopy", "--add-section", ".gnu_debugaltlink="+raw, chained)
	chainedLink := AltLink{Path: chained, BuildID: link.BuildID}
	if _, err := OpenAlt(chainedLink, selfID, dir, nil, os.Open, 64<<20); err == nil || !strings.Contains(err.Error(), "refers to another") {
		t.Fatalf("an alternate that links on: %v", err)
	}
	// A file at the link's path with another build ID.
	wrong := AltLink{Path: libbfd, BuildID: link.BuildID}
	if _, err := OpenAlt(wrong, selfID, dir, nil, os.Open, 64<<20); err == nil || !strings.Contains(err.Error(), "build ID") {
		t.Fatalf("a file of another build ID: %v", err)
	}
	// Over the size cap.
	if _, err := OpenAlt(link, selfID, "/", []string{debugDir}, os.Open, 1024); err == nil {
		t.Fatal("an alternate over the size cap was loaded")
	}
	// Missing.
	missing := AltLink{Path: filepath.Join(dir, "none.debug"), BuildID: strings.Repeat("ab", 20)}
	if _, err := OpenAlt(missing, selfID, dir, []string{dir}, os.Open, 64<<20); !os.IsNotExist(err) && !strings.Contains(err.Error(), "not exist") {
		t.Fatalf("a missing alternate: %v", err)
	}
}

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNamesReferenceLoopEnds gives Names a subprogram whose
// DW_AT_abstract_origin is itself (hostile DWARF, made here byte by byte).
func TestNamesReferenceLoopEnds(t *testing.T) {
	abbrev := []byte{
		1, 0x11, 1, 0, 0, // compile_unit, children, no attributes
		2, 0x2e, 0, 0x31, 0x13, 0, 0, // subprogram, abstract_origin ref4
		0,
	}
	info := []byte{
		0, 0, 0, 0, // unit_length, set below
		4, 0, // version 4
		0, 0, 0, 0, // abbrev offset
		8,              // address size
		1,              // compile_unit at 11
		2, 12, 0, 0, 0, // subprogram at 12, origin: itself
		0,
	}
	info[0] = byte(len(info) - 4)
	d, err := dwarf.New(abbrev, nil, nil, info, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := d.Reader()
	r.Seek(12)
	e, err := r.Next()
	if err != nil || e == nil || e.Tag != dwarf.TagSubprogram {
		t.Fatalf("entry %v, %v", e, err)
	}
	if _, _, err := (Names{Main: d}).Name(e); err == nil || !strings.Contains(err.Error(), "too deep") {
		t.Fatalf("a reference loop: %v", err)
	}
}

// TestDebugSupLink: DWARF 5's .debug_sup as dwz --dwarf-5 writes it (dwz
// 0.15, run here over two gcc -gdwarf-5 programs): the program's section
// names the supplementary file and its checksum, the supplementary file
// has no GNU build ID and states the same checksum in its own .debug_sup
// (marked supplementary). OpenAlt takes it by that checksum, reads names
// through DW_FORM_strp_sup and DW_FORM_ref_sup4, and refuses a file whose
// checksum differs.
func TestDebugSupLink(t *testing.T) {
	need(t, "gcc")
	need(t, "dwz")
	dir := t.TempDir()
	src := filepath.Join(dir, "sup.c")
	if err := os.WriteFile(src, []byte("static inline int nxv_sup_hot(int x) { for (int i = 0; i < 64; i++) x = x * 7 + i; return x; }\n"+
		"__attribute__((noinline)) int nxv_sup_caller(int x) { return nxv_sup_hot(x) + 1; }\n"+
		"int main(int argc, char **argv) { (void)argv; return nxv_sup_caller(argc) & 1; }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var bins []string
	for _, v := range []string{"1", "2"} {
		bin := filepath.Join(dir, "sup"+v)
		run(t, "gcc", "-g", "-gdwarf-5", "-O2", "-Wl,--build-id", "-DNXV_V="+v, "-o", bin, src)
		bins = append(bins, bin)
	}
	common := filepath.Join(dir, "common.debug")
	run(t, "dwz", append([]string{"-m", common, "-M", common, "--dwarf-5"}, bins...)...)

	f, err := elf.Open(bins[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Section(".debug_sup") == nil || f.Section(".gnu_debugaltlink") != nil {
		t.Fatal("dwz --dwarf-5 wrote no .debug_sup")
	}
	link, err := ReadAltLink(f)
	if err != nil {
		t.Fatal(err)
	}
	if link.Path != common || !link.Sup || len(link.BuildID) != 40 {
		t.Fatalf("link %+v", link)
	}
	cf, err := elf.Open(common)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildID(cf); err == nil {
		t.Log("the supplementary file has a GNU build ID (this dwz writes one)")
	}
	cf.Close()
	self, _ := BuildID(f)
	alt, err := OpenAlt(link, self, dir, nil, os.Open, 64<<20)
	if err != nil {
		t.Fatalf("the supplementary file: %v", err)
	}
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	r := d.Reader()
	for e, err := r.Next(); e != nil && err == nil; e, err = r.Next() {
		if e.Tag != dwarf.TagSubprogram && e.Tag != dwarf.TagInlinedSubroutine {
			continue
		}
		if n, _, err := (Names{Main: d, Alt: alt}).Name(e); err == nil {
			found[n] = true
		}
	}
	if !found["nxv_sup_hot"] || !found["nxv_sup_caller"] {
		t.Fatalf("names through the supplementary file: %v", found)
	}

	// Another checksum: refused.
	wrong := link
	wrong.BuildID = strings.Repeat("ab", 20)
	if _, err := OpenAlt(wrong, self, dir, nil, os.Open, 64<<20); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a supplementary file of another checksum: %v", err)
	}
}
