package ingest

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 300_000_000, time.UTC) // 12:00:00.3

func TestRateLimitWindowAndEarlyRetries(t *testing.T) {
	clock := newFakeClock(t0)
	s := startServer(t, Config{SamplesPerSecond: 100, Now: clock.Now})

	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 60)).status)
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 40)).status, "exactly at the limit is accepted")

	a := sendBuilder(t, s, nSamples("a", 1))
	require.Equal(t, http.StatusTooManyRequests, a.status, "one sample above the limit")
	assert.Equal(t, "1", a.header.Get("Retry-After"))
	assert.Contains(t, a.message(t), "100 samples in the last second plus 1 in this request exceed 100")
	assert.Zero(t, s.EarlyRetries())

	// Before the announced second has passed: early retries, each told
	// the time remaining.
	clock.Advance(500 * time.Millisecond)
	a = sendBuilder(t, s, nSamples("a", 1))
	require.Equal(t, http.StatusTooManyRequests, a.status)
	assert.Equal(t, "1", a.header.Get("Retry-After"))
	clock.Advance(499 * time.Millisecond)
	a = sendBuilder(t, s, nSamples("a", 1))
	require.Equal(t, http.StatusTooManyRequests, a.status)
	assert.Contains(t, a.message(t), "early retry")
	assert.Equal(t, 2, s.EarlyRetries())

	// Exactly when announced: accepted; the window has moved past the
	// first 100 samples.
	clock.Advance(time.Millisecond)
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 100)).status)
	assert.Equal(t, 2, s.EarlyRetries())
	assert.Equal(t, int64(200), s.SamplesAccepted())
	assert.Equal(t, 3, s.Requests(http.StatusTooManyRequests))

	recent := s.RecentRequests()
	var early int
	for _, r := range recent {
		if r.EarlyRetry {
			early++
		}
	}
	assert.Equal(t, 2, early)
}

func TestRateLimitIsPerKeyAndSliding(t *testing.T) {
	clock := newFakeClock(t0)
	s := startServer(t, Config{Keys: []string{testKey, "other"}, SamplesPerSecond: 100, Now: clock.Now})
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 60)).status)
	clock.Advance(500 * time.Millisecond)
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 30)).status)

	// Another key has its own budget.
	body, err := nSamples("a", 100).MarshalProto()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, send(t, s, "other", ContentTypeProto, "", body).status)

	// 1.0s after the first request its 60 samples leave the window
	// (which is (now-1s, now]); the 30 stay.
	clock.Advance(500 * time.Millisecond)
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 70)).status)
	assert.Equal(t, int64(260), s.SamplesAccepted())
}

func TestRefusedRequestsConsumeNoBudget(t *testing.T) {
	clock := newFakeClock(t0)
	s := startServer(t, Config{SamplesPerSecond: 100, MaxFrames: 1000, Now: clock.Now})
	// Invalid, too many frames: refused before the rate limit.
	pd := nSamples("a", 90).Profiles()
	firstSample(pd).SetStackIndex(99)
	require.Equal(t, http.StatusBadRequest, send(t, s, testKey, ContentTypeProto, "", marshalProto(t, pd)).status)
	require.Equal(t, http.StatusRequestEntityTooLarge, sendBuilder(t, s, nSamples("a", 501)).status)
	// The whole budget is still there.
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 100)).status)

	// A request that would cross the limit is refused whole and not
	// counted: after the block, with the window empty, 100 fit again, and
	// a request larger than the limit never fits.
	clock.Advance(time.Second)
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 50)).status)
	require.Equal(t, http.StatusTooManyRequests, sendBuilder(t, s, nSamples("a", 51)).status)
	clock.Advance(time.Second)
	require.Equal(t, http.StatusTooManyRequests, sendBuilder(t, s, nSamples("a", 101)).status)
	clock.Advance(time.Second)
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 100)).status)
	assert.Equal(t, int64(250), s.SamplesAccepted())
}

func TestDefaultRateLimitIs20000PerSecond(t *testing.T) {
	clock := newFakeClock(t0)
	s := startServer(t, Config{Now: clock.Now})
	require.Equal(t, http.StatusOK, sendBuilder(t, s, NewRequestBuilder().Samples("a", 20_000, "f")).status)
	a := sendBuilder(t, s, nSamples("a", 1))
	require.Equal(t, http.StatusTooManyRequests, a.status)
	assert.Equal(t, "1", a.header.Get("Retry-After"))
}

func TestRetryAfterRoundsUpToWholeSeconds(t *testing.T) {
	clock := newFakeClock(t0)
	s := startServer(t, Config{SamplesPerSecond: 10, RetryAfter: 1500 * time.Millisecond, Now: clock.Now})
	a := sendBuilder(t, s, nSamples("a", 11))
	require.Equal(t, http.StatusTooManyRequests, a.status)
	require.Equal(t, "2", a.header.Get("Retry-After"), "1.5s is announced as 2 whole seconds")

	clock.Advance(1900 * time.Millisecond)
	a = sendBuilder(t, s, nSamples("a", 1))
	require.Equal(t, http.StatusTooManyRequests, a.status, "before the announced 2s")
	assert.Equal(t, "1", a.header.Get("Retry-After"), "0.1s remaining, announced as 1")
	assert.Equal(t, 1, s.EarlyRetries())

	clock.Advance(100 * time.Millisecond)
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 1)).status)
}

