package profilegen_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
)

func TestGenerateShape(t *testing.T) {
	cfg := profilegen.Config{Samples: 2000, Depth: 40, Stacks: 200, Functions: 500, Resources: 10, LinkEvery: 7, Seq: true, Seed: 42}
	pd := profilegen.Generate(cfg)
	require.NoError(t, profilesplit.Validate(pd))
	assert.Equal(t, 2000, profilesplit.Samples(pd))
	assert.Equal(t, 2000*40, profilesplit.Frames(pd))
	assert.Equal(t, 10, pd.ResourceProfiles().Len())
	d := pd.Dictionary()
	assert.Equal(t, 200+1, d.StackTable().Len(), "K stacks plus the zero stack")
	assert.Equal(t, 500+1, d.FunctionTable().Len(), "F functions plus the zero function")

	usedStacks := map[int32]bool{}
	seqs := map[int64]bool{}
	links := 0
	for _, rp := range pd.ResourceProfiles().All() {
		_, ok := rp.Resource().Attributes().Get("process.pid")
		assert.True(t, ok)
		_, ok = rp.Resource().Attributes().Get("process.executable.name")
		assert.True(t, ok)
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, s := range p.Samples().All() {
					usedStacks[s.StackIndex()] = true
					if s.LinkIndex() != 0 {
						links++
					}
					assert.Equal(t, 1, s.TimestampsUnixNano().Len())
					seq := seqOf(t, d, s)
					assert.False(t, seqs[seq], "seq %d twice", seq)
					seqs[seq] = true
				}
			}
		}
	}
	assert.Len(t, usedStacks, 200, "every stack is used")
	assert.Len(t, seqs, 2000)
	assert.Equal(t, (2000+6)/7, links)

	// Reproducible.
	again := profilegen.Generate(cfg)
	assert.Equal(t, profilesplit.ResolveSamples(pd, 0), profilesplit.ResolveSamples(again, 0))
}

func seqOf(t *testing.T, d pprofile.ProfilesDictionary, s pprofile.Sample) int64 {
	t.Helper()
	for _, i := range s.AttributeIndices().All() {
		a := d.AttributeTable().At(int(i))
		if d.StringTable().At(int(a.KeyStrindex())) == profilegen.SeqKey {
			return a.Value().Int()
		}
	}
	t.Fatalf("sample without %s", profilegen.SeqKey)
	return 0
}

func TestGenerateDefaults(t *testing.T) {
	pd := profilegen.Generate(profilegen.Config{})
	require.NoError(t, profilesplit.Validate(pd))
	assert.Equal(t, 1000, profilesplit.Samples(pd))
	assert.Equal(t, 1000*64, profilesplit.Frames(pd))
}
