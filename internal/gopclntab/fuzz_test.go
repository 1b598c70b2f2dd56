// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package gopclntab

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// synthFunc is a function of a synthetic table.
type synthFunc struct {
	name      string
	size      uint32
	startLine int32
	lines     []int32 // pc-value (pc += lineStep per entry): line
	inl       []int32 // pc-value (pc += inlStep per entry): inline tree index (-1 none)
	tree      [][3]int32
	treeNames []string // names of tree records, in order
	// lineStep and inlStep are the bytes of code per entry of the lines'
	// and the inline index's tables (0: 4).
	lineStep, inlStep uint64
}

// synth writes a Go 1.20 table (little-endian, 64-bit, quantum 1) and the
// go:func.* bytes of its inline trees, as the linker lays them out.
func synth(funcs []synthFunc) (tab, gofunc []byte) {
	le := binary.LittleEndian
	var names []byte
	nameOff := map[string]uint32{}
	addName := func(n string) uint32 {
		if o, ok := nameOff[n]; ok {
			return o
		}
		o := uint32(len(names))
		names = append(append(names, n...), 0)
		nameOff[n] = o
		return o
	}
	filetab := []byte("f.go\x00")
	cutab := le.AppendUint32(nil, 0) // file 0 of CU 0: offset 0
	pctab := []byte{0}               // offset 0 means "no table"
	pvStep := func(vals []int32, step uint64) uint32 {
		if len(vals) == 0 {
			return 0
		}
		off := uint32(len(pctab))
		prev := int32(-1)
		for _, v := range vals {
			d := v - prev
			uv := uint32(d<<1) ^ uint32(d>>31)
			pctab = binary.AppendUvarint(pctab, uint64(uv))
			pctab = binary.AppendUvarint(pctab, step)
			prev = v
		}
		pctab = append(pctab, 0)
		return off
	}
	orFour := func(step uint64) uint64 {
		if step == 0 {
			return 4
		}
		return step
	}
	var recs []byte
	functab := []byte{}
	entry := uint32(0)
	nfunc := len(funcs)
	ftabSize := (nfunc + 1) * 8
	for _, f := range funcs {
		var treeOff uint32 = ^uint32(0)
		if len(f.tree) > 0 {
			treeOff = uint32(len(gofunc))
			for i, r := range f.tree {
				rec := make([]byte, inlCallSize)
				le.PutUint32(rec[inlNameOff:], addName(f.treeNames[i]))
				le.PutUint32(rec[inlParentPc:], uint32(r[0]))
				le.PutUint32(rec[inlStartLine:], uint32(r[1]))
				gofunc = append(gofunc, rec...)
			}
		}
		rec := make([]byte, funcFixedSize+4*3+4*4)
		le.PutUint32(rec[funcEntryOff:], entry)
		le.PutUint32(rec[funcNameOff:], addName(f.name))
		le.PutUint32(rec[funcPcfile:], pvStep([]int32{0}, uint64(f.size)))
		le.PutUint32(rec[funcPcln:], pvStep(f.lines, orFour(f.lineStep)))
		le.PutUint32(rec[funcNpcdata:], 3)
		le.PutUint32(rec[funcStartLine:], uint32(f.startLine))
		rec[funcNfuncdata] = 4
		le.PutUint32(rec[funcFixedSize+4*2:], pvStep(f.inl, orFour(f.inlStep)))
		for j := 0; j < 4; j++ {
			le.PutUint32(rec[funcFixedSize+12+4*j:], ^uint32(0))
		}
		le.PutUint32(rec[funcFixedSize+12+4*3:], treeOff)
		functab = le.AppendUint32(functab, entry)
		functab = le.AppendUint32(functab, uint32(ftabSize+len(recs)))
		recs = append(recs, rec...)
		entry += f.size
	}
	functab = le.AppendUint32(functab, entry)
	functab = le.AppendUint32(functab, 0)
	hdr := make([]byte, 8+8*8)
	le.PutUint32(hdr, go120Magic)
	hdr[6], hdr[7] = 1, 8
	le.PutUint64(hdr[8:], uint64(nfunc))
	le.PutUint64(hdr[16:], 1)
	le.PutUint64(hdr[24:], 0x1000) // textStart
	off := uint64(len(hdr))
	for i, part := range [][]byte{names, cutab, filetab, pctab} {
		le.PutUint64(hdr[32+8*i:], off)
		off += uint64(len(part))
	}
	le.PutUint64(hdr[64:], off)
	tab = append(tab, hdr...)
	for _, part := range [][]byte{names, cutab, filetab, pctab, functab, recs} {
		tab = append(tab, part...)
	}
	return tab, gofunc
}

