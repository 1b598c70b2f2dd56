package profilesplit

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// FuzzSplitGenerated splits random valid requests (see randomProfiles) at
// random limits and checks every promise of Split, SplitOwned and Halve.
// Seeds: testdata/fuzz/FuzzSplitGenerated.
func FuzzSplitGenerated(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint16(1))
	f.Add(uint64(7), uint64(7), uint16(40))
	f.Fuzz(func(t *testing.T, seed1, seed2 uint64, limit uint16) {
		pd := randomProfiles(seed1, seed2)
		maxFrames := max(1, int(limit))
		parts, truncated := Split(pd, maxFrames)
		checkSplit(t, pd, maxFrames, parts, truncated)

		owned := pprofile.NewProfiles()
		pd.CopyTo(owned)
		oparts, otruncated, err := SplitOwned(owned, maxFrames)
		require.NoError(t, err)
		if len(oparts) > 1 || oparts[0] != owned {
			checkSplit(t, pd, maxFrames, oparts, otruncated)
		}

		if first, second, ok := Halve(pd); ok {
			require.NoError(t, Validate(first))
			require.NoError(t, Validate(second))
			require.Equal(t, ResolveSamples(pd, 0), slices.Concat(ResolveSamples(first, 0), ResolveSamples(second, 0)))
		} else {
			require.Less(t, Samples(pd), 2)
		}
	})
}

// FuzzSplitEncoded splits whatever an OTLP profiles payload decodes to,
// valid or not: the splitter must never panic, must keep every part within
// the limit, and on a valid request must keep every sample.
// Seeds: testdata/fuzz/FuzzSplitEncoded.
func FuzzSplitEncoded(f *testing.F) {
	var m pprofile.ProtoMarshaler
	for _, seed := range [][2]uint64{{1, 1}, {2, 3}} {
		buf, err := m.MarshalProfiles(randomProfiles(seed[0], seed[1]))
		require.NoError(f, err)
		f.Add(buf, uint16(5))
	}
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		var u pprofile.ProtoUnmarshaler
		pd, err := u.UnmarshalProfiles(data)
		if err != nil {
			return
		}
		maxFrames := max(1, int(limit))
		valid := Validate(pd) == nil
		var want []string
		if valid {
			want = ResolveSamples(pd, maxFrames)
		}
		parts, truncated, err := SplitChecked(pd, maxFrames)
		if err != nil {
			require.False(t, valid, "a valid request must split: %v", err)
			return
		}
		if len(parts) == 1 && parts[0] == pd {
			require.LessOrEqual(t, Frames(pd), maxFrames)
			return
		}
		var got []string
		for _, p := range parts {
			require.LessOrEqual(t, Frames(p), maxFrames)
			if valid {
				require.NoError(t, Validate(p))
				got = append(got, ResolveSamples(p, 0)...)
			}
		}
		if valid {
			require.Equal(t, want, got)
			require.Equal(t, deepSamples(pd, maxFrames), truncated)
		}
		if _, _, _, err := HalveChecked(pd); valid {
			require.NoError(t, err)
		}
	})
}