func TestRetryAfterHTTPDate(t *testing.T) {
	clock := newFakeClock(t0) // 12:00:00.3
	s := startServer(t, Config{SamplesPerSecond: 10, RetryAfterHTTPDate: true, Now: clock.Now})
	a := sendBuilder(t, s, nSamples("a", 11))
	require.Equal(t, http.StatusTooManyRequests, a.status)
	// 12:00:01.3 rounded up to the whole second a client can read.
	const want = "Wed, 02 Dec 2026 12:00:02 GMT"
	require.Equal(t, want, a.header.Get("Retry-After"))
	at, err := http.ParseTime(a.header.Get("Retry-After"))
	require.NoError(t, err)
	_, err = time.Parse(time.RFC1123, a.header.Get("Retry-After"))
	require.NoError(t, err, "the Collector's otlphttp exporter parses time.RFC1123")

	clock.Advance(at.Sub(clock.Now()) - time.Millisecond) // 12:00:01.999
	a = sendBuilder(t, s, nSamples("a", 1))
	require.Equal(t, http.StatusTooManyRequests, a.status)
	assert.Equal(t, want, a.header.Get("Retry-After"), "the early retry is told the same time")
	assert.Equal(t, 1, s.EarlyRetries())

	clock.Advance(time.Millisecond) // 12:00:02.000, as announced
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 1)).status)
	assert.Equal(t, 1, s.EarlyRetries())
}

func TestRetryAfterHTTPDateOnWholeSecond(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	s := startServer(t, Config{SamplesPerSecond: 10, RetryAfterHTTPDate: true, Now: clock.Now})
	a := sendBuilder(t, s, nSamples("a", 11))
	require.Equal(t, http.StatusTooManyRequests, a.status)
	assert.Equal(t, "Wed, 02 Dec 2026 12:00:01 GMT", a.header.Get("Retry-After"))
}

func TestRequestOnItsWayBeforeThe429IsNotAnEarlyRetry(t *testing.T) {
	clock := newFakeClock(t0)
	s := New(Config{SamplesPerSecond: 10, Now: clock.Now})
	arrivedEarlier := clock.Now()
	clock.Advance(10 * time.Millisecond)
	d := s.admit(testKey, "", 11, 10, clock.Now())
	require.True(t, d.refused)
	require.False(t, d.early)

	// Arrived before the 429 was decided, decided after: refused, not early.
	d = s.admit(testKey, "", 1, 10, arrivedEarlier)
	assert.True(t, d.refused)
	assert.False(t, d.early)
	assert.Equal(t, "1", d.retryAfter)
	// Arrived after: an early retry.
	d = s.admit(testKey, "", 1, 10, clock.Now())
	assert.True(t, d.refused)
	assert.True(t, d.early)
}

func TestNoRetryAfterRefusesWithoutBlocking(t *testing.T) {
	clock := newFakeClock(t0)
	s := New(Config{SamplesPerSecond: 10, NoRetryAfter: true, Now: clock.Now})
	require.False(t, s.admit(testKey, "", 8, 10, clock.Now()).refused)
	d := s.admit(testKey, "", 3, 10, clock.Now())
	assert.True(t, d.refused)
	assert.Empty(t, d.retryAfter, "no Retry-After")
	d = s.admit(testKey, "", 2, 10, clock.Now())
	assert.False(t, d.refused, "the key is not blocked: what fits in the window is accepted")
	assert.False(t, d.early)
}

func TestClientEarlyRetriesCountOnlyTheClientThatWasTold(t *testing.T) {
	clock := newFakeClock(t0)
	s := New(Config{SamplesPerSecond: 10, Now: clock.Now})
	require.True(t, s.admit(testKey, "a", 11, 10, clock.Now()).refused) // a is told: 1 s
	clock.Advance(100 * time.Millisecond)
	d := s.admit(testKey, "b", 1, 10, clock.Now())
	assert.True(t, d.refused)
	assert.True(t, d.early, "per key: inside the period")
	assert.False(t, d.clientEarly, "b was never told")
	clock.Advance(100 * time.Millisecond)
	d = s.admit(testKey, "a", 1, 10, clock.Now())
	assert.True(t, d.clientEarly, "a was told and sent inside its period")
	d = s.admit(testKey, "b", 1, 10, clock.Now())
	assert.True(t, d.clientEarly, "b has been told since")
	clock.Advance(time.Second)
	d = s.admit(testKey, "a", 1, 10, clock.Now())
	assert.False(t, d.refused)
	assert.False(t, d.clientEarly)
}
