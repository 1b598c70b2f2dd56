// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSymbolizeOffCPU: a running C program's native frames in an off-CPU
// profile, shaped as the eBPF profiler sends it (off_cpu/nanoseconds, no
// period, one duration per timestamp), are named like those of its CPU
// profile, and the off-CPU samples keep their timestamps and durations.
func TestSymbolizeOffCPU(t *testing.T) {
	bin, pid, syms, b, m := runningNxv(t)
	leaf := b.location(m, syms["nxv_leaf"].addr+4, "native")
	main := b.location(m, syms["main"].addr+3, "native")
	b.process(pid, bin, []int32{leaf, main})

	sp := b.pd.ResourceProfiles().At(0).ScopeProfiles().At(0)
	prof := sp.Profiles().AppendEmpty()
	prof.SampleType().SetTypeStrindex(b.str("off_cpu"))
	prof.SampleType().SetUnitStrindex(b.str("nanoseconds"))
	st := b.dict.StackTable().AppendEmpty()
	st.LocationIndices().FromRaw([]int32{main, leaf})
	s := prof.Samples().AppendEmpty()
	s.SetStackIndex(int32(b.dict.StackTable().Len() - 1))
	s.TimestampsUnixNano().FromRaw([]uint64{10, 20, 30})
	s.Values().FromRaw([]int64{1_500_000, 250_000_000, 7})

	process(t, newTestProcessor(t), b.pd)

	assert.Equal(t, []frameName{{"nxv_leaf", "nxv_leaf", bin}, {"main", "main", bin}}, names(b.pd, leaf, main))
	got := b.pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles()
	require.Equal(t, 2, got.Len())
	offProf := got.At(1)
	d := b.pd.Dictionary()
	assert.Equal(t, "off_cpu", d.StringTable().At(int(offProf.SampleType().TypeStrindex())))
	assert.Equal(t, "nanoseconds", d.StringTable().At(int(offProf.SampleType().UnitStrindex())))
	require.Equal(t, 1, offProf.Samples().Len())
	assert.Equal(t, []uint64{10, 20, 30}, offProf.Samples().At(0).TimestampsUnixNano().AsRaw())
	assert.Equal(t, []int64{1_500_000, 250_000_000, 7}, offProf.Samples().At(0).Values().AsRaw())
	assertUniqueStrings(t, d)
}
