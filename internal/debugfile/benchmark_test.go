// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// BenchmarkDecompressXZBomb: 64 MiB of zeros (about 10 KiB of xz) cut at a
// 4 MiB cap. B/op is the bound that TestDecompressXZBombIsCutAtTheCap
// asserts (under 3×cap + 1 MiB).
func BenchmarkDecompressXZBomb(b *testing.B) {
	bomb := xzOf(b, make([]byte, 64<<20), "-0")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecompressXZ(bomb, 4<<20); !errors.Is(err, ErrTooLarge) {
			b.Fatal(err)
		}
	}
}

// BenchmarkDebuginfodHugeBody: a server that streams 1 GiB without a
// Content-Length, against a 1 MiB max_file_size_mib: the time and memory of
// a fetch are those of reading 1 MiB.
func BenchmarkDebuginfodHugeBody(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 64<<10)
		for i := 0; i < 1<<14; i++ {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	cfg := DefaultDebuginfodConfig()
	cfg.URLs = []string{srv.URL}
	cfg.CacheDir = b.TempDir()
	cfg.MaxFileSizeMiB = 1
	cfg.CacheSizeMiB = 2
	d, err := NewDebuginfod(cfg, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	id := strings.Repeat("ab", 20)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Fetch(context.Background(), id); !errors.Is(err, ErrTooLarge) {
			b.Fatal(err)
		}
	}
}
