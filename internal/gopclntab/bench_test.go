// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package gopclntab

import (
	"debug/elf"
	"fmt"
	"os"
	"testing"
	"time"

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

// BenchmarkSharedInlineTable reads a hostile table, 4,000 functions of 512
// bytes sharing one inline-index table of an entry per byte (its reading
// stops at loadStepsPerByte entries per byte of the pc-value tables,
// ErrMalformed), against a normal one, the same functions each with its
// own table, in the same run: time and pc-value entries decoded per byte
// of the pc-value tables (shared-, own-), and the hostile table's time
// per byte of its file against the normal one's (x-own-per-byte).
// Without the bound, the hostile table's reading decoded an entry per byte
// of code: 2,048,000 entries from 50 KB of tables.
func BenchmarkSharedInlineTable(b *testing.B) {
	const n, size = 4000, 512
	shared, sharedGofunc := sharedInlineTable(n, size)
	own, ownGofunc := ownInlineTables(n, size)
	var sharedTime, ownTime time.Duration
	var sharedSteps, ownSteps int
	b.ReportAllocs()
	for range b.N {
		start := time.Now()
		_, err := Parse(shared, Header{ReadGoFunc: goFuncOf(sharedGofunc), steps: &sharedSteps}, Limits{MaxBytes: 1 << 28, SectionBytes: 1 << 28})
		require.ErrorIs(b, err, ErrMalformed)
		mid := time.Now()
		_, err = Parse(own, Header{ReadGoFunc: goFuncOf(ownGofunc), steps: &ownSteps}, Limits{MaxBytes: 1 << 28, SectionBytes: 1 << 28})
		require.NoError(b, err)
		sharedTime += mid.Sub(start)
		ownTime += time.Since(mid)
	}
	b.ReportMetric(float64(sharedTime.Microseconds())/float64(b.N), "shared-µs")
	b.ReportMetric(float64(ownTime.Microseconds())/float64(b.N), "own-µs")
	b.ReportMetric(float64(sharedSteps)/float64(pctabLen(shared)), "shared-steps/byte")
	b.ReportMetric(float64(ownSteps)/float64(pctabLen(own)), "own-steps/byte")
	b.ReportMetric((float64(sharedTime)/float64(len(shared)))/(float64(ownTime)/float64(len(own))), "x-own-per-byte")
}

// ownInlineTables is sharedInlineTable's functions, each with its own
// inline-index table.
func ownInlineTables(n int, size uint32) (tab, gofunc []byte) {
	alt := make([]int32, size)
	for i := range alt {
		alt[i] = int32(i % 2)
	}
	funcs := make([]synthFunc, n)
	for i := range funcs {
		funcs[i] = synthFunc{
			name: fmt.Sprintf("main.f%d", i), size: size, startLine: 10,
			lines: []int32{11}, lineStep: uint64(size),
			inl: alt, inlStep: 1,
			tree: [][3]int32{{0, 1}, {0, 1}}, treeNames: []string{"main.g", "main.h"},
		}
	}
	return synth(funcs)
}
