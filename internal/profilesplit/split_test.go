package profilesplit

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// deepSamples counts the samples whose stack is deeper than maxFrames.
func deepSamples(pd pprofile.Profiles, maxFrames int) int {
	n := 0
	st := pd.Dictionary().StackTable()
	_ = forEachSample(pd, func(_ samplePath, s pprofile.Sample) error {
		if st.At(int(s.StackIndex())).LocationIndices().Len() > maxFrames {
			n++
		}
		return nil
	})
	return n
}

// emptyContainers counts resources without scopes, scopes without profiles
// and profiles without samples.
func emptyContainers(pd pprofile.Profiles) (res, scopes, profs int) {
	for _, rp := range pd.ResourceProfiles().All() {
		if rp.ScopeProfiles().Len() == 0 {
			res++
		}
		for _, sp := range rp.ScopeProfiles().All() {
			if sp.Profiles().Len() == 0 {
				scopes++
			}
			for _, p := range sp.Profiles().All() {
				if p.Samples().Len() == 0 {
					profs++
				}
			}
		}
	}
	return res, scopes, profs
}

// orphans reports dictionary entries (other than index 0) that nothing in pd
// refers to: a compacted dictionary has none.
func orphans(pd pprofile.Profiles) error {
	d := pd.Dictionary()
	used := map[string][]bool{
		"string":    make([]bool, d.StringTable().Len()),
		"attribute": make([]bool, d.AttributeTable().Len()),
		"function":  make([]bool, d.FunctionTable().Len()),
		"mapping":   make([]bool, d.MappingTable().Len()),
		"location":  make([]bool, d.LocationTable().Len()),
		"stack":     make([]bool, d.StackTable().Len()),
		"link":      make([]bool, d.LinkTable().Len()),
	}
	mark := func(table string, i int32) { used[table][i] = true }
	var attrs func(idx []int32)
	attrs = func(idx []int32) {
		for _, i := range idx {
			if !used["attribute"][i] {
				mark("attribute", i)
				a := d.AttributeTable().At(int(i))
				mark("string", a.KeyStrindex())
				mark("string", a.UnitStrindex())
			}
		}
	}
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				mark("string", p.SampleType().TypeStrindex())
				mark("string", p.SampleType().UnitStrindex())
				mark("string", p.PeriodType().TypeStrindex())
				mark("string", p.PeriodType().UnitStrindex())
				attrs(p.AttributeIndices().AsRaw())
				for _, s := range p.Samples().All() {
					attrs(s.AttributeIndices().AsRaw())
					mark("link", s.LinkIndex())
					mark("stack", s.StackIndex())
				}
			}
		}
	}
	for i, s := range d.StackTable().All() {
		if !used["stack"][i] {
			continue
		}
		for _, l := range s.LocationIndices().All() {
			mark("location", l)
		}
	}
	for i, l := range d.LocationTable().All() {
		if !used["location"][i] {
			continue
		}
		mark("mapping", l.MappingIndex())
		attrs(l.AttributeIndices().AsRaw())
		for _, ln := range l.Lines().All() {
			mark("function", ln.FunctionIndex())
		}
	}
	for i, m := range d.MappingTable().All() {
		if used["mapping"][i] {
			mark("string", m.FilenameStrindex())
			attrs(m.AttributeIndices().AsRaw())
		}
	}
	for i, f := range d.FunctionTable().All() {
		if used["function"][i] {
			mark("string", f.NameStrindex())
			mark("string", f.SystemNameStrindex())
			mark("string", f.FilenameStrindex())
		}
	}
	var errs []error
	for table, u := range used {
		for i := 1; i < len(u); i++ {
			if !u[i] {
				errs = append(errs, fmt.Errorf("%s_table[%d] is not referenced", table, i))
			}
		}
	}
	return errors.Join(errs...)
}

// checkSplit checks every property Split promises for pd split at maxFrames.
func checkSplit(t testing.TB, pd pprofile.Profiles, maxFrames int, parts []pprofile.Profiles, truncated int) {
	t.Helper()
	frames := Frames(pd)
	if frames <= maxFrames {
		require.Len(t, parts, 1)
		require.True(t, parts[0] == pd, "a batch within the limit must be returned as is")
		require.Zero(t, truncated)
		return
	}
	require.Equal(t, deepSamples(pd, maxFrames), truncated, "truncated count")
	var got []string
	var er, es, ep int
	for i, p := range parts {
		require.NoError(t, Validate(p), "part %d", i)
		require.NoError(t, orphans(p), "part %d", i)
		f := Frames(p)
		require.LessOrEqual(t, f, maxFrames, "part %d frames", i)
		if i > 0 {
			// Parts are filled greedily: the first sample of a part did not
			// fit in the part before it.
			first := firstSampleFrames(p)
			assert.Greater(t, Frames(parts[i-1])+first, maxFrames, "part %d could have held the next sample", i-1)
		}
		got = append(got, ResolveSamples(p, 0)...)
		r, s, pr := emptyContainers(p)
		er, es, ep = er+r, es+s, ep+pr
	}
	// Same samples, same order, everything resolved.
	require.Equal(t, ResolveSamples(pd, maxFrames), got)
	r, s, pr := emptyContainers(pd)
	require.Equal(t, []int{r, s, pr}, []int{er, es, ep}, "empty resources, scopes, profiles")
}

