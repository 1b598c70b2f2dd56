// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package convert

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"
)

// heapProfile10k builds a realistic Go heap profile: 10,000 samples with the
// four heap sample types and a "bytes" label, over stacks 8 to 40 frames deep
// that share prefixes (a call tree), 1,500 functions, some frames inlined.
func heapProfile10k() *profile.Profile {
	const samples, funcs = 10_000, 1_500
	rng := rand.New(rand.NewPCG(1, 2))
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x2400000, File: "/usr/local/bin/checkout", BuildID: "9f2c0e7d4b"}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
		},
		DefaultSampleType: "inuse_space",
		PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:            512 * 1024,
		TimeNanos:         1_700_000_000_000_000_000,
		Mapping:           []*profile.Mapping{m},
	}
	for i := range funcs {
		name := fmt.Sprintf("github.com/acme/checkout/internal/pkg%d.(*Service%d).Handle%d", i%60, i%17, i)
		p.Function = append(p.Function, &profile.Function{
			ID: uint64(i + 1), Name: name, SystemName: name,
			Filename: fmt.Sprintf("/src/checkout/internal/pkg%d/file%d.go", i%60, i%9), StartLine: int64(10 + i%400),
		})
	}
	locFor := map[[2]int]*profile.Location{}
	loc := func(fn, line int) *profile.Location {
		k := [2]int{fn, line}
		if l, ok := locFor[k]; ok {
			return l
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: 0x400000 + uint64(len(p.Location))*16,
			Line: []profile.Line{{Function: p.Function[fn], Line: int64(line)}}}
		if fn%7 == 0 { // an inlined callee
			l.Line = append([]profile.Line{{Function: p.Function[(fn+1)%funcs], Line: int64(line + 3)}}, l.Line...)
		}
		locFor[k] = l
		p.Location = append(p.Location, l)
		return l
	}
	sizes := []int64{16, 32, 48, 64, 96, 128, 256, 512, 1024, 4096, 8192, 32768}
	for range samples {
		depth := 8 + rng.IntN(33)
		stack := make([]*profile.Location, depth)
		fn := rng.IntN(20) // roots come from few functions: shared prefixes
		for d := depth - 1; d >= 0; d-- {
			stack[d] = loc(fn, 20+rng.IntN(4))
			fn = (fn*31 + 7 + rng.IntN(3)) % funcs
		}
		size := sizes[rng.IntN(len(sizes))]
		n := int64(1 + rng.IntN(500))
		inuse := n / int64(1+rng.IntN(4))
		p.Sample = append(p.Sample, &profile.Sample{
			Location: stack,
			Value:    []int64{n, n * size, inuse, inuse * size},
			NumLabel: map[string][]int64{"bytes": {size}},
		})
	}
	return p
}

func BenchmarkConvertHeap10k(b *testing.B) {
	p := heapProfile10k()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Convert(p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p.Sample))*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkParseConvertHeap10k includes gunzip and pprof parsing, the whole
// per-scrape cost after the HTTP transfer.
func BenchmarkParseConvertHeap10k(b *testing.B) {
	p := heapProfile10k()
	var buf bytes.Buffer
	require.NoError(b, p.Write(&buf))
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		q, err := Parse(data, 64<<20)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Convert(q); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p.Sample))*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// TestHeapProfile10kConverts checks the benchmark's input converts correctly,
// so that the figures are those of a real conversion.
func TestHeapProfile10kConverts(t *testing.T) {
	p := heapProfile10k()
	require.NoError(t, p.CheckValid())
	require.Len(t, p.Sample, 10_000)
	pd, err := Convert(p)
	require.NoError(t, err)
	require.Equal(t, 4, pd.ProfileCount())
	checkUniqueKeys(t, pd)
}
