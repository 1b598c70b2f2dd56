// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package gopclntab

import (
	"debug/elf"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkOpen reads the table of NEXOVUE_BENCH_GO_BIN (e.g. the
// collector, _build/otelcol-nexovue), else of this test binary: time,
// allocations, and what the table keeps (table-MiB).
func BenchmarkOpen(b *testing.B) {
	bin := os.Getenv("NEXOVUE_BENCH_GO_BIN")
	if bin == "" {
		var err error
		bin, err = os.Executable()
		require.NoError(b, err)
	}
	var size int
	b.ReportAllocs()
	for range b.N {
		ef, err := elf.Open(bin)
		require.NoError(b, err)
		tab, err := Open(ef, Limits{MaxBytes: bigLimit, SectionBytes: bigLimit})
		require.NoError(b, err)
		size = tab.Size()
		require.NoError(b, ef.Close())
	}
	b.ReportMetric(float64(size)/(1<<20), "table-MiB")
}
