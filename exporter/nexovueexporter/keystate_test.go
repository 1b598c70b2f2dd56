// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"context"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// virtualClock is a settable clock for the pacing arithmetic.
type virtualClock struct{ t time.Time }

func (c *virtualClock) now() time.Time { return c.t }

func newPacedState(t *testing.T, limit int) (*keyState, *virtualClock) {
	t.Helper()
	s := acquireKeyState("https://pacing.test/"+t.Name(), testKey, limit)
	t.Cleanup(s.release)
	c := &virtualClock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	s.now = c.now
	s.phase = func() float64 { return 0 }
	return s, c
}

// leave is a request leaving the exporter at a virtual time.
type leave struct {
	at      time.Time
	samples int
}

// maxInWindow is the most samples that left in any window (start-w, start].
func maxInWindow(leaves []leave, w time.Duration) int {
	most := 0
	for _, end := range leaves {
		sum := 0
		for _, l := range leaves {
			if l.at.After(end.at.Add(-w)) && !l.at.After(end.at) {
				sum += l.samples
			}
		}
		most = max(most, sum)
	}
	return most
}

func TestPacingKeepsEveryOneSecondWindowWithinTheLimit(t *testing.T) {
	const limit = 1000
	s, clock := newPacedState(t, limit)
	rng := rand.New(rand.NewPCG(1, 2))

	// Four consumers send requests of 20..400 samples back to back: each
	// asks again 1ms after its previous request left.
	start := clock.t
	ready := []time.Time{start, start, start, start}
	var leaves []leave
	total := 0
	for range 200 {
		c := 0
		for i := range ready {
			if ready[i].Before(ready[c]) {
				c = i
			}
		}
		clock.t = ready[c]
		n := 20 + rng.IntN(381)
		_, wait := s.reserve(n)
		at := clock.t.Add(wait)
		leaves = append(leaves, leave{at: at, samples: n})
		ready[c] = at.Add(time.Millisecond)
		total += n
	}

	assert.LessOrEqual(t, maxInWindow(leaves, time.Second), limit, "samples in a one-second window")
	// The first window is a burst of one second's worth, not less.
	assert.Greater(t, maxInWindow(leaves[:4], time.Second), 4*20-1)
	var last time.Time
	for _, l := range leaves {
		if l.at.After(last) {
			last = l.at
		}
	}
	// Pacing is not much slower than the limit: requests of varied sizes do
	// not pack a window exactly, but it stays above 85% of what the window allows.
	achieved := float64(total) / last.Sub(start).Seconds()
	assert.Greater(t, achieved, 0.85*limit/paceWindow.Seconds(), "samples per virtual second")
}

func TestPacingBurstIsOneSecondsWorth(t *testing.T) {
	s, _ := newPacedState(t, 1000)
	for i := range 10 {
		_, wait := s.reserve(100)
		assert.Zero(t, wait, "request %d of the first second's worth leaves at once", i)
	}
	_, wait := s.reserve(1)
	assert.Equal(t, paceWindow, wait, "the 1001st sample waits for the window")
}

func TestPacingOversizedRequestGoesAloneWithoutDeadlock(t *testing.T) {
	s, clock := newPacedState(t, 1000)
	_, wait := s.reserve(300)
	assert.Zero(t, wait)
	_, wait = s.reserve(5000)
	assert.Equal(t, paceWindow, wait, "waits for an empty window, then goes")
	clock.t = clock.t.Add(paceWindow)
	_, wait = s.reserve(10)
	assert.Equal(t, paceWindow, wait, "the next request waits for the oversized one to leave the window")
}

func TestPacingCancelFreesTheBooking(t *testing.T) {
	s, _ := newPacedState(t, 1000)
	id, wait := s.reserve(1000)
	assert.Zero(t, wait)
	s.cancel(id)
	_, wait = s.reserve(1000)
	assert.Zero(t, wait)
}

func TestPacingOffNeverWaits(t *testing.T) {
	s, _ := newPacedState(t, 0)
	for range 100 {
		_, wait := s.reserve(1_000_000)
		assert.Zero(t, wait)
	}
	assert.Zero(t, s.maxSamples())
}

