// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
	"github.com/nexovue/otelcol-nexovue/tests/ingest"
)

// TestOffCPUCountedAsTheIngestCounts: a batch with the eBPF profiler's
// off-CPU profiles next to its CPU ones, paced at the double's rate limit.
// The exporter counts an off-CPU sample against samples_per_second as the
// ingest does (one per Sample message, whatever its type and however many
// events it holds), so pacing keeps the key under the limit: no 429. Every
// off-CPU nanosecond arrives, per service.
func TestOffCPUCountedAsTheIngestCounts(t *testing.T) {
	const limit = 1000
	srv := startIngest(t, ingest.Config{SamplesPerSecond: limit})
	h := newHarness(t, e2eConfig(srv, limit))
	pd := profilegen.Generate(profilegen.Config{Samples: 1000, OffCPUSamples: 1000, Depth: 16, Seq: true, Seed: 28})
	nanos, offSamples, _ := profilegen.OffCPUTotals(pd)

	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))
	require.Eventually(t, func() bool { return srv.SamplesAccepted() == 2000 }, 30*time.Second, 10*time.Millisecond)

	assert.Zero(t, srv.Requests(http.StatusTooManyRequests), "pacing counted the off-CPU samples")
	st := srv.Stats()
	assert.Equal(t, int64(1000), st.ByType["off_cpu/nanoseconds"].Samples)
	assert.Equal(t, int64(1000), st.ByType["samples/count"].Samples)
	for svc, n := range nanos {
		got := st.Services[svc].ByType["off_cpu/nanoseconds"]
		assert.Equal(t, n, got.Values, svc)
		assert.Equal(t, offSamples[svc], got.Samples, svc)
	}
	assert.Equal(t, 2000, srv.Seq().Distinct)
	require.Eventually(t, func() bool { return h.intSum(t, mSent) == 2000 }, 10*time.Second, 10*time.Millisecond)
}
