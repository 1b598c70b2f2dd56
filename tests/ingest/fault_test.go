package ingest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFaultUnavailableFirstN(t *testing.T) {
	s := startServer(t, Config{})
	s.SetFault(Fault{UnavailableFirst: 2, UnavailableRetryAfter: 3 * time.Second})
	for range 2 {
		a := sendBuilder(t, s, nSamples("a", 1))
		require.Equal(t, http.StatusServiceUnavailable, a.status)
		assert.Equal(t, "3", a.header.Get("Retry-After"))
	}
	assert.Equal(t, 0, s.Fault().UnavailableFirst)
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 1)).status)
	assert.Equal(t, 2, s.Requests(http.StatusServiceUnavailable))
	assert.Equal(t, int64(1), s.SamplesAccepted())

	s.SetFault(Fault{UnavailableFirst: 1})
	a := sendBuilder(t, s, nSamples("a", 1))
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	assert.Empty(t, a.header.Values("Retry-After"), "no Retry-After unless asked for")
}

func TestFaultDropFirstN(t *testing.T) {
	s := startServer(t, Config{})
	s.SetFault(Fault{DropFirst: 2})
	body, err := nSamples("a", 1).MarshalProto()
	require.NoError(t, err)
	for range 2 {
		_, err := trySend(s, testKey, ContentTypeProto, "", body)
		require.Error(t, err, "the connection is closed without an answer")
	}
	require.Equal(t, http.StatusOK, send(t, s, testKey, ContentTypeProto, "", body).status)
	assert.Equal(t, 2, s.Dropped())
	assert.Equal(t, int64(1), s.SamplesAccepted())
}

func TestFaultDropAllWhileSwitchedOn(t *testing.T) {
	s := startServer(t, Config{})
	body, err := nSamples("a", 1).MarshalProto()
	require.NoError(t, err)
	s.SetFault(Fault{DropAll: true})
	for range 3 {
		_, err := trySend(s, testKey, ContentTypeProto, "", body)
		require.Error(t, err)
	}
	s.SetFault(Fault{})
	require.Equal(t, http.StatusOK, send(t, s, testKey, ContentTypeProto, "", body).status)
	assert.Equal(t, 3, s.Dropped())
	assert.Equal(t, 3, s.TakeWindow().Dropped)
}

func TestFaultRandomThrottleIsSeeded(t *testing.T) {
	outcomes := func(seed uint64) []int {
		clock := newFakeClock(t0)
		s := startServer(t, Config{Now: clock.Now})
		s.SetFault(Fault{ThrottleProbability: 0.5, Seed: seed})
		var out []int
		for range 40 {
			a := sendBuilder(t, s, nSamples("a", 1))
			require.NotEmpty(t, a.status)
			if a.status == http.StatusTooManyRequests {
				assert.Equal(t, "1", a.header.Get("Retry-After"))
			}
			out = append(out, a.status)
			clock.Advance(2 * time.Second) // past every Retry-After
		}
		assert.Zero(t, s.EarlyRetries())
		return out
	}
	first := outcomes(7)
	assert.Equal(t, first, outcomes(7), "the same seed throttles the same requests")
	var throttled int
	for _, st := range first {
		if st == http.StatusTooManyRequests {
			throttled++
		} else {
			require.Equal(t, http.StatusOK, st)
		}
	}
	assert.Greater(t, throttled, 5)
	assert.Less(t, throttled, 35)
}

func TestFaultRandomThrottleBlocksTheKey(t *testing.T) {
	clock := newFakeClock(t0)
	s := startServer(t, Config{Now: clock.Now})
	s.SetFault(Fault{ThrottleProbability: 1})
	require.Equal(t, http.StatusTooManyRequests, sendBuilder(t, s, nSamples("a", 1)).status)
	s.SetFault(Fault{})
	require.Equal(t, http.StatusTooManyRequests, sendBuilder(t, s, nSamples("a", 1)).status)
	assert.Equal(t, 1, s.EarlyRetries())
	clock.Advance(time.Second)
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 1)).status)
}