func TestStateIsSharedPerEndpointAndKeyWithTheLowestLimit(t *testing.T) {
	a := acquireKeyState("https://shared.test", "k1", 5000)
	b := acquireKeyState("https://shared.test", "k1", 1000)
	other := acquireKeyState("https://shared.test", "k2", 5000)
	otherEndpoint := acquireKeyState("https://shared.test/x", "k1", 5000)
	assert.Same(t, a, b)
	assert.NotSame(t, a, other)
	assert.NotSame(t, a, otherEndpoint)
	assert.Equal(t, 1000, a.maxSamples())

	id := a.id
	a.release()
	b.release()
	other.release()
	otherEndpoint.release()
	registry.mu.Lock()
	_, still := registry.states[id]
	registry.mu.Unlock()
	assert.False(t, still, "the last release removes the state")
}

func TestGateOnlyMovesForward(t *testing.T) {
	s, clock := newPacedState(t, 0)
	s.closeGate(clock.t.Add(3 * time.Second))
	s.closeGate(clock.t.Add(time.Second))
	assert.Equal(t, 3*time.Second, s.gateWait())
	clock.t = clock.t.Add(4 * time.Second)
	assert.Negative(t, s.gateWait())
}

func TestRejectedKeyLogIsOnceAMinute(t *testing.T) {
	s, clock := newPacedState(t, 0)
	assert.True(t, s.shouldLogRejectedKey())
	assert.False(t, s.shouldLogRejectedKey())
	clock.t = clock.t.Add(59 * time.Second)
	assert.False(t, s.shouldLogRejectedKey())
	clock.t = clock.t.Add(time.Second)
	assert.True(t, s.shouldLogRejectedKey())
}

func TestAdmitGivesUpOnCancelAndStop(t *testing.T) {
	t.Run("pacing, context cancelled", func(t *testing.T) {
		s := acquireKeyState("https://admit.test/cancel", testKey, 10)
		defer s.release()
		first, err := s.admit(context.Background(), nil, 10, 0) // fills the window
		require.NoError(t, err)
		s.answered(first.booking)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		w, err := s.admit(ctx, nil, 10, 0)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Positive(t, w.pacing)
		s.mu.Lock()
		assert.Len(t, s.sent, 1, "the cancelled booking is gone")
		s.mu.Unlock()
	})
	t.Run("Retry-After, stopped", func(t *testing.T) {
		s := acquireKeyState("https://admit.test/stop", testKey, 0)
		defer s.release()
		s.closeGate(time.Now().Add(time.Hour))
		stop := make(chan struct{})
		close(stop)
		w, err := s.admit(context.Background(), stop, 1, 0)
		require.ErrorIs(t, err, errStopped)
		assert.Less(t, w.retryAfter, time.Hour)
	})
}

// TestAdmitWaitsForTheAnswerOfARequestInFlight: a request that left is
// counted by the ingest until it answers, so it holds its samples in the
// window until a window after its answer.
func TestAdmitWaitsForTheAnswerOfARequestInFlight(t *testing.T) {
	s := acquireKeyState("https://admit.test/inflight", testKey, 10)
	defer s.release()
	first, err := s.admit(context.Background(), nil, 10, 0)
	require.NoError(t, err)
	done := make(chan time.Time, 1)
	go func() {
		_, err := s.admit(context.Background(), nil, 5, 0)
		assert.NoError(t, err)
		done <- time.Now()
	}()
	select {
	case <-done:
		t.Fatal("left while the window was full of a request in flight")
	case <-time.After(paceWindow + 300*time.Millisecond):
	}
	answeredAt := time.Now()
	s.answered(first.booking)
	left := <-done
	assert.False(t, left.Before(answeredAt.Add(paceWindow)), "left a window after the answer")
}