// synthSeed is a table of three functions: "main.main" (size 16) with
// "main.step" inlined at its bytes 4 to 11, and "main.mix" inlined into
// that at bytes 8 to 11; "main.other"; "main.last".
func synthSeed() (tab, gofunc []byte) {
	return synth([]synthFunc{
		{
			name: "main.main", size: 16, startLine: 20,
			lines:     []int32{21, 17, 13, 22},
			inl:       []int32{-1, 0, 1, -1},
			tree:      [][3]int32{{0, 16}, {4, 12}}, // {parentPc, startLine}
			treeNames: []string{"main.step", "main.mix"},
		},
		{name: "main.other", size: 8, startLine: 30, lines: []int32{31, 32}},
		{name: "main.last", size: 4, startLine: 40, lines: []int32{41}},
	})
}

func parseSynth(tab, gofunc []byte, maxBytes int) (*Table, error) {
	return Parse(tab, Header{ReadGoFunc: goFuncOf(gofunc)}, Limits{MaxBytes: maxBytes, SectionBytes: maxBytes})
}

// TestSynthetic: the inline tree of a table laid out as the linker does.
func TestSynthetic(t *testing.T) {
	tab, gofunc := synthSeed()
	tb, err := parseSynth(tab, gofunc, 1<<20)
	require.NoError(t, err)
	frames := func(pc uint64) []Frame {
		var out []Frame
		for _, f := range tb.Lookup(pc, nil) {
			out = append(out, Frame{Function: f.Function, Line: f.Line, StartLine: f.StartLine})
		}
		return out
	}
	require.Equal(t, []Frame{{Function: "main.main", Line: 21, StartLine: 20}}, frames(0x1000))
	require.Equal(t, []Frame{{Function: "main.step", Line: 17, StartLine: 16}, {Function: "main.main", Line: 21, StartLine: 20}}, frames(0x1005))
	require.Equal(t, []Frame{
		{Function: "main.mix", Line: 13, StartLine: 12},
		{Function: "main.step", Line: 17, StartLine: 16},
		{Function: "main.main", Line: 21, StartLine: 20},
	}, frames(0x100b))
	require.Equal(t, []Frame{{Function: "main.main", Line: 22, StartLine: 20}}, frames(0x100c))
	require.Equal(t, []Frame{{Function: "main.other", Line: 32, StartLine: 30}}, frames(0x1014))
	require.Equal(t, []Frame{{Function: "main.last", Line: 41, StartLine: 40}}, frames(0x1018))
	require.Empty(t, frames(0x101c))
	require.Empty(t, frames(0xfff))
	// Without the inline trees: the physical function, at the address's
	// own line.
	nt, err := Parse(tab, Header{}, Limits{MaxBytes: 1 << 20, SectionBytes: 1 << 20})
	require.NoError(t, err)
	require.True(t, nt.NoInlineTrees)
	require.Len(t, nt.Lookup(0x100b, nil), 1)
}

// FuzzParse parses arbitrary tables and inline trees and looks up every
// address of their first functions: never a panic, never more kept than
// the limit, never more frames than the inline depth bound. `make test`
// runs it over the seeds (testdata/fuzz/FuzzParse and below).
func FuzzParse(f *testing.F) {
	tab, gofunc := synthSeed()
	f.Add(tab, gofunc, uint64(0x1000))
	f.Add(tab[:len(tab)-7], gofunc, uint64(0x1008))
	f.Add(tab, gofunc[:20], uint64(0x100b))
	bad := append([]byte(nil), tab...)
	binary.LittleEndian.PutUint64(bad[8:], 1<<40) // nfunc
	f.Add(bad, gofunc, uint64(0x1000))
	loop := append([]byte(nil), gofunc...)
	binary.LittleEndian.PutUint32(loop[16+inlParentPc:], 8) // mix's parent is itself
	f.Add(tab, loop, uint64(0x100b))
	shared, sharedGofunc := sharedInlineTable(64, 512)
	f.Add(shared, sharedGofunc, uint64(0x1000))
	deep, deepGofunc := deepInlineChain()
	f.Add(deep, deepGofunc, uint64(0x1005))
	f.Fuzz(func(t *testing.T, tab, gofunc []byte, pc uint64) {
		const limit = 1 << 20
		tb, err := parseSynth(tab, gofunc, limit)
		if err != nil {
			return
		}
		if tb.Size() > limit+256 {
			t.Fatalf("kept %d bytes, limit %d", tb.Size(), limit)
		}
		var buf []Frame
		for a := uint64(0x1000); a < 0x1000+64; a++ {
			buf = tb.Lookup(a, buf[:0])
			if len(buf) > maxInlineDepth+1 {
				t.Fatalf("%d frames", len(buf))
			}
		}
		tb.Lookup(pc, nil)
	})
}