func TestFaultDelay(t *testing.T) {
	s := startServer(t, Config{})
	s.SetFault(Fault{Delay: 3 * time.Second})
	body, err := nSamples("a", 1).MarshalProto()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint(), bytesReader(body))
	require.NoError(t, err)
	req.Header.Set(KeyHeader, testKey)
	req.Header.Set("Content-Type", ContentTypeProto)
	_, err = http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the answer is slower than the client waits")

	s.SetFault(Fault{Delay: 10 * time.Millisecond})
	require.Equal(t, http.StatusOK, send(t, s, testKey, ContentTypeProto, "", body).status)
}

func TestFaultFixedStatus(t *testing.T) {
	s := startServer(t, Config{})
	body, err := nSamples("a", 1).MarshalProto()
	require.NoError(t, err)
	s.SetFault(Fault{FixedStatus: http.StatusUnauthorized, FixedBody: "key revoked"})
	a := send(t, s, testKey, ContentTypeProto, "", body)
	require.Equal(t, http.StatusUnauthorized, a.status)
	assert.Equal(t, "key revoked", a.message(t))

	s.SetFault(Fault{FixedStatus: http.StatusBadRequest, FixedBody: "invalid stack_table index 57 (table has 12 entries)"})
	a = send(t, s, testKey, ContentTypeJSON, "", []byte("{}"))
	require.Equal(t, http.StatusBadRequest, a.status)
	assert.Equal(t, "invalid stack_table index 57 (table has 12 entries)", a.message(t))

	s.SetFault(Fault{})
	require.Equal(t, http.StatusOK, send(t, s, testKey, ContentTypeProto, "", body).status)
	assert.Equal(t, 1, s.Requests(http.StatusUnauthorized))
	assert.Equal(t, 1, s.Requests(http.StatusBadRequest))
}

func TestFaultUnavailableRetryAfterAsHTTPDate(t *testing.T) {
	clock := newFakeClock(t0) // 12:00:00.3
	s := startServer(t, Config{RetryAfterHTTPDate: true, Now: clock.Now})
	s.SetFault(Fault{UnavailableFirst: 1, UnavailableRetryAfter: 2 * time.Second})
	a := sendBuilder(t, s, nSamples("a", 1))
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	assert.Equal(t, "Wed, 02 Dec 2026 12:00:03 GMT", a.header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 1)).status, "a 503 does not block the key")
	assert.Zero(t, s.EarlyRetries())
}

func TestReset(t *testing.T) {
	clock := newFakeClock(t0)
	s := startServer(t, Config{SamplesPerSecond: 5, Now: clock.Now})
	require.Equal(t, http.StatusOK, sendBuilder(t, s, NewRequestBuilder().SeqRange("a", 0, 5, "f")).status)
	require.Equal(t, http.StatusTooManyRequests, sendBuilder(t, s, nSamples("a", 1)).status)
	s.SetFault(Fault{DropAll: true})
	s.Reset()
	assert.Equal(t, Fault{}, s.Fault())
	assert.Zero(t, s.SamplesAccepted())
	assert.Zero(t, s.Requests(http.StatusTooManyRequests))
	assert.Zero(t, s.Seq().Distinct)
	assert.Empty(t, s.RecentRequests())
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 5)).status, "the key's window and block are gone")
}

func TestDelayingCountsHeldRequests(t *testing.T) {
	srv := StartForTest(t, Config{Keys: []string{"k"}})
	srv.SetFault(Fault{Delay: time.Minute})
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest(http.MethodPost, srv.Endpoint(), strings.NewReader(""))
		req.Header.Set("Content-Type", "application/x-protobuf")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	require.Eventually(t, func() bool { return srv.Delaying() == 1 }, 10*time.Second, 5*time.Millisecond)
	srv.Close() // ends the delay
	<-done
	assert.Zero(t, srv.Delaying())
}
