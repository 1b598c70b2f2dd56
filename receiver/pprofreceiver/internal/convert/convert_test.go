// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package convert

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/pproftest"
)

// sampleProfile is a heap-like profile using every pprof field the
// conversion maps.
func sampleProfile() *profile.Profile {
	fMain := &profile.Function{ID: 1, Name: "main.main", SystemName: "main.main", Filename: "/src/main.go", StartLine: 10}
	fAlloc := &profile.Function{ID: 2, Name: "main.alloc", SystemName: "main.alloc.abi0", Filename: "/src/alloc.go", StartLine: 20}
	fInl := &profile.Function{ID: 3, Name: "bytes.Repeat", SystemName: "bytes.Repeat", Filename: "/go/bytes.go", StartLine: 5}
	fRt := &profile.Function{ID: 4, Name: "runtime.main", SystemName: "runtime.main", Filename: "/go/runtime/proc.go", StartLine: 140}
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x800000, Offset: 0x1000, File: "/usr/bin/app", BuildID: "f00dbabe",
		HasFunctions: true, HasFilenames: true, HasLineNumbers: true}
	lRt := &profile.Location{ID: 1, Mapping: m, Address: 0x401000, Line: []profile.Line{{Function: fRt, Line: 283}}}
	lMain := &profile.Location{ID: 2, Mapping: m, Address: 0x402000, Line: []profile.Line{{Function: fMain, Line: 12, Column: 4}}, IsFolded: true}
	// An inlined frame: bytes.Repeat inlined into main.alloc.
	lAlloc := &profile.Location{ID: 3, Mapping: m, Address: 0x403000, Line: []profile.Line{{Function: fInl, Line: 7}, {Function: fAlloc, Line: 22}}}
	return &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
		},
		DefaultSampleType: "inuse_space",
		PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:            524288,
		TimeNanos:         1_700_000_000_000_000_000,
		DurationNanos:     5_000_000,
		Comments:          []string{"first comment", "second comment"},
		DocURL:            "https://pkg.go.dev/runtime/pprof",
		Sample: []*profile.Sample{
			{
				Location: []*profile.Location{lAlloc, lMain, lRt},
				Value:    []int64{10, 10240, 2, 2048},
				Label:    map[string][]string{"handler": {"/checkout"}},
				NumLabel: map[string][]int64{"bytes": {1024}},
			},
			{
				Location: []*profile.Location{lMain, lRt},
				Value:    []int64{3, 300, 0, 0},
				NumLabel: map[string][]int64{"wait": {5}, "ids": {1, 2}},
				NumUnit:  map[string][]string{"wait": {"seconds"}},
				Label:    map[string][]string{"tags": {"a", "b"}},
			},
		},
		Mapping:  []*profile.Mapping{m},
		Location: []*profile.Location{lRt, lMain, lAlloc},
		Function: []*profile.Function{fMain, fAlloc, fInl, fRt},
	}
}

func str(pd pprofile.Profiles, i int32) string { return pd.Dictionary().StringTable().At(int(i)) }

func attrs(t *testing.T, pd pprofile.Profiles, rec interface{ AttributeIndices() pcommon.Int32Slice }) map[string]any {
	t.Helper()
	m, err := pprofile.FromAttributeIndices(pd.Dictionary().AttributeTable(), rec, pd.Dictionary())
	require.NoError(t, err)
	return m.AsRaw()
}