func TestAdmitBooksAgainWhenTheGateClosesDuringPacing(t *testing.T) {
	s := acquireKeyState("https://admit.test/rebook", testKey, 10)
	defer s.release()
	first, err := s.admit(context.Background(), nil, 10, 0) // fills the window
	require.NoError(t, err)
	s.answered(first.booking)

	done := make(chan waits, 1)
	go func() {
		w, err := s.admit(context.Background(), nil, 5, 0)
		assert.NoError(t, err)
		done <- w
	}()
	// While the second request waits for pacing, a 429 closes the gate past
	// the end of its pacing wait.
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.sent) == 2
	}, time.Second, time.Millisecond)
	until := time.Now().Add(paceWindow + 200*time.Millisecond)
	s.closeGate(until)
	w := <-done
	assert.False(t, time.Now().Before(until), "left after the gate opened")
	assert.Positive(t, w.retryAfter)
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.sent)
	assert.False(t, s.sent[len(s.sent)-1].at.Before(until), "booked again after the gate")
}

// roundTripFunc is an http.RoundTripper from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestGateTransportClosesOnTheAnswerAndHoldsBackTheNext(t *testing.T) {
	s := acquireKeyState("https://gate.test", testKey, 0)
	defer s.release()
	calls := 0
	base := roundTripFunc(func(*http.Request) (*http.Response, error) {
		calls++
		h := http.Header{}
		h.Set("Retry-After", "30")
		return &http.Response{StatusCode: http.StatusTooManyRequests, Header: h, Body: http.NoBody}, nil
	})
	gt := &gateTransport{base: base, state: s}
	req := func() *http.Request {
		r, err := http.NewRequest(http.MethodPost, "https://gate.test/v1development/profiles", strings.NewReader("x"))
		require.NoError(t, err)
		return r
	}

	resp, err := gt.RoundTrip(req())
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Greater(t, s.gateWait(), 29*time.Second, "closed from the header, before anyone reads the body")

	_, err = gt.RoundTrip(req())
	require.ErrorIs(t, err, errGateClosed)
	assert.Equal(t, 1, calls, "the second request never reached the network")
}

// TestPacingHoldsWhileTheIngestIsSlowToAnswer: the ingest counts a request
// at some moment between the moment it left and its answer, and answers
// after a varying delay. Four consumers send back to back; every one-second
// window of what the ingest counted stays within the limit.
func TestPacingHoldsWhileTheIngestIsSlowToAnswer(t *testing.T) {
	const limit = 1000
	s, clock := newPacedState(t, limit)
	rng := rand.New(rand.NewPCG(3, 4))

	type event struct {
		at       time.Time
		consumer int
		answer   uint64 // a booking whose answer arrives; 0: the consumer tries to send
	}
	type consumer struct {
		id uint64
		n  int
	}
	consumers := make([]consumer, 4)
	var events []event
	for c := range consumers {
		consumers[c].n = 20 + rng.IntN(381)
		events = append(events, event{at: clock.t, consumer: c})
	}
	var counted []leave
	for sent := 0; sent < 300 && len(events) > 0; {
		next := 0
		for i, ev := range events {
			if ev.at.Before(events[next].at) {
				next = i
			}
		}
		ev := events[next]
		events = append(events[:next], events[next+1:]...)
		clock.t = ev.at
		c := &consumers[ev.consumer]
		if ev.answer != 0 {
			s.answered(ev.answer)
			c.id, c.n = 0, 20+rng.IntN(381)
			events = append(events, event{at: clock.t.Add(time.Millisecond), consumer: ev.consumer})
			continue
		}
		id, wait := s.rebook(c.id, c.n)
		c.id = id
		if wait > 0 {
			events = append(events, event{at: clock.t.Add(wait), consumer: ev.consumer})
			continue
		}
		s.depart(id)
		sent++
		latency := time.Duration(rng.Int64N(int64(900 * time.Millisecond)))
		countedAt := clock.t.Add(time.Duration(rng.Float64() * float64(latency)))
		counted = append(counted, leave{at: countedAt, samples: c.n})
		events = append(events, event{at: clock.t.Add(latency), consumer: ev.consumer, answer: id})
	}
	require.Len(t, counted, 300)
	slices.SortFunc(counted, func(a, b leave) int { return a.at.Compare(b.at) })
	assert.LessOrEqual(t, maxInWindow(counted, time.Second), limit, "samples the ingest counted in a one-second window")
}
