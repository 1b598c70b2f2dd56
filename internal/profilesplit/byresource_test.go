package profilesplit

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Every sample lands in the group of its resource, once, whatever the
// dictionary sharing between resources; each part is valid and compact.
func TestByResourceKeepsEverySampleOnce(t *testing.T) {
	for i := 0; i < 60; i++ {
		pd := randomProfiles(uint64(i), 21)
		rps := pd.ResourceProfiles()
		// Group by the resource's position, taken before anything moves.
		byIndex := map[int]int{}
		wantByGroup := make([][]string, 3)
		for ri := 0; ri < rps.Len(); ri++ {
			g := (ri*7 + i) % 3
			byIndex[ri] = g
			rps.At(ri).Resource().Attributes().PutInt("test.index", int64(ri))
		}
		for ri := 0; ri < rps.Len(); ri++ {
			one := pprofile.NewProfiles()
			pd.Dictionary().CopyTo(one.Dictionary())
			rps.At(ri).CopyTo(one.ResourceProfiles().AppendEmpty())
			wantByGroup[byIndex[ri]] = append(wantByGroup[byIndex[ri]], ResolveSamples(one, 0)...)
		}
		if i%2 == 1 {
			pd.MarkReadOnly()
		}
		parts, present, err := ByResource(pd, 3, func(r pcommon.Resource) int {
			v, _ := r.Attributes().Get("test.index")
			return byIndex[int(v.Int())]
		})
		require.NoError(t, err)
		groups := 0
		for _, p := range present {
			if p {
				groups++
			}
		}
		for g := 0; g < 3; g++ {
			require.Equal(t, len(wantByGroup[g]) > 0 || hasResourceIn(byIndex, g), present[g], "group %d", g)
			if !present[g] {
				continue
			}
			require.NoError(t, Validate(parts[g]))
			if groups > 1 {
				// One group is handed on as it is, orphans of the input included.
				require.NoError(t, orphans(parts[g]), "group %d: dictionary not compact", g)
			}
			got := ResolveSamples(parts[g], 0)
			sort.Strings(got)
			want := append([]string(nil), wantByGroup[g]...)
			sort.Strings(want)
			require.Equal(t, want, got, "group %d", g)
		}
	}
}

func hasResourceIn(byIndex map[int]int, g int) bool {
	for _, v := range byIndex {
		if v == g {
			return true
		}
	}
	return false
}

// A batch of one group is handed on as it is, without a copy.
func TestByResourceOneGroupIsNoCopy(t *testing.T) {
	pd := randomProfiles(3, 8)
	parts, present, err := ByResource(pd, 4, func(pcommon.Resource) int { return 2 })
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, true, false}, present)
	require.Equal(t, pd, parts[2])
}

func TestByResourceReportsBadIndex(t *testing.T) {
	pd := randomProfiles(5, 8)
	require.Greater(t, pd.ResourceProfiles().Len(), 1)
	n := 0
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, s := range p.Samples().All() {
					s.SetStackIndex(9001)
					n++
				}
			}
		}
	}
	require.Positive(t, n)
	i := 0
	_, _, err := ByResource(pd, 2, func(pcommon.Resource) int { i++; return i % 2 })
	require.ErrorContains(t, err, "index 9001 outside")
}