func TestConvertFields(t *testing.T) {
	p := sampleProfile()
	pd, err := Convert(p)
	require.NoError(t, err)
	d := pd.Dictionary()

	// The zero entries required at index 0 of every table.
	assert.Empty(t, d.StringTable().At(0))
	for _, n := range []int{d.MappingTable().Len(), d.LocationTable().Len(), d.FunctionTable().Len(), d.LinkTable().Len(), d.AttributeTable().Len(), d.StackTable().Len()} {
		assert.Positive(t, n)
	}
	assert.Equal(t, pprofile.NewMapping(), d.MappingTable().At(0))
	assert.Equal(t, pprofile.NewLocation(), d.LocationTable().At(0))
	assert.Equal(t, pprofile.NewFunction(), d.FunctionTable().At(0))
	assert.Equal(t, 0, d.StackTable().At(0).LocationIndices().Len())

	profs := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles()
	require.Equal(t, 4, profs.Len(), "one profile per sample type")
	wantTypes := [][2]string{{"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}}
	ids := map[pprofile.ProfileID]bool{}
	for i, prof := range profs.All() {
		assert.Equal(t, wantTypes[i][0], str(pd, prof.SampleType().TypeStrindex()))
		assert.Equal(t, wantTypes[i][1], str(pd, prof.SampleType().UnitStrindex()))
		assert.Equal(t, "space", str(pd, prof.PeriodType().TypeStrindex()))
		assert.Equal(t, "bytes", str(pd, prof.PeriodType().UnitStrindex()))
		assert.Equal(t, int64(524288), prof.Period())
		assert.Equal(t, pcommon.Timestamp(p.TimeNanos), prof.Time())
		assert.Equal(t, uint64(p.DurationNanos), prof.DurationNano())
		assert.False(t, prof.ProfileID().IsEmpty())
		ids[prof.ProfileID()] = true
		assert.Equal(t, map[string]any{
			"pprof.profile.comment": []any{"first comment", "second comment"},
			"pprof.profile.doc_url": "https://pkg.go.dev/runtime/pprof",
		}, attrs(t, pd, prof), "semantic-convention names")
		assert.Empty(t, prof.OriginalPayloadFormat())
	}
	assert.Len(t, ids, 4, "profile ids are unique")
	assert.Equal(t, map[string]any{"pprof.scope.default_sample_type": "inuse_space"},
		pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Scope().Attributes().AsRaw(), "the conventions put it on the scope")

	// Zero values are left out: the inuse profiles have only the first sample.
	assert.Equal(t, 2, profs.At(0).Samples().Len())
	assert.Equal(t, 1, profs.At(3).Samples().Len())

	s := profs.At(1).Samples().At(0)
	assert.Equal(t, []int64{10240}, s.Values().AsRaw())
	assert.Equal(t, map[string]any{"handler": "/checkout", "bytes": int64(1024)}, attrs(t, pd, s))
	for _, ai := range s.AttributeIndices().All() {
		kv := d.AttributeTable().At(int(ai))
		if str(pd, kv.KeyStrindex()) == "bytes" {
			assert.Equal(t, "bytes", str(pd, kv.UnitStrindex()), "numeric label unit inferred like pprof does")
		}
	}
	s2 := profs.At(1).Samples().At(1)
	assert.Equal(t, map[string]any{"wait": int64(5), "ids": []any{int64(1), int64(2)}, "tags": []any{"a", "b"}}, attrs(t, pd, s2))
	for _, ai := range s2.AttributeIndices().All() {
		kv := d.AttributeTable().At(int(ai))
		if str(pd, kv.KeyStrindex()) == "wait" {
			assert.Equal(t, "seconds", str(pd, kv.UnitStrindex()))
		}
	}

	// The stack, leaf first, with the inlined frame's lines in order.
	stack := d.StackTable().At(int(s.StackIndex())).LocationIndices()
	require.Equal(t, 3, stack.Len())
	leaf := d.LocationTable().At(int(stack.At(0)))
	assert.Equal(t, uint64(0x403000), leaf.Address())
	require.Equal(t, 2, leaf.Lines().Len())
	assert.Equal(t, int64(7), leaf.Lines().At(0).Line())
	inl := d.FunctionTable().At(int(leaf.Lines().At(0).FunctionIndex()))
	assert.Equal(t, "bytes.Repeat", str(pd, inl.NameStrindex()))
	caller := d.FunctionTable().At(int(leaf.Lines().At(1).FunctionIndex()))
	assert.Equal(t, "main.alloc", str(pd, caller.NameStrindex()))
	assert.Equal(t, "main.alloc.abi0", str(pd, caller.SystemNameStrindex()))
	assert.Equal(t, "/src/alloc.go", str(pd, caller.FilenameStrindex()))
	assert.Equal(t, int64(20), caller.StartLine())
	mainLoc := d.LocationTable().At(int(stack.At(1)))
	assert.Equal(t, int64(4), mainLoc.Lines().At(0).Column())
	assert.Equal(t, map[string]any{"pprof.location.is_folded": true}, attrs(t, pd, mainLoc))
	assert.Empty(t, attrs(t, pd, leaf), "is_folded is only set when true")

	mp := d.MappingTable().At(int(leaf.MappingIndex()))
	assert.Equal(t, uint64(0x400000), mp.MemoryStart())
	assert.Equal(t, uint64(0x800000), mp.MemoryLimit())
	assert.Equal(t, uint64(0x1000), mp.FileOffset())
	assert.Equal(t, "/usr/bin/app", str(pd, mp.FilenameStrindex()))
	assert.Equal(t, map[string]any{
		"process.executable.build_id.gnu": "f00dbabe",
		"pprof.mapping.has_functions":     true,
		"pprof.mapping.has_filenames":     true,
		"pprof.mapping.has_line_numbers":  true,
	}, attrs(t, pd, mp), "the mapping flags that are set, by their semantic-convention names")

	// Deduplication: the 3 locations, 4 functions, 1 mapping appear once.
	assert.Equal(t, 4, d.LocationTable().Len())
	assert.Equal(t, 5, d.FunctionTable().Len())
	assert.Equal(t, 2, d.MappingTable().Len())
	assert.Equal(t, 3, d.StackTable().Len())

	// Totals agree with pprof's.
	got, err := pproftest.FromOTLP(pd)
	require.NoError(t, err)
	assert.Equal(t, pproftest.FromPprof(p), got)
	assert.True(t, IsGo(p))
}

func TestOriginalPayload(t *testing.T) {
	out := pprofile.NewProfiles()
	b := NewBuilder(out.Dictionary())
	sp := out.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty()
	require.NoError(t, b.Append(sampleProfile(), sp.Profiles(), Options{OriginalPayload: []byte("raw")}))
	assert.Equal(t, "pprof", sp.Profiles().At(0).OriginalPayloadFormat())
	assert.Equal(t, []byte("raw"), sp.Profiles().At(0).OriginalPayload().AsRaw())
	assert.Empty(t, sp.Profiles().At(1).OriginalPayloadFormat(), "kept once per scrape")
}

func TestSharedDictionary(t *testing.T) {
	p := sampleProfile()
	pd, err := Convert(p, p)
	require.NoError(t, err)
	assert.Equal(t, 8, pd.ProfileCount())
	assert.Equal(t, 4, pd.Dictionary().LocationTable().Len(), "entries shared, not repeated")
}

func TestMismatchedValues(t *testing.T) {
	p := sampleProfile()
	p.Sample[0].Value = p.Sample[0].Value[:2]
	_, err := Convert(p)
	require.ErrorContains(t, err, "sample has 2 values, want 4")
}

func TestIsGo(t *testing.T) {
	p := sampleProfile()
	assert.True(t, IsGo(p))
	p.Function = p.Function[:3] // without runtime.main
	assert.False(t, IsGo(p))
}

func TestParse(t *testing.T) {
	var plain bytes.Buffer
	require.NoError(t, sampleProfile().WriteUncompressed(&plain))

	for name, data := range map[string][]byte{"plain": plain.Bytes(), "gzip": pproftest.Gzip(t, plain.Bytes())} {
		t.Run(name, func(t *testing.T) {
			p, err := Parse(data, 1<<20)
			require.NoError(t, err)
			assert.Len(t, p.Sample, 2)
		})
	}
	_, err := Parse(plain.Bytes(), int64(plain.Len()-1))
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = Parse(pproftest.Gzip(t, make([]byte, 1<<20)), 1<<19)
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = Parse(nil, 1<<20)
	require.ErrorContains(t, err, "empty profile")
	_, err = Parse([]byte{0x1f, 0x8b, 1, 2, 3}, 1<<20)
	require.ErrorContains(t, err, "gzip")
}

// TestParseRefusesNestedGzip: gzip inside gzip, 64 MiB of zeros in a body of
// a few hundred bytes, is refused before the inner layer is expanded (the
// pprof parser would gunzip it without any limit).
func TestParseRefusesNestedGzip(t *testing.T) {
	bomb := pproftest.Gzip(t, pproftest.Gzip(t, make([]byte, 64<<20)))
	require.Less(t, len(bomb), 1024)
	t.Logf("%d-byte body, 64 MiB after two gunzips", len(bomb))
	_, err := Parse(bomb, 1<<20)
	require.ErrorIs(t, err, ErrNestedGzip)

	var plain bytes.Buffer
	require.NoError(t, sampleProfile().WriteUncompressed(&plain))
	_, err = Parse(pproftest.Gzip(t, pproftest.Gzip(t, plain.Bytes())), 1<<20)
	require.ErrorIs(t, err, ErrNestedGzip, "however small the inner layer")
}

// TestExpansionBounded: a sample with thousands of labels and thousands of
// non-zero sample types, small as pprof, would be written once per type with
// all its labels. It is refused instead.
func TestExpansionBounded(t *testing.T) {
	const n = 2000
	fn := &profile.Function{ID: 1, Name: "main.f"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	s := &profile.Sample{Location: []*profile.Location{loc}, NumLabel: map[string][]int64{}}
	p := &profile.Profile{Sample: []*profile.Sample{s}, Location: []*profile.Location{loc}, Function: []*profile.Function{fn}}
	for i := range n {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: fmt.Sprintf("t%d", i), Unit: "count"})
		s.Value = append(s.Value, 1)
		s.NumLabel[fmt.Sprintf("l%d", i)] = []int64{int64(i)}
	}
	var raw bytes.Buffer
	require.NoError(t, p.Write(&raw))
	t.Logf("%d-byte pprof, %d x %d output entries", raw.Len(), n, n+1)
	_, err := Convert(p)
	require.ErrorIs(t, err, ErrExpansion)
}

func TestLabelKeyCollision(t *testing.T) {
	p := sampleProfile()
	p.Sample[0].Label = map[string][]string{"a": {"x"}}
	p.Sample[0].NumLabel = map[string][]int64{"a": {1}, "a.num": {2}}
	pd, err := Convert(p)
	require.NoError(t, err)
	checkUniqueKeys(t, pd)
	s := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0).Samples().At(0)
	assert.Equal(t, map[string]any{"a": "x", "a.num": int64(2), "a.num.num": int64(1)}, attrs(t, pd, s))
}
