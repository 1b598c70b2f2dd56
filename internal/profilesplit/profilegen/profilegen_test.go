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

// TestGenerateOffCPUShape: the off-CPU profile is upstream's (sample type
// off_cpu/nanoseconds, no period, one value per timestamp), comes before the
// CPU profile of its process, and leaves the CPU samples as they were.
func TestGenerateOffCPUShape(t *testing.T) {
	cfg := profilegen.Config{Samples: 1000, Depth: 20, Stacks: 100, Resources: 5, Seq: true, Seed: 7}
	cpuOnly := profilegen.Generate(cfg)
	cfg.OffCPUSamples = 300
	pd := profilegen.Generate(cfg)
	require.NoError(t, profilesplit.Validate(pd))
	assert.Equal(t, 1300, profilesplit.Samples(pd))

	strs := pd.Dictionary().StringTable()
	offSamples := 0
	seqs := map[int64]bool{}
	for _, rp := range pd.ResourceProfiles().All() {
		profs := rp.ScopeProfiles().At(0).Profiles()
		require.Equal(t, 2, profs.Len())
		off, cpu := profs.At(0), profs.At(1)
		require.True(t, profilegen.IsOffCPU(pd, off))
		require.False(t, profilegen.IsOffCPU(pd, cpu))
		assert.Equal(t, "samples", strs.At(int(cpu.SampleType().TypeStrindex())))
		assert.Zero(t, off.Period())
		assert.Zero(t, off.PeriodType().TypeStrindex())
		assert.Zero(t, off.PeriodType().UnitStrindex())
		assert.Equal(t, cpu.Time(), off.Time())
		for _, s := range off.Samples().All() {
			offSamples++
			n := s.TimestampsUnixNano().Len()
			assert.True(t, n >= 1 && n <= 3, "%d events", n)
			assert.Equal(t, n, s.Values().Len(), "one duration per timestamp")
			for _, v := range s.Values().All() {
				assert.True(t, v >= 1_000 && v <= 100_001_000, "%d ns", v)
			}
			assert.Equal(t, 4, s.AttributeIndices().Len(), "thread.name, thread.id, cpu.logical_number, seq")
			seqs[seqOf(t, pd.Dictionary(), s)] = true
		}
	}
	assert.Equal(t, 300, offSamples)
	assert.Len(t, seqs, 300)
	nanos, perSvc, cpuSamples := profilegen.OffCPUTotals(pd)
	assert.Len(t, nanos, 5)
	var n int64
	for _, c := range perSvc {
		n += c
	}
	assert.Equal(t, int64(300), n)
	assert.Equal(t, int64(1000), cpuSamples)
	_, _, cpuOnlySamples := profilegen.OffCPUTotals(cpuOnly)
	assert.Equal(t, int64(1000), cpuOnlySamples)
}
