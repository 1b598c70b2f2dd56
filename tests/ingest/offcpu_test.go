package ingest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
)

// TestOffCPUByType: a batch with the eBPF profiler's off-CPU profiles next
// to its CPU ones is accepted; /stats reports per sample type, overall and
// per service, the Sample messages, timestamps and values, so off-CPU
// nanoseconds add up exactly; both types count against the samples per
// second, one per Sample message.
func TestOffCPUByType(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	s := startServer(t, Config{SamplesPerSecond: 600, Now: clock.Now})
	pd := profilegen.Generate(profilegen.Config{Samples: 300, OffCPUSamples: 300, Depth: 8, Stacks: 30, Resources: 3, Seed: 28})
	nanos, offSamples, cpu := profilegen.OffCPUTotals(pd)
	require.Equal(t, http.StatusOK, send(t, s, testKey, ContentTypeProto, "", marshalProto(t, pd)).status)

	resp, err := http.Get(s.URL() + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))

	assert.Equal(t, int64(600), st.SamplesAccepted, "off-CPU samples are samples")
	off := st.ByType["off_cpu/nanoseconds"]
	assert.Equal(t, int64(300), off.Samples)
	assert.Equal(t, cpu, st.ByType["samples/count"].Timestamps)
	assert.Equal(t, int64(300), st.ByType["samples/count"].Samples)
	assert.Zero(t, st.ByType["samples/count"].Values, "CPU samples carry no values")
	assert.LessOrEqual(t, off.Samples, off.Timestamps, "one to three events per off-CPU sample")
	assert.Equal(t, cpu, st.ByType["samples/count"].Taken, "taken: one per timestamp")
	assert.Equal(t, off.Timestamps, off.Taken, "taken: one per timestamp")
	assert.Equal(t, cpu+off.Timestamps, st.SamplesTaken)
	var total int64
	for svc, n := range nanos {
		got := st.Services[svc].ByType["off_cpu/nanoseconds"]
		assert.Equal(t, n, got.Values, svc)
		assert.Equal(t, offSamples[svc], got.Samples, svc)
		assert.Equal(t, got.Samples+st.Services[svc].ByType["samples/count"].Samples, st.Services[svc].Samples, svc)
		total += n
	}
	assert.Equal(t, total, off.Values)

	// The second is full: one more sample is refused.
	one := profilegen.Generate(profilegen.Config{Samples: 1, Resources: 1, Stacks: 1, Depth: 2, Seed: 1})
	assert.Equal(t, http.StatusTooManyRequests, send(t, s, testKey, ContentTypeProto, "", marshalProto(t, one)).status)
}

// TestOffCPUNotRankedWithCPU: the function counts and the busiest-services
// table are on-CPU views: off-CPU samples (time spent waiting) are counted
// apart and never ranked with CPU samples.
func TestOffCPUNotRankedWithCPU(t *testing.T) {
	s := startServer(t, Config{})
	s.TakeWindow()
	pd := profilegen.Generate(profilegen.Config{Samples: 100, OffCPUSamples: 50, Depth: 8, Stacks: 10, Resources: 1, Seed: 28})
	require.Equal(t, http.StatusOK, send(t, s, testKey, ContentTypeProto, "", marshalProto(t, pd)).status)

	var leaf int64
	for _, f := range s.TopLeafFunctions("service-0", 0) {
		leaf += f.Samples
	}
	assert.Equal(t, int64(100), leaf, "leaf counts hold the CPU samples only")
	assert.Equal(t, int64(150), s.ServiceSamples()["service-0"], "every sample counts as a sample")
	w := s.TakeWindow()
	assert.Equal(t, int64(150), w.Samples)
	assert.Equal(t, map[string]int64{"service-0": 100}, w.Services)
	assert.Equal(t, map[string]int64{"service-0": 50}, w.OffCPU)
	var b strings.Builder
	require.NoError(t, WriteTop(&b, w, 5, 3))
	assert.Contains(t, b.String(), "150 samples")
	assert.Contains(t, b.String(), "(50 off-CPU samples among them, not ranked: waiting is not busy)")
	assert.Contains(t, b.String(), "service-0                                                      100  100.0%")
}
