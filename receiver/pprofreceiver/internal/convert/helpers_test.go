// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package convert

import (
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

func countType(sts []*profile.ValueType, typ string) int {
	n := 0
	for _, st := range sts {
		if st.Type == typ {
			n++
		}
	}
	return n
}

func nonNil(ps ...*profile.Profile) []*profile.Profile {
	var out []*profile.Profile
	for _, p := range ps {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// checkUniqueKeys fails if a profile, sample or mapping references two
// attributes with the same key, or an attribute index out of range.
func checkUniqueKeys(t *testing.T, pd pprofile.Profiles) {
	t.Helper()
	d := pd.Dictionary()
	check := func(what string, idx pcommon.Int32Slice) {
		seen := map[int32]bool{}
		for _, ai := range idx.All() {
			require.True(t, ai > 0 && int(ai) < d.AttributeTable().Len(), "%s: attribute index %d out of range", what, ai)
			k := d.AttributeTable().At(int(ai)).KeyStrindex()
			require.False(t, seen[k], "%s: duplicate attribute key %q", what, d.StringTable().At(int(k)))
			seen[k] = true
		}
	}
	for _, m := range d.MappingTable().All() {
		check("mapping", m.AttributeIndices())
	}
	for _, prof := range pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().All() {
		check("profile", prof.AttributeIndices())
		for _, s := range prof.Samples().All() {
			check("sample", s.AttributeIndices())
		}
	}
}
