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

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
)

// TestPacingCountsSampleMessages: nexovue's limit counts Sample messages
// (README, "Pacing"), and so does the pacing: a batch of exactly the key's
// limit in messages, each holding three timestamps (three samples the
// profiler took, packed into one message), leaves as one request and is
// accepted whole. Pacing that counted timestamps would see three times the
// limit and split it.
func TestPacingCountsSampleMessages(t *testing.T) {
	const limit = 1000
	srv := startIngest(t, ingest.Config{SamplesPerSecond: limit})
	h := newHarness(t, e2eConfig(srv, limit))

	pd := batch(limit, 32)
	var timestamps int
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, s := range p.Samples().All() {
					for s.TimestampsUnixNano().Len() < 3 {
						s.TimestampsUnixNano().Append(uint64(time.Now().UnixNano()))
					}
					timestamps += s.TimestampsUnixNano().Len()
				}
			}
		}
	}
	require.Equal(t, 3*limit, timestamps)
	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))
	require.Eventually(t, func() bool { return srv.SamplesAccepted() == limit }, 30*time.Second, 10*time.Millisecond,
		"the double accepted %d Sample messages, answers %v", srv.SamplesAccepted(), srv.Stats().RequestsByStatus)
	assert.Equal(t, int64(3*limit), srv.SamplesTaken(), "every timestamp arrived")
	assert.Equal(t, 1, srv.Requests(http.StatusOK), "one request: the pacing booked %d messages, not %d timestamps", limit, timestamps)
	assert.Zero(t, srv.Requests(http.StatusTooManyRequests))
	assert.Zero(t, h.intSum(t, mSplit), "nothing was split")
}
