// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/otel/attribute"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
)

// arrivals is what the ingest received, as leaves for maxInWindow.
func arrivals(reqs []received) []leave {
	out := make([]leave, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, leave{at: r.at, samples: r.samples})
	}
	return out
}

// pacedHarness is an exporter paced at limit samples a second against a fake ingest.
func pacedHarness(t *testing.T, limit int) (*fakeIngest, *harness) {
	ing := newFakeIngest(t, nil)
	cfg := testConfig(ing.srv.URL)
	cfg.RateLimit.SamplesPerSecond = limit
	return ing, newHarness(t, cfg)
}

func TestPacingAsSeenByTheIngest(t *testing.T) {
	const limit = 1000
	ing, h := pacedHarness(t, limit)

	// Three consumers, ten batches of 100 samples each: 3,000 samples,
	// generated beforehand so that unpaced they would all leave at once.
	var want []string
	batches := make([][]pprofile.Profiles, 3)
	for c := range batches {
		for i := range 10 {
			pd := batch(100, uint64(1000+c*10+i))
			want = append(want, profilesplit.ResolveSamples(pd, 0)...)
			batches[c] = append(batches[c], pd)
		}
	}
	slices.Sort(want)
	var wg sync.WaitGroup
	for _, own := range batches {
		wg.Go(func() {
			for _, pd := range own {
				assert.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))
			}
		})
	}
	wg.Wait()

	reqs := ing.requests()
	require.Len(t, reqs, 30)
	assert.Equal(t, want, ing.accepted())
	// Counted at the ingest, over windows a little shorter than a second so
	// that scheduling jitter in the test cannot blur them.
	assert.LessOrEqual(t, maxInWindow(arrivals(reqs), 900*time.Millisecond), limit)
	assert.Positive(t, h.floatSum(t, mWait, attribute.String("reason", "pacing")))
	assert.Zero(t, h.floatSum(t, mWait, attribute.String("reason", "retry_after")))
}

func TestRequestsOverTheLimitAreSplitBeforeSending(t *testing.T) {
	const limit = 200
	ing, h := pacedHarness(t, limit)

	pd := batch(500, 31)
	want := profilesplit.SortedSamples(pd, 0)
	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))

	assert.Equal(t, want, ing.accepted())
	for _, r := range ing.requests() {
		assert.LessOrEqual(t, r.samples, limit)
		assert.NoError(t, profilesplit.Validate(r.pd))
	}
	assert.GreaterOrEqual(t, h.intSum(t, mSplit), int64(500))
	assert.Equal(t, int64(500), h.intSum(t, mSent))
}

func TestRefusedRequestsDoNotUseThePacingBudget(t *testing.T) {
	// The ingest counts only what it accepts: requests refused as too large
	// give their place in the window back, so the halves that follow do not
	// wait for a window the refused request never used.
	const limit = 300
	ing := newFakeIngest(t, func(_ int, r *received) reply {
		if r.samples > 100 {
			return answer(http.StatusRequestEntityTooLarge)
		}
		return answer(http.StatusOK)
	})
	cfg := testConfig(ing.srv.URL)
	cfg.RateLimit.SamplesPerSecond = limit
	h := newHarness(t, cfg)

	pd := batch(limit, 32)
	want := profilesplit.SortedSamples(pd, 0)
	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))
	assert.Equal(t, want, ing.accepted())
	assert.Positive(t, h.intSum(t, mRequests, attribute.Int("status_code", http.StatusRequestEntityTooLarge)))
	assert.Zero(t, h.floatSum(t, mWait, attribute.String("reason", "pacing")))
}