func firstSampleFrames(pd pprofile.Profiles) int {
	n := -1
	_ = forEachSample(pd, func(_ samplePath, s pprofile.Sample) error {
		if n < 0 {
			n = pd.Dictionary().StackTable().At(int(s.StackIndex())).LocationIndices().Len()
		}
		return nil
	})
	return max(n, 0)
}

func TestSplitProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	split := 0
	for i := 0; i < 150; i++ {
		pd := randomProfiles(uint64(i), 7)
		require.NoError(t, Validate(pd))
		before := ResolveSamples(pd, 0)
		frames := Frames(pd)
		for _, maxFrames := range []int{1, 1 + rng.IntN(50), 1 + rng.IntN(frames+1), frames, frames + 1} {
			parts, truncated := Split(pd, maxFrames)
			checkSplit(t, pd, maxFrames, parts, truncated)
			if len(parts) > 1 {
				split++
			}
			// SplitOwned gives the same parts, taking the samples from a copy.
			owned := pprofile.NewProfiles()
			pd.CopyTo(owned)
			oparts, otruncated, err := SplitOwned(owned, maxFrames)
			require.NoError(t, err)
			if len(parts) == 1 {
				require.Len(t, oparts, 1)
				require.True(t, oparts[0] == owned)
			} else {
				checkSplit(t, pd, maxFrames, oparts, otruncated)
				require.Zero(t, Frames(owned), "samples are moved out")
			}
		}
		require.Equal(t, before, ResolveSamples(pd, 0), "Split must not modify its input")
	}
	require.Greater(t, split, 200, "the random batches must exercise splitting")
}

func TestSplitWithinLimitIsIdentity(t *testing.T) {
	pd := randomProfiles(3, 3)
	parts, truncated := Split(pd, Frames(pd))
	require.Len(t, parts, 1)
	assert.True(t, parts[0] == pd)
	assert.Zero(t, truncated)
}

func TestSplitTruncatesDeepStacks(t *testing.T) {
	pd := pprofile.NewProfiles()
	d := pd.Dictionary()
	d.StringTable().Append("", "leaf", "mid", "root")
	d.AttributeTable().AppendEmpty()
	d.MappingTable().AppendEmpty()
	d.LinkTable().AppendEmpty()
	d.FunctionTable().AppendEmpty()
	d.LocationTable().AppendEmpty()
	for i := int32(1); i <= 3; i++ {
		d.FunctionTable().AppendEmpty().SetNameStrindex(i)
		d.LocationTable().AppendEmpty().Lines().AppendEmpty().SetFunctionIndex(i)
	}
	d.StackTable().AppendEmpty()
	d.StackTable().AppendEmpty().LocationIndices().FromRaw([]int32{1, 2, 3}) // leaf first
	d.StackTable().AppendEmpty().LocationIndices().FromRaw([]int32{1})
	samples := pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty().Profiles().AppendEmpty().Samples()
	for _, st := range []int32{1, 2, 1} {
		samples.AppendEmpty().SetStackIndex(st)
	}
	require.Equal(t, 7, Frames(pd))

	parts, truncated := Split(pd, 2)
	assert.Equal(t, 2, truncated)
	checkSplit(t, pd, 2, parts, truncated)
	require.Len(t, parts, 3, "2+1 frames do not fit in 2")
	// The kept frames are the leaf-most ones.
	p0 := parts[0]
	st := p0.Dictionary().StackTable().At(int(p0.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0).Samples().At(0).StackIndex()))
	var names []string
	for _, l := range st.LocationIndices().All() {
		fn := p0.Dictionary().LocationTable().At(int(l)).Lines().At(0).FunctionIndex()
		names = append(names, p0.Dictionary().StringTable().At(int(p0.Dictionary().FunctionTable().At(int(fn)).NameStrindex())))
	}
	assert.Equal(t, []string{"leaf", "mid"}, names)
}

func TestSplitReportsBadIndex(t *testing.T) {
	pd := randomProfiles(11, 1)
	for pd.ResourceProfiles().Len() > 0 && Samples(pd) == 0 {
		pd = randomProfiles(rand.Uint64(), 1)
	}
	// Point the first sample at a stack beyond the table.
	var first pprofile.Sample
	_ = forEachSample(pd, func(p samplePath, s pprofile.Sample) error {
		if p.sample == 0 && first == (pprofile.Sample{}) {
			first = s
		}
		return nil
	})
	n := pd.Dictionary().StackTable().Len()
	first.SetStackIndex(int32(n + 5))
	_, _, err := SplitChecked(pd, 1)
	require.ErrorContains(t, err, fmt.Sprintf(".samples[0].stack_index: index %d outside dictionary.stack_table (%d entries)", n+5, n))
	require.ErrorContains(t, Validate(pd), "stack_table")
	// Split keeps the batch whole rather than losing it.
	parts, truncated := Split(pd, 1)
	require.Len(t, parts, 1)
	assert.True(t, parts[0] == pd)
	assert.Zero(t, truncated)
	_, _, ok := Halve(pd)
	assert.False(t, ok)
}

