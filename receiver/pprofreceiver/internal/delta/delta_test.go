// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package delta

import (
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	fA   = &profile.Function{ID: 1, Name: "main.a", Filename: "a.go"}
	fB   = &profile.Function{ID: 2, Name: "main.b", Filename: "b.go"}
	locA = &profile.Location{ID: 1, Address: 0x10, Line: []profile.Line{{Function: fA, Line: 1}}}
	locB = &profile.Location{ID: 2, Address: 0x20, Line: []profile.Line{{Function: fB, Line: 2}}}
)

// heap returns a heap profile at time ts with, per stack [A] (size label
// 64), [A] (size label 128) and [B, A], the values
// alloc_objects, alloc_space, inuse_objects, inuse_space.
func heap(ts int64, a64, a128, ba [4]int64) *profile.Profile {
	return &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
		},
		TimeNanos: ts,
		Sample: []*profile.Sample{
			{Location: []*profile.Location{locA}, Value: a64[:], NumLabel: map[string][]int64{"bytes": {64}}},
			{Location: []*profile.Location{locA}, Value: a128[:], NumLabel: map[string][]int64{"bytes": {128}}},
			{Location: []*profile.Location{locB, locA}, Value: ba[:]},
		},
		Location: []*profile.Location{locA, locB},
		Function: []*profile.Function{fA, fB},
	}
}

func types(p *profile.Profile) []string {
	var out []string
	for _, st := range p.SampleType {
		out = append(out, st.Type)
	}
	return out
}

func values(p *profile.Profile) [][]int64 {
	var out [][]int64
	for _, s := range p.Sample {
		out = append(out, s.Value)
	}
	return out
}

func TestDeltas(t *testing.T) {
	tr := NewTracker()

	// First scrape: baseline only; snapshot types as they are.
	r1 := tr.Next(heap(100, [4]int64{1, 64, 1, 64}, [4]int64{2, 256, 0, 0}, [4]int64{5, 500, 1, 100}))
	assert.Nil(t, r1.Delta)
	require.NotNil(t, r1.Snapshot)
	assert.Equal(t, []string{"inuse_objects", "inuse_space"}, types(r1.Snapshot))
	assert.Equal(t, [][]int64{{1, 64}, {1, 100}}, values(r1.Snapshot), "all-zero samples left out")
	tr.Commit(r1)

	r2 := tr.Next(heap(300, [4]int64{4, 256, 1, 64}, [4]int64{2, 256, 0, 0}, [4]int64{6, 600, 0, 0}))
	require.NotNil(t, r2.Delta)
	assert.Equal(t, []string{"alloc_objects", "alloc_space"}, types(r2.Delta))
	assert.Equal(t, [][]int64{{3, 192}, {1, 100}}, values(r2.Delta), "differences; unchanged sample left out")
	assert.Equal(t, int64(100), r2.Delta.TimeNanos, "window starts at the previous scrape")
	assert.Equal(t, int64(200), r2.Delta.DurationNanos)
	assert.Equal(t, int64(300), r2.Snapshot.TimeNanos)
	assert.Empty(t, r2.Reset)
	tr.Commit(r2)

	// A restart: counters go down; the values are sent as they are.
	r3 := tr.Next(heap(400, [4]int64{1, 64, 1, 64}, [4]int64{0, 0, 0, 0}, [4]int64{0, 0, 0, 0}))
	assert.Equal(t, []string{"alloc_objects", "alloc_space"}, r3.Reset)
	assert.Equal(t, [][]int64{{1, 64}}, values(r3.Delta))
	tr.Commit(r3)

	// Not committed (delivery failed): the next delta covers both windows.
	r4 := tr.Next(heap(500, [4]int64{2, 128, 1, 64}, [4]int64{0, 0, 0, 0}, [4]int64{0, 0, 0, 0}))
	assert.Equal(t, [][]int64{{1, 64}}, values(r4.Delta))
	r5 := tr.Next(heap(600, [4]int64{3, 192, 1, 64}, [4]int64{0, 0, 0, 0}, [4]int64{0, 0, 0, 0}))
	assert.Equal(t, [][]int64{{2, 128}}, values(r5.Delta))
	assert.Equal(t, int64(400), r5.Delta.TimeNanos)
}

