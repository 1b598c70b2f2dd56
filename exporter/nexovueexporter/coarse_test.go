// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// coarseAfter is a state that adapted once to 2,500 samples/s (500-sample
// requests, five a second) and was then refused again, in a later episode,
// after the ingest accepted one request every interval: the second
// decrease follows that measure (remeasureBelow), or lowers the rate by
// decreaseMargin.
func coarseAfter(t *testing.T, interval time.Duration) *keyState {
	t.Helper()
	s, clock := newPacedState(t, 20_000)
	refuseTwice(t, s, clock, interval)
	return s
}

// refuseTwice is coarseAfter's two episodes on s, on clock.
func refuseTwice(t *testing.T, s *keyState, clock *virtualClock, interval time.Duration) {
	t.Helper()
	acceptSteadily(s, clock)
	require.Positive(t, s.throttled(clock.t.Add(-time.Millisecond)))
	clock.t = clock.t.Add(2 * time.Second)
	acceptEvery(s, clock, 12, interval)
	require.Positive(t, s.throttled(clock.t.Add(-time.Millisecond)))
}

func TestCoarseShareIsReportedOnceUnderThreeRequestsAWindow(t *testing.T) {
	// Two requests of 500 a second accepted: the second decrease sets
	// about 970 samples/s, under three requests a window.
	s := coarseAfter(t, 500*time.Millisecond)
	c, ok := s.coarseShare()
	require.True(t, ok, "a share under %d requests a window is reported", coarseRequests)
	assert.Equal(t, 500, c.request)
	assert.InDelta(t, 1000*(1-decreaseMargin), c.perSecond, 1)
	_, again := s.coarseShare()
	assert.False(t, again, "reported once")
}

func TestCoarseShareIsNotReportedAtThreeRequestsAWindowOrMore(t *testing.T) {
	// Four requests of 500 a second: about 1,900 samples/s, 4 requests a window.
	s := coarseAfter(t, 250*time.Millisecond)
	_, ok := s.coarseShare()
	assert.False(t, ok)
}

func TestCoarseShareIsNotReportedOnTheFirstDecrease(t *testing.T) {
	// The first decrease from the ceiling, to two requests a second: a
	// fleet that started together has not found its shares yet.
	s, clock := newPacedState(t, 20_000)
	acceptEvery(s, clock, 12, 500*time.Millisecond)
	require.Positive(t, s.throttled(clock.t.Add(-time.Millisecond)))
	require.Less(t, s.maxSamples(), coarseRequests*500)
	_, ok := s.coarseShare()
	assert.False(t, ok)
}

func TestCoarseShareIsNotReportedForAReclaimHalved(t *testing.T) {
	// A 429 while reclaiming halves a rate that grew past the share: that
	// says nothing of the share.
	s, clock, _ := atThePlateausEnd(t)
	backUp(s, 10)
	reclaimed := limitAfter(s, clock, reclaimAfter+2*reclaimDoubling)
	s.acceptedAt(clock.t.Add(-time.Second), 500)
	require.Positive(t, s.throttled(clock.t))
	require.Less(t, s.maxSamples(), reclaimed)
	_, ok := s.coarseShare()
	assert.False(t, ok)
}

// TestCoarseShareIsLoggedOnceAsAWarning: the exporter logs a coarse share
// as a warning with its figures and what to do, once however many 429s
// follow.
func TestCoarseShareIsLoggedOnceAsAWarning(t *testing.T) {
	ing := newFakeIngest(t, func(int, *received) reply { return reply{status: http.StatusTooManyRequests} })
	cfg := testConfig(ing.srv.URL)
	cfg.RateLimit.SamplesPerSecond = 20_000
	cfg.RetryConfig.Enabled = false
	h := newHarness(t, cfg)
	s := h.inner.state
	clock := &virtualClock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	s.now = clock.now // nothing sends yet
	refuseTwice(t, s, clock, 500*time.Millisecond)
	s.mu.Lock()
	s.now = time.Now
	s.mu.Unlock()

	for range 3 {
		require.Error(t, h.exp.ConsumeProfiles(context.Background(), batch(10, 12)))
	}
	var warned []map[string]any
	for _, e := range h.logs.All() {
		if strings.HasPrefix(e.Message, "nexovue pacing: this collector's share of the key's limit is under three") {
			warned = append(warned, e.ContextMap())
			assert.Contains(t, e.Message, "gateway", "says what to do")
		}
	}
	require.Len(t, warned, 1, "logged once: %s", h.logText())
	assert.Equal(t, int64(970), warned[0]["samples_per_second"])
	assert.Equal(t, int64(500), warned[0]["request_samples"])
	assert.Equal(t, int64(20_000), warned[0]["rate_limit"])
	assert.NotContains(t, h.logText(), testKey)
}