func TestSplitReportsBadDictionaryIndex(t *testing.T) {
	pd := randomProfiles(5, 5)
	d := pd.Dictionary()
	d.LocationTable().AppendEmpty().SetMappingIndex(99)
	st := d.StackTable().AppendEmpty()
	st.LocationIndices().Append(int32(d.LocationTable().Len()-1), 0)
	sm := pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty().Profiles().AppendEmpty().Samples().AppendEmpty()
	sm.SetStackIndex(int32(d.StackTable().Len() - 1))
	loc := d.LocationTable().Len() - 1
	want := fmt.Sprintf("dictionary.location_table[%d].mapping_index: index 99 outside dictionary.mapping_table (%d entries)", loc, d.MappingTable().Len())
	_, _, err := SplitChecked(pd, 1)
	require.ErrorContains(t, err, want)
	require.ErrorContains(t, Validate(pd), want)
}

func TestValidateZeroEntries(t *testing.T) {
	pd := pprofile.NewProfiles()
	err := Validate(pd)
	for _, table := range []string{"string_table", "attribute_table", "function_table", "mapping_table", "location_table", "stack_table", "link_table"} {
		assert.ErrorContains(t, err, "dictionary."+table+": empty")
	}
	d := pd.Dictionary()
	d.StringTable().Append("x")
	d.AttributeTable().AppendEmpty().SetKeyStrindex(0)
	d.FunctionTable().AppendEmpty().SetStartLine(1)
	d.MappingTable().AppendEmpty().SetMemoryStart(1)
	d.LocationTable().AppendEmpty().SetAddress(1)
	d.StackTable().AppendEmpty().LocationIndices().Append(0)
	d.LinkTable().AppendEmpty().SetSpanID([8]byte{1})
	err = Validate(pd)
	assert.ErrorContains(t, err, `dictionary.string_table[0]: "x", must be the empty string`)
	for _, table := range []string{"function_table", "mapping_table", "location_table", "stack_table", "link_table"} {
		assert.ErrorContains(t, err, "dictionary."+table+"[0]: must be the zero value")
	}
}

func TestHalve(t *testing.T) {
	halved := 0
	for i := 0; i < 300; i++ {
		pd := randomProfiles(uint64(i), 99)
		n := Samples(pd)
		first, second, ok := Halve(pd)
		if n < 2 {
			require.False(t, ok)
			continue
		}
		require.True(t, ok)
		halved++
		require.NoError(t, Validate(first))
		require.NoError(t, Validate(second))
		require.NoError(t, orphans(first))
		require.NoError(t, orphans(second))
		n1, n2 := Samples(first), Samples(second)
		require.Equal(t, n, n1+n2)
		require.Positive(t, n1)
		require.Positive(t, n2)
		require.Equal(t, ResolveSamples(pd, 0), slices.Concat(ResolveSamples(first, 0), ResolveSamples(second, 0)))
		// About half: moving the boundary by one sample would not bring the
		// halves closer.
		f1, f2 := Frames(first), Frames(second)
		require.Equal(t, Frames(pd), f1+f2)
		if f1 > f2 && n1 > 1 {
			last := lastSampleFrames(first)
			assert.LessOrEqual(t, f1-f2, 2*last, "halves %d/%d", f1, f2)
		}
	}
	require.Greater(t, halved, 200)
}

func lastSampleFrames(pd pprofile.Profiles) int {
	n := 0
	_ = forEachSample(pd, func(_ samplePath, s pprofile.Sample) error {
		n = pd.Dictionary().StackTable().At(int(s.StackIndex())).LocationIndices().Len()
		return nil
	})
	return n
}

func TestHalveTooFewSamples(t *testing.T) {
	pd := pprofile.NewProfiles()
	_, _, ok := Halve(pd)
	assert.False(t, ok)
	pd.Dictionary().StackTable().AppendEmpty()
	pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty().Profiles().AppendEmpty().Samples().AppendEmpty()
	_, _, ok = Halve(pd)
	assert.False(t, ok)
}

func TestFramesAndSamples(t *testing.T) {
	pd := pprofile.NewProfiles()
	d := pd.Dictionary()
	d.StackTable().AppendEmpty()
	d.StackTable().AppendEmpty().LocationIndices().FromRaw([]int32{0, 0, 0})
	samples := pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty().Profiles().AppendEmpty().Samples()
	samples.AppendEmpty().SetStackIndex(1)
	samples.AppendEmpty().SetStackIndex(1)
	samples.AppendEmpty().SetStackIndex(0)
	samples.AppendEmpty().SetStackIndex(7) // outside the table: counts 0
	assert.Equal(t, 6, Frames(pd))
	assert.Equal(t, 4, Samples(pd))
}