func TestDuplicateKeysKeepExactTotals(t *testing.T) {
	tr := NewTracker()
	p := func(v1, v2 int64) *profile.Profile {
		return &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}},
			Sample: []*profile.Sample{
				{Location: []*profile.Location{locA}, Value: []int64{v1, v1 * 10}},
				{Location: []*profile.Location{locA}, Value: []int64{v2, v2 * 10}},
			},
		}
	}
	tr.Commit(tr.Next(p(1, 2)))
	r := tr.Next(p(5, 3)) // key total 3 -> 8
	assert.Nil(t, r.Snapshot)
	assert.Equal(t, [][]int64{{5, 50}}, values(r.Delta))
	assert.Empty(t, r.Reset)
}

func TestSnapshotOnlyTypesPassThrough(t *testing.T) {
	tr := NewTracker()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "goroutine", Unit: "count"}},
		Sample:     []*profile.Sample{{Location: []*profile.Location{locA}, Value: []int64{7}}},
	}
	r := tr.Next(p)
	assert.Nil(t, r.Delta)
	assert.Equal(t, [][]int64{{7}}, values(r.Snapshot))
	r = tr.Next(p)
	assert.Equal(t, [][]int64{{7}}, values(r.Snapshot), "snapshots are never differenced")
}

func TestKeyDistinguishesStacksAndLabels(t *testing.T) {
	tr := NewTracker()
	k := func(s *profile.Sample) string { return tr.key(s) }
	base := &profile.Sample{Location: []*profile.Location{locB, locA}}
	assert.NotEqual(t, k(base), k(&profile.Sample{Location: []*profile.Location{locA, locB}}))
	assert.NotEqual(t, k(base), k(&profile.Sample{Location: []*profile.Location{locB, locA}, Label: map[string][]string{"x": {"1"}}}))
	assert.NotEqual(t,
		k(&profile.Sample{Location: []*profile.Location{locA}, Label: map[string][]string{"x": {"1"}}}),
		k(&profile.Sample{Location: []*profile.Location{locA}, NumLabel: map[string][]int64{"x": {1}}}))
	other := &profile.Location{ID: 9, Address: 0x10, Line: []profile.Line{{Function: fA, Line: 2}}}
	assert.NotEqual(t, k(&profile.Sample{Location: []*profile.Location{locA}}), k(&profile.Sample{Location: []*profile.Location{other}}), "line numbers count")
	same := &profile.Location{ID: 10, Address: 0x10, Line: []profile.Line{{Function: &profile.Function{ID: 11, Name: "main.a", Filename: "a.go"}, Line: 1}}}
	assert.Equal(t, k(&profile.Sample{Location: []*profile.Location{locA}}), k(&profile.Sample{Location: []*profile.Location{same}}), "keyed by value, not by id")
}

// TestMissingStackIsZeroDelta: a stack that is absent from a scrape (the
// server left out a record, or it was folded away) adds nothing; it is no
// sign of a restart, and when it comes back its delta is taken against its
// last value, not sent whole.
func TestMissingStackIsZeroDelta(t *testing.T) {
	tr := NewTracker()
	mutex := func(ts int64, a, ba int64) *profile.Profile {
		p := &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}},
			TimeNanos:  ts,
			Sample:     []*profile.Sample{{Location: []*profile.Location{locA}, Value: []int64{a, a * 10}}},
		}
		if ba > 0 {
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{locB, locA}, Value: []int64{ba, ba * 10}})
		}
		return p
	}
	tr.Commit(tr.Next(mutex(100, 5, 7)))

	r := tr.Next(mutex(200, 8, 0)) // [B, A] is missing
	assert.Empty(t, r.Reset, "a missing stack is no restart")
	assert.Equal(t, [][]int64{{3, 30}}, values(r.Delta), "only what grew; the missing stack adds 0")
	tr.Commit(r)

	r = tr.Next(mutex(300, 8, 9)) // [B, A] is back, 7 -> 9
	assert.Empty(t, r.Reset)
	assert.Equal(t, [][]int64{{2, 20}}, values(r.Delta), "measured against its last value")
	tr.Commit(r)

	r = tr.Next(mutex(400, 1, 9)) // [A] went down: that is a restart
	assert.Equal(t, []string{"contentions", "delay"}, r.Reset)
	assert.Equal(t, [][]int64{{1, 10}, {9, 90}}, values(r.Delta))
}
