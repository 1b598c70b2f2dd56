package ingest

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// packed is one service's CPU profile of one stack whose samples carry the
// given timestamps, one Sample message per entry of perMessage; with unit
// "count" and no timestamps, each message's value is its entry instead.
func packed(unit string, timestamps bool, perMessage ...int) pprofile.Profiles {
	pd := pprofile.NewProfiles()
	dict := pd.Dictionary()
	for _, s := range []string{"", "samples", unit, "main", "service.name"} {
		dict.StringTable().Append(s)
	}
	dict.MappingTable().AppendEmpty()
	dict.AttributeTable().AppendEmpty()
	dict.LinkTable().AppendEmpty()
	dict.FunctionTable().AppendEmpty()
	fn := dict.FunctionTable().AppendEmpty()
	fn.SetNameStrindex(3)
	dict.LocationTable().AppendEmpty()
	loc := dict.LocationTable().AppendEmpty()
	loc.Lines().AppendEmpty().SetFunctionIndex(1)
	dict.StackTable().AppendEmpty()
	dict.StackTable().AppendEmpty().LocationIndices().Append(1)
	rp := pd.ResourceProfiles().AppendEmpty()
	rp.Resource().Attributes().PutStr("service.name", "svc")
	p := rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
	p.SampleType().SetTypeStrindex(1)
	p.SampleType().SetUnitStrindex(2)
	ts := uint64(1_700_000_000_000_000_000)
	for _, n := range perMessage {
		s := p.Samples().AppendEmpty()
		s.SetStackIndex(1)
		if timestamps {
			for range n {
				ts += 52_631_578 // 19 Hz
				s.TimestampsUnixNano().Append(ts)
			}
		} else {
			s.Values().Append(int64(n))
		}
	}
	return pd
}

// TestSamplesTakenDoesNotDependOnPacking: the same 6 samples the profiler
// took, packed into 6, 3 or 1 Sample messages (timestamps), are 6 taken
// samples each time, while the rate limit's count (Sample messages)
// follows the packing; a pprof count profile without timestamps counts its
// values, and a profile of another unit one per message.
func TestSamplesTakenDoesNotDependOnPacking(t *testing.T) {
	for _, tc := range []struct {
		name            string
		pd              pprofile.Profiles
		messages, taken int64
	}{
		{"one timestamp per message", packed("count", true, 1, 1, 1, 1, 1, 1), 6, 6},
		{"two per message", packed("count", true, 2, 2, 2), 3, 6},
		{"all in one message", packed("count", true, 6), 1, 6},
		{"count values, no timestamps", packed("count", false, 4, 2), 2, 6},
		{"nanoseconds values, no timestamps", packed("nanoseconds", false, 4, 2), 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, Config{})
			require.Equal(t, http.StatusOK, send(t, s, testKey, ContentTypeProto, "", marshalProto(t, tc.pd)).status)
			assert.Equal(t, tc.messages, s.SamplesAccepted(), "Sample messages")
			assert.Equal(t, tc.taken, s.SamplesTaken(), "samples taken")
			assert.Equal(t, tc.taken, s.Stats().SamplesTaken)
			assert.Equal(t, tc.pd.SampleCount(), int(tc.messages), "pdata's SampleCount, what the exporter's pacing books, counts what the limit counts")
		})
	}
}
