// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestHeldFilesBoundedAndDeletedFilesReadable(t *testing.T) {
	dir := t.TempDir()
	h := NewHeldFiles(2)
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(p, []byte(fmt.Sprint("file ", i)), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		h.Hold(fmt.Sprint("ID", i), p, f)
		if err := os.Remove(p); err != nil { // deleted, still held
			t.Fatal(err)
		}
	}
	if h.Len() != 2 {
		t.Fatalf("%d held, max 2", h.Len())
	}
	if _, _, ok := h.Open("id0"); ok {
		t.Fatal("the least recently held file is still held")
	}
	f, path, ok := h.Open("ID2")
	if !ok {
		t.Fatal("not held")
	}
	defer f.Close()
	data, err := os.ReadFile(f.Name())
	if err != nil || string(data) != "file 2" || path != filepath.Join(dir, "2") {
		t.Fatalf("held file: %q %v at %s", data, err, path)
	}
}
