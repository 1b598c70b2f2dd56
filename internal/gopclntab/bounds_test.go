// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package gopclntab

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// eachFunc calls fn with each function record of a synthetic table and
// its functab entry.
func eachFunc(tab []byte, fn func(i int, ftab, rec []byte)) {
	le := binary.LittleEndian
	nfunc := le.Uint64(tab[8:])
	pcln := le.Uint64(tab[8+7*8:])
	for i := uint64(0); i < nfunc; i++ {
		ftab := tab[pcln+8*i:]
		fn(int(i), ftab[:8], tab[pcln+uint64(le.Uint32(ftab[4:])):])
	}
}

// sharedInlineTable is a table of n functions of size bytes each, all
// pointing to the inline-index table of the first (as the linker shares
// identical tables, or a hostile file one for all): an entry per byte of
// code, alternately 0 and 1, so that each function's walk is as long as
// the function. Only the first function's table is in the file: the walks
// are n times its length.
func sharedInlineTable(n int, size uint32) (tab, gofunc []byte) {
	funcs := make([]synthFunc, n)
	for i := range funcs {
		funcs[i] = synthFunc{
			name: fmt.Sprintf("main.f%d", i), size: size, startLine: 10,
			lines: []int32{11}, lineStep: uint64(size),
			inl: []int32{1}, inlStep: uint64(size),
			tree: [][3]int32{{0, 1}, {0, 1}}, treeNames: []string{"main.g", "main.h"},
		}
	}
	alt := make([]int32, size)
	for i := range alt {
		alt[i] = int32(i % 2)
	}
	funcs[0].inl, funcs[0].inlStep = alt, 1
	tab, gofunc = synth(funcs)
	var first uint32
	eachFunc(tab, func(i int, _, rec []byte) {
		at := rec[funcFixedSize+4*pcdataInlIndex:]
		if i == 0 {
			first = binary.LittleEndian.Uint32(at)
		}
		binary.LittleEndian.PutUint32(at, first)
	})
	return tab, gofunc
}

// TestLoadStepsBoundedByTheTables: functions sharing one long inline-index
// table cost the reading at most loadStepsPerByte pc-value entries per
// byte of the pc-value tables (then ErrMalformed), not a walk of the
// table per function; a table whose functions do not share it reads; the
// test binary's own walks stay below one entry per two bytes.
func TestLoadStepsBoundedByTheTables(t *testing.T) {
	const n, size = 4000, 512
	tab, gofunc := sharedInlineTable(n, size)
	var steps int
	_, err := Parse(tab, Header{ReadGoFunc: goFuncOf(gofunc), steps: &steps}, Limits{MaxBytes: 1 << 26, SectionBytes: 1 << 26})
	require.ErrorIs(t, err, ErrMalformed)
	pctab := pctabLen(tab)
	budget := max(loadStepsPerByte*pctab, loadStepsMin)
	require.LessOrEqual(t, steps, budget)
	// Unbounded, the walks would take an entry per byte of every
	// function's code.
	require.Greater(t, n*size, 10*budget, "the test's table must cost far more than the bound")

	// The same functions, each with its table: read.
	own, ownGofunc := sharedInlineTable(2, size)
	tb, err := Parse(own, Header{ReadGoFunc: goFuncOf(ownGofunc), steps: &steps}, Limits{MaxBytes: 1 << 26, SectionBytes: 1 << 26})
	require.NoError(t, err)
	require.Equal(t, 2*size+2, steps, "the shared table walked once per function that uses it (its length, then its parents: 1 entry)")
	// Its records' parents are at the function's entry, where the
	// index is the first record's: a chain followed maxInlineDepth deep.
	fs := tb.Lookup(0x1001, nil)
	require.Len(t, fs, maxInlineDepth+1)
	require.Equal(t, "main.h", fs[0].Function)
	require.Equal(t, "main.g", fs[1].Function)
	require.Equal(t, "main.f0", fs[maxInlineDepth].Function)

	self, _ := openSelf(t)
	t.Logf("this test binary: %d pc-value entries decoded for %d bytes of pc-value tables (%.3f per byte)", self.loadSteps, len(self.pctab), float64(self.loadSteps)/float64(len(self.pctab)))
	require.Less(t, self.loadSteps, len(self.pctab)/2)
}

// TestEntriesMustIncrease: a function table with two equal entries (a
// function of no code, whose walks would have no end but their table's)
// is malformed.
func TestEntriesMustIncrease(t *testing.T) {
	tab, gofunc := synthSeed()
	_, err := parseSynth(tab, gofunc, 1<<20)
	require.NoError(t, err)
	le := binary.LittleEndian
	var entry1 uint32
	eachFunc(tab, func(i int, ftab, rec []byte) {
		switch i {
		case 1:
			entry1 = le.Uint32(ftab)
		case 2:
			le.PutUint32(ftab, entry1)
			le.PutUint32(rec[funcEntryOff:], entry1)
		}
	})
	_, err = parseSynth(tab, gofunc, 1<<20)
	require.ErrorIs(t, err, ErrMalformed)
}

