package profilesplit

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

func TestMergeUndoesSplit(t *testing.T) {
	for i := 0; i < 100; i++ {
		pd := randomProfiles(uint64(i), 21)
		maxFrames := max(1, Frames(pd)/3)
		want := ResolveSamples(pd, maxFrames)
		parts, _ := Split(pd, maxFrames)
		switch i % 3 {
		case 1:
			// An exporter encoded the parts, rewriting their resource and
			// scope attributes as string references in place.
			for _, p := range parts {
				var m pprofile.ProtoMarshaler
				_, err := m.MarshalProfiles(p)
				require.NoError(t, err)
				require.Equal(t, p.ResourceProfiles().Len() > 0, hasAttributeRefs(p))
			}
		case 2:
			for _, p := range parts {
				p.MarkReadOnly()
			}
		}
		merged, err := Merge(parts...)
		require.NoError(t, err)
		require.NoError(t, Validate(merged))
		require.NoError(t, orphans(merged))
		require.Equal(t, want, ResolveSamples(merged, 0))
		if i%3 == 2 && len(parts) > 1 {
			// Read-only parts are copied, not consumed.
			var again []string
			for _, p := range parts {
				again = append(again, ResolveSamples(p, 0)...)
			}
			require.Equal(t, want, again)
		}
	}
}

func TestMergeStoresEqualStringsOnce(t *testing.T) {
	pd := randomProfiles(4, 4)
	parts, _ := Split(pd, 1)
	require.Greater(t, len(parts), 2)
	merged, err := Merge(parts...)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, s := range merged.Dictionary().StringTable().All() {
		require.False(t, seen[s], "string %q twice", s)
		seen[s] = true
	}
}

func TestMergeReportsBadIndex(t *testing.T) {
	a, b := randomProfiles(1, 1), randomProfiles(2, 2)
	sm := b.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty().Profiles().AppendEmpty().Samples().AppendEmpty()
	sm.SetLinkIndex(int32(b.Dictionary().LinkTable().Len()))
	_, err := Merge(a, b)
	require.ErrorContains(t, err, "part 1: resource_profiles[")
	require.ErrorContains(t, err, ".samples[0].link_index: index")
}
