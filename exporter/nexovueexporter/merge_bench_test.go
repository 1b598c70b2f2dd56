// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
)

// unsentParts is what push holds when a retryable failure comes after a
// split: a 20,000-sample request over 4,000 stacks, halved down to 32 parts.
func unsentParts(b *testing.B) []pprofile.Profiles {
	pd := profilegen.Generate(profilegen.Config{Samples: 20_000, Stacks: 4000, Depth: 32, Seq: true, Seed: 7})
	parts := []pprofile.Profiles{pd}
	for len(parts) < 32 {
		var next []pprofile.Profiles
		for _, p := range parts {
			first, second, ok, err := profilesplit.HalveChecked(p)
			require.NoError(b, err)
			require.True(b, ok)
			next = append(next, first, second)
		}
		parts = next
	}
	return parts
}

// BenchmarkMergeUnsent compares how the unsent parts are joined for the
// helper's retry: pdata's MergeTo, part after part (what the exporter did,
// the baseline), against profilesplit.Merge (what it does).
func BenchmarkMergeUnsent(b *testing.B) {
	parts := unsentParts(b)
	copies := func() []pprofile.Profiles {
		out := make([]pprofile.Profiles, len(parts))
		for i, p := range parts {
			out[i] = pprofile.NewProfiles()
			p.CopyTo(out[i])
		}
		return out
	}
	b.Run("pdata_MergeTo", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			ps := copies()
			b.StartTimer()
			out := ps[0]
			for _, p := range ps[1:] {
				require.NoError(b, p.MergeTo(out))
			}
		}
	})
	b.Run("profilesplit_Merge", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			ps := copies()
			b.StartTimer()
			_, err := profilesplit.Merge(ps...)
			require.NoError(b, err)
		}
	})
}