// deepInlineChain is a function, main.deep, with 65 calls inlined one in
// the other, each call 256 bytes of code further, and a line table of an
// entry per byte.
func deepInlineChain() (tab, gofunc []byte) {
	const runs = maxInlineDepth + 2
	f := synthFunc{name: "main.deep", size: runs * 256, startLine: 99, inlStep: 256, lineStep: 1}
	for k := 0; k < runs*256; k++ {
		f.lines = append(f.lines, int32(100+k%2))
	}
	for k := 0; k < runs-1; k++ {
		f.inl = append(f.inl, int32(k))
		f.tree = append(f.tree, [3]int32{int32(256 * (k + 1)), int32(k)})
		f.treeNames = append(f.treeNames, fmt.Sprintf("main.in%d", k))
	}
	f.inl = append(f.inl, -1)
	return synth([]synthFunc{f})
}

// TestLookupWalksEachTableOnce: the frames at an address inside 64 calls
// inlined one in the other are given by one walk of each of the
// function's tables (inline index, files, lines), up to the largest
// address the chain needs, not one walk per inlined call.
func TestLookupWalksEachTableOnce(t *testing.T) {
	tab, gofunc := deepInlineChain()
	tb, err := parseSynth(tab, gofunc, 1<<22)
	require.NoError(t, err)
	frames, steps := tb.lookup(0x1005, nil)
	require.Len(t, frames, maxInlineDepth+1)
	for k := 0; k < maxInlineDepth; k++ {
		line := int64(100) // each caller at its call, 256 bytes further: an even offset
		if k == 0 {
			line = 101 // the address, 5 bytes in
		}
		require.Equal(t, Frame{Function: fmt.Sprintf("main.in%d", k), SystemName: fmt.Sprintf("main.in%d", k), File: "f.go", Line: line, StartLine: int64(k)}, frames[k])
	}
	require.Equal(t, "main.deep", frames[maxInlineDepth].Function)
	// The inline index up to the address (1 entry), the files (1), the
	// lines up to the outermost call, 64*256 bytes in (an entry a byte).
	require.Equal(t, 1+1+maxInlineDepth*256+1, steps)
}

// TestWindowShortRead: a reader that has fewer bytes than the window's
// size says (a file cut short) gives an error, never the bytes of an
// earlier window.
func TestWindowShortRead(t *testing.T) {
	data := make([]byte, 4096)
	for i := range data {
		data[i] = byte(i%251) + 1
	}
	w := &window{r: bytes.NewReader(data), size: int64(len(data)) + 100}
	b, err := w.read(0, 16)
	require.NoError(t, err)
	require.Equal(t, data[:16], b)
	_, err = w.read(uint64(len(data))-8, 16)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	b, err = w.read(uint64(len(data))-8, 8)
	require.NoError(t, err)
	require.Equal(t, data[len(data)-8:], b)
	_, err = parse(bytes.NewReader(tabWithoutTail()), int64(len(tabWithoutTail()))+64, Header{}, Limits{MaxBytes: 1 << 20, SectionBytes: 1 << 20})
	require.ErrorIs(t, err, ErrMalformed)
}

// tabWithoutTail is the seed table without its last function record's
// bytes.
func tabWithoutTail() []byte {
	tab, _ := synthSeed()
	return tab[:len(tab)-20]
}

// TestInlineTreesKeptAtTheirSize: the memory the table holds once read is
// at most Size (the inline trees' buffer has no spare capacity Size would
// not count).
func TestInlineTreesKeptAtTheirSize(t *testing.T) {
	var funcs []synthFunc
	for i := 0; i < 48; i++ {
		const n = 1900 + 7
		f := synthFunc{name: fmt.Sprintf("main.f%d", i), size: 16, startLine: 1, lines: []int32{2}, inl: []int32{n - 1}, inlStep: 16}
		for r := 0; r < n; r++ {
			f.tree = append(f.tree, [3]int32{0, 1})
			f.treeNames = append(f.treeNames, "main.g")
		}
		funcs = append(funcs, f)
	}
	tab, gofunc := synth(funcs)
	read := goFuncOf(gofunc)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	tb, err := Parse(tab, Header{ReadGoFunc: read}, Limits{MaxBytes: 1 << 26, SectionBytes: 1 << 26})
	require.NoError(t, err)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	held := int64(ms.HeapAlloc) - int64(before)
	require.Greater(t, len(tb.inl), 1<<20)
	require.LessOrEqual(t, held, int64(tb.Size())+32<<10, "held %d bytes, Size %d", held, tb.Size())
	runtime.KeepAlive(tb)
	runtime.KeepAlive(tab) // the input, live before Parse: live after
	runtime.KeepAlive(gofunc)
}

func goFuncOf(gofunc []byte) func(off uint64, n int) ([]byte, error) {
	return func(off uint64, n int) ([]byte, error) {
		if off > uint64(len(gofunc)) || uint64(n) > uint64(len(gofunc))-off {
			return nil, ErrMalformed
		}
		return gofunc[off : off+uint64(n)], nil
	}
}

// pctabLen is the size of a synthetic table's pc-value tables.
func pctabLen(tab []byte) int {
	le := binary.LittleEndian
	return int(le.Uint64(tab[8+7*8:]) - le.Uint64(tab[8+6*8:]))
}
