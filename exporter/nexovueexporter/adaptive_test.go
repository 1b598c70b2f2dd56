// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// acceptEvery records n requests of 500 samples accepted one every interval
// from the clock's time on, and moves the clock to n intervals later.
func acceptEvery(s *keyState, clock *virtualClock, n int, interval time.Duration) {
	t0 := clock.t
	for i := range n {
		s.acceptedAt(t0.Add(time.Duration(i)*interval), 500)
	}
	clock.t = t0.Add(time.Duration(n) * interval)
}

// acceptInWindow records minMeasured requests of samples in all accepted
// within a millisecond from at on: what one window accepted, a measure.
func acceptInWindow(s *keyState, at time.Time, samples int) {
	for i := range minMeasured {
		n := samples / minMeasured
		if i == 0 {
			n += samples % minMeasured
		}
		s.acceptedAt(at.Add(time.Duration(i)*time.Millisecond/minMeasured), n)
	}
}

// acceptSteadily records 8 s accepted at 2,500 samples/s (500 every 200 ms).
func acceptSteadily(s *keyState, clock *virtualClock) {
	acceptEvery(s, clock, 40, 200*time.Millisecond)
}

// perWindow is a rate in samples per second as the samples allowed in one paceWindow.
func perWindow(perSecond float64) int {
	return int(perSecond * paceWindow.Seconds())
}

func TestAdaptiveRateFollowsWhatTheIngestAccepted(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	acceptSteadily(s, clock)
	refusedLeft := clock.t.Add(-10 * time.Millisecond)
	perSecond := s.throttled(refusedLeft)
	assert.InDelta(t, 2500*(1-decreaseMargin), perSecond, 1, "the accepted rate over measureSpan, less decreaseMargin")
	assert.Equal(t, perWindow(2500*(1-decreaseMargin)), s.maxSamples())
	assert.True(t, s.adapted())
}

func TestAdaptiveRateWithinTheFirstSecondIsWhatTheWindowAccepted(t *testing.T) {
	// A fleet that starts together is refused within its first second: what
	// each collector got into that window is its share of the key's limit.
	s, clock := newPacedState(t, 20_000)
	acceptEvery(s, clock, 5, 100*time.Millisecond)
	assert.InDelta(t, 2500*(1-decreaseMargin), s.throttled(clock.t), 1)
}

func TestAdaptiveRateDoesNotCountTheTimeTheGateWasClosed(t *testing.T) {
	// 2 s accepted at 2,500 samples/s, the gate closed for 2 s, 2 s more:
	// the rate is 2,500 samples/s over the 4 s the exporter could send.
	s, clock := newPacedState(t, 20_000)
	acceptEvery(s, clock, 10, 200*time.Millisecond)
	s.closeGate(clock.t.Add(2 * time.Second))
	clock.t = clock.t.Add(2 * time.Second)
	acceptEvery(s, clock, 11, 200*time.Millisecond)
	assert.InDelta(t, 2500*(1-decreaseMargin), s.throttled(clock.t), 1)
}

// equalized is a state whose equalizing ramp ended (at about 5,400
// samples/s) at the clock's time: the plateau after it.
func equalized(t *testing.T) (*keyState, *virtualClock) {
	s, clock := newPacedState(t, 20_000)
	acceptSteadily(s, clock)
	s.throttled(clock.t)
	acceptSteadily(s, clock)
	s.throttled(clock.t) // the fleet grew: the ramp
	s.closeGate(clock.t.Add(time.Second))
	clock.t = clock.t.Add(2 * time.Second)
	acceptEvery(s, clock, 20, 100*time.Millisecond)
	require.Positive(t, s.throttled(clock.t))
	require.False(t, s.ramping())
	return s, clock
}

func TestAdaptiveOnceAdaptedA429LowersTheRateItself(t *testing.T) {
	// After the equalizing ramp (a 429 in the plateau after a first
	// decrease starts one: TestAdaptiveA429DuringThePlateauEqualizes).
	s, clock := equalized(t)

	// A noisy measure (lower than the rate: a slow ingest) does not lower
	// it further than decreaseMargin.
	before := s.maxSamples()
	acceptEvery(s, clock, 20, 150*time.Millisecond) // 3,333 samples/s
	s.throttled(clock.t)
	assert.Equal(t, int(float64(before)*(1-decreaseMargin)), s.maxSamples())

	// Less than half of the rate accepted (the fleet doubled): what was accepted.
	before = s.maxSamples()
	acceptEvery(s, clock, 12, 500*time.Millisecond) // 1,000 samples/s
	s.throttled(clock.t)
	assert.Equal(t, perWindow(1000*(1-decreaseMargin)), s.maxSamples())
	assert.Less(t, s.maxSamples(), before/2)
}

func TestAdaptiveEveryEpisodeLowersTheRate(t *testing.T) {
	// A measure above the current rate (what was accepted before an earlier
	// decrease) still lowers the rate by decreaseMargin.
	s, clock := equalized(t)
	before := s.maxSamples()
	acceptEvery(s, clock, 30, 50*time.Millisecond) // 10,000 samples/s
	s.throttled(clock.t)
	assert.Equal(t, int(float64(before)*(1-decreaseMargin)), s.maxSamples())
}

func TestAdaptiveSameEpisodeDecreasesOnce(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	acceptSteadily(s, clock)
	decreased := clock.t
	assert.Positive(t, s.throttled(clock.t.Add(-time.Millisecond)))
	want := s.maxSamples()

	// 429s for requests already on their way, and any within sameEpisode.
	clock.t = decreased.Add(sameEpisode - time.Millisecond)
	assert.Zero(t, s.throttled(decreased.Add(-100*time.Millisecond)), "left before the decrease")
	assert.Zero(t, s.throttled(decreased.Add(10*time.Millisecond)), "within sameEpisode of the decrease")
	clock.t = decreased.Add(10 * time.Second)
	assert.Zero(t, s.throttled(decreased.Add(-time.Millisecond)), "left before the decrease, answered late")
	assert.Equal(t, want, s.maxSamples())

	// A 429 for a request that left after sameEpisode is a new episode
	// (the collector paced on: requests accepted until then).
	s.acceptedAt(clock.t.Add(-time.Second), 2000)
	assert.Positive(t, s.throttled(clock.t.Add(-time.Millisecond)))
	assert.Less(t, s.maxSamples(), want)
}

func TestAdaptiveRateHoldsThenClimbsBackToTheCeiling(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	acceptSteadily(s, clock)
	s.throttled(clock.t)
	decreased, r0 := clock.t, s.maxSamples()

	clock.t = decreased.Add(plateau)
	assert.Equal(t, r0, s.maxSamples(), "no growth during the plateau")
	clock.t = decreased.Add(plateau + growthPeriod)
	assert.Equal(t, r0+int(growthFraction*20_000), s.maxSamples(), "+growthFraction of the ceiling growthPeriod after the plateau")
	clock.t = decreased.Add(plateau + 3*growthPeriod)
	assert.Equal(t, 20_000, s.maxSamples())
	assert.False(t, s.adapted(), "back at the ceiling: bursts again")
}

// TestAdaptiveWithoutAMeasureJoins: refused before anything was accepted
// (a collector that just started, or a gateway replica replacing one, found
// the key's window full), or after fewer than minMeasured requests, there is
// no measure of its share: it joins at joinFraction of the ceiling and
// doubles every joinDoubling that the gate is open, back at the ceiling
// in 4.3 s.
func TestAdaptiveWithoutAMeasureJoins(t *testing.T) {
	for accepted := range minMeasured {
		t.Run(fmt.Sprintf("%d_accepted", accepted), func(t *testing.T) { assertJoins(t, accepted) })
	}
}

func assertJoins(t *testing.T, accepted int) {
	{
		s, clock := newPacedState(t, 20_000)
		acceptEvery(s, clock, accepted, 100*time.Millisecond)
		assert.InDelta(t, joinFraction*20_000/paceWindow.Seconds(), s.throttled(clock.t), 1)
		assert.Equal(t, 1000, s.maxSamples())
		s.closeGate(clock.t.Add(time.Second))
		clock.t = clock.t.Add(time.Second)
		assert.Equal(t, 1000, s.maxSamples(), "no growth while the gate is closed")
		clock.t = clock.t.Add(joinDoubling)
		assert.Equal(t, 2000, s.maxSamples())
		clock.t = clock.t.Add(2 * joinDoubling)
		assert.Equal(t, 8000, s.maxSamples())
		clock.t = clock.t.Add(joinDoubling + 400*time.Millisecond)
		assert.Equal(t, 20_000, s.maxSamples())
		assert.False(t, s.adapted(), "back at the ceiling: bursts again, and the next 429 is a first decrease")
	}
}

// TestAdaptiveAJoinerRefusedAgainEqualizes: a joiner refused again (with a
// measure now) starts the equalizing ramp, as the fleet it joined does in
// the same episode, instead of taking what it got into the window.
func TestAdaptiveAJoinerRefusedAgainEqualizes(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	s.throttled(clock.t)
	s.closeGate(clock.t.Add(time.Second))
	clock.t = clock.t.Add(time.Second + 2*joinDoubling) // at 4,000 samples/s
	acceptEvery(s, clock, 8, 125*time.Millisecond)
	assert.InDelta(t, equalizeBase*20_000/paceWindow.Seconds(), s.throttled(clock.t), 1)
	assertEqualizingRamp(t, s, clock)
}

// TestAdaptiveAJoinerRefusedAgainWithoutAMeasureEqualizes: at its first
// rates a joiner may have had nothing accepted when the fleet's next episode
// comes; it starts the equalizing ramp with the others all the same (kept
// joining, it started a ramp of its own at the others' ramp's end, alone,
// and took several shares).
func TestAdaptiveAJoinerRefusedAgainWithoutAMeasureEqualizes(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	s.throttled(clock.t)
	s.closeGate(clock.t.Add(time.Second))
	clock.t = clock.t.Add(2 * time.Second)
	assert.InDelta(t, equalizeBase*20_000/paceWindow.Seconds(), s.throttled(clock.t), 1)
	assertEqualizingRamp(t, s, clock)
}

// assertEqualizingRamp asserts that s, refused at the clock's time, is on
// the equalizing ramp: equalizeBase of the ceiling until its gate reopens,
// then equalizeSlope of the ceiling more every second.
func assertEqualizingRamp(t *testing.T, s *keyState, clock *virtualClock) {
	t.Helper()
	assert.Equal(t, 1000, s.maxSamples())
	s.closeGate(clock.t.Add(time.Second))
	clock.t = clock.t.Add(time.Second)
	assert.Equal(t, 1000, s.maxSamples(), "no growth while the gate is closed")
	clock.t = clock.t.Add(2 * time.Second)
	assert.Equal(t, 3000, s.maxSamples(), "+equalizeSlope of the ceiling a second")
	assert.True(t, s.adapted())
}

// TestAdaptiveA429DuringThePlateauEqualizes: refused during the plateau at a
// rate that fitted the fleet at the decrease (the fleet grew: a joiner, or
// a collector that had measured little), a collector starts the equalizing
// ramp; once the ramp fills the key, its rate is where the ramp stood when
// the ingest's window filled, less equalizeMargin, and holds for the
// plateau; a 429 in that plateau lowers it by decreaseMargin only (one
// ramp a plateau).
func TestAdaptiveA429DuringThePlateauEqualizes(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	acceptSteadily(s, clock) // 2,500 samples/s
	s.throttled(clock.t)
	acceptSteadily(s, clock)
	assert.InDelta(t, equalizeBase*20_000/paceWindow.Seconds(), s.throttled(clock.t), 1, "a 429 during the plateau")
	assertEqualizingRamp(t, s, clock) // the gate reopened 2 s ago

	// 1.5 s more (3.5 s since the gate reopened): requests of 500 accepted every 100 ms;
	// the refused one left 100 ms ago.
	acceptEvery(s, clock, 15, 100*time.Millisecond)
	left := clock.t.Add(-100 * time.Millisecond)
	at := left.Add(50*time.Millisecond - paceWindow/2)
	at = at.Add(-time.Duration(500 / s.ramp(at) * float64(paceWindow)))
	want := s.ramp(at) * (1 - equalizeMargin)
	assert.InDelta(t, want/paceWindow.Seconds(), s.throttled(left), 1)
	assert.InDelta(t, 20_000*(0.05+0.05*(3.5-0.05-0.525-0.134))*(1-equalizeMargin), want, 20,
		"the ramp's rate half a window and one request's spacing before the refused request arrived (halfway to its answer)")
	rate := s.maxSamples()
	clock.t = clock.t.Add(plateau / 2)
	assert.Equal(t, rate, s.maxSamples(), "the plateau after the ramp")
	acceptSteadily(s, clock)
	s.throttled(clock.t)
	assert.Equal(t, int(float64(rate)*(1-decreaseMargin)), s.maxSamples(), "one ramp a plateau")
}

func TestAdaptiveRateWithAnOldMeasureIsUnchanged(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	acceptSteadily(s, clock)
	rate := s.throttled(clock.t)
	require.Positive(t, rate)
	limit := s.maxSamples()
	// Nothing accepted for longer than measureSpan (an outage), then a 429
	// after the episode: the adapted rate stays as it was.
	clock.t = clock.t.Add(measureSpan + sameEpisode + time.Millisecond)
	assert.Zero(t, s.throttled(clock.t))
	assert.Equal(t, limit, s.maxSamples())
}

// TestAdaptedPacingSpacesRequests: after a 429 requests leave evenly spaced
// (each its share of the window after the one before), not as a burst.
func TestAdaptedPacingSpacesRequests(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	acceptInWindow(s, clock.t, 1000)
	clock.t = clock.t.Add(10 * time.Millisecond)
	s.throttled(clock.t) // 970 samples/s
	limit := s.maxSamples()
	var at []time.Duration
	for range 4 {
		id, wait := s.reserve(190)
		at = append(at, wait)
		clock.t = clock.t.Add(wait)
		s.depart(id)
		s.answered(id)
	}
	assert.Zero(t, at[0])
	for _, w := range at[1:] {
		assert.InDelta(t, float64(paceWindow)*190/float64(limit), float64(w), float64(time.Millisecond), "spaced by the request's share of the window")
	}
}

// TestAdaptedPacingKeepsOneRequestInFlight: a request does not leave while
// another is in flight, so none can leave between the ingest's 429 and the
// exporter reading it; once the ingest has answered 429 without
// Retry-After, several may be in flight.
func TestAdaptedPacingKeepsOneRequestInFlight(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	acceptInWindow(s, clock.t, 10_000)
	clock.t = clock.t.Add(10 * time.Millisecond)
	s.throttled(clock.t)
	first, wait := s.reserve(10)
	assert.Zero(t, wait)
	s.depart(first)
	clock.t = clock.t.Add(time.Second)
	second, wait := s.reserve(10)
	assert.Equal(t, inFlightPoll, wait, "waits for the request in flight")
	s.answered(first)
	_, wait = s.rebook(second, 10)
	assert.Zero(t, wait, "leaves once the first is answered")

	s.depart(second)
	clock.t = clock.t.Add(time.Second)
	s.throttledWithoutRetryAfter()
	_, wait = s.reserve(10)
	assert.Zero(t, wait, "no Retry-After periods: leaves while the second is in flight")
}

// throttledAt1000 is a state adapted to 970 samples/s after a 429 with
// Retry-After, with the start phase drawn as phase.
func throttledAt1000(t *testing.T, phase float64) (*keyState, *virtualClock) {
	s, clock := newPacedState(t, 20_000)
	acceptInWindow(s, clock.t, 1000)
	clock.t = clock.t.Add(10 * time.Millisecond)
	s.throttled(clock.t)
	s.closeGate(clock.t) // the 429 came with a Retry-After (over already)
	s.phase = func() float64 { return phase }
	return s, clock
}

// TestAdaptedPacingStartsAtARandomPhase: the first spaced request (after a
// 429, or once the gate reopens) starts at a random point of its share, so
// that collectors refused together do not send in step.
func TestAdaptedPacingStartsAtARandomPhase(t *testing.T) {
	s, _ := throttledAt1000(t, 0.5)
	share := float64(paceWindow) * 190 / float64(s.maxSamples())
	first, wait := s.reserve(190)
	assert.InDelta(t, share/2, float64(wait), float64(time.Microsecond))
	_, wait = s.rebook(first, 190)
	assert.InDelta(t, share/2, float64(wait), float64(time.Microsecond), "drawn once per booking")
}

// TestAdaptedPacingSpreadsARequestThatWaitedForTheOneInFlight: a request
// whose time passed while it waited for the answer to the one in flight
// leaves at a random point of half its share after that answer, not at once.
func TestAdaptedPacingSpreadsARequestThatWaitedForTheOneInFlight(t *testing.T) {
	s, clock := throttledAt1000(t, 0)
	share := float64(paceWindow) * 190 / float64(s.maxSamples())
	first, _ := s.reserve(190)
	s.depart(first)
	clock.t = clock.t.Add(time.Duration(share)) // the second one's time
	second, wait := s.reserve(190)
	assert.Equal(t, inFlightPoll, wait, "waits for the answer to the first")
	clock.t = clock.t.Add(time.Second) // a slow answer
	s.answered(first)
	s.phase = func() float64 { return 0.5 }
	// The slow answer is the usual round trip now: the rate is lower (jitterMargin).
	share = float64(paceWindow) * 190 / float64(s.maxSamples())
	_, wait = s.rebook(second, 190)
	assert.InDelta(t, share/4, float64(wait), float64(time.Microsecond))
}

// TestAdaptedPacingSpacesAfterALaterBookingThatLeft: a consumer that booked
// first but was overtaken (it slept through a gate) still waits for the
// request that left before it, instead of leaving right after it.
func TestAdaptedPacingSpacesAfterALaterBookingThatLeft(t *testing.T) {
	s, clock := throttledAt1000(t, 0)
	first, _ := s.reserve(190)
	second, wait := s.rebook(0, 190)
	require.Positive(t, wait)
	clock.t = clock.t.Add(wait)
	s.depart(second) // the second booking leaves first
	s.answered(second)
	_, wait = s.rebook(first, 190)
	assert.InDelta(t, float64(paceWindow)*190/float64(s.maxSamples()), float64(wait), float64(time.Millisecond))
}

// TestAdaptedPacingSpacesASlowAnswerFromTheAnswer: after an answer later
// than the usual round trip (an ingest that stalled may have counted the
// request late), the next request is spaced from that answer less the usual
// round trip, not from when the request left: else it could arrive less than
// its share of the window after the slow one, and a fleet paced just under
// the key's limit would overflow it. After usual answers, the spacing is
// from when the request left.
func TestAdaptedPacingSpacesASlowAnswerFromTheAnswer(t *testing.T) {
	s, clock := throttledAt1000(t, 0)
	// The rate follows the round trips (jitterMargin): the share is read
	// when a request is booked.
	share := func() time.Duration { return time.Duration(float64(paceWindow) * 190 / float64(s.maxSamples())) }
	const usual = 5 * time.Millisecond
	send := func(rtt time.Duration) {
		t.Helper()
		id, wait := s.reserve(190)
		clock.t = clock.t.Add(wait)
		s.depart(id)
		clock.t = clock.t.Add(rtt)
		s.answered(id)
	}
	for range 10 {
		send(usual)
	}
	expected := share() - usual
	_, wait := s.reserve(190)
	assert.InDelta(t, float64(expected), float64(wait), float64(time.Microsecond), "after a usual answer: spaced from when the request left")
	s.cancel(s.nextID)

	send(100 * time.Millisecond)
	expected = share() - usual
	_, wait = s.reserve(190)
	assert.InDelta(t, float64(expected), float64(wait), float64(time.Microsecond),
		"after a slow answer: spaced from the answer less the usual round trip (from when it left: %s)", expected+usual-100*time.Millisecond)
}

// TestRoundTripsUsualIsTheNinetiethPercentile: of the last 32 round trips,
// without reordering them.
func TestRoundTripsUsualIsTheNinetiethPercentile(t *testing.T) {
	var r roundTrips
	assert.Zero(t, r.usual(), "no round trip yet")
	for i := 40; i >= 1; i-- { // 40 ms down to 1 ms: the last 32 are 32..1 ms
		r.add(time.Duration(i) * time.Millisecond)
	}
	assert.Equal(t, 28*time.Millisecond, r.usual())
	for range 4 {
		r.add(time.Second) // replaces the oldest: 32, 31, 30 and 29 ms
	}
	assert.Equal(t, 28*time.Millisecond, r.usual(), "4 slow answers of 32: within the slowest 10%")
	r.add(time.Second)
	assert.Equal(t, time.Second, r.usual(), "5 slow answers of 32: more than the slowest 10%")
}

func TestAdaptiveRateTakesMoreForLateAnswers(t *testing.T) {
	// Answers after 100 ms: requests that left evenly may arrive up to
	// that much closer together, so the rate is 4% lower; once the answers
	// come after 5 ms (the requests paced one at a time), 0.2%.
	s, clock := newPacedState(t, 20_000)
	for range 32 {
		s.rtt.add(100 * time.Millisecond)
	}
	acceptSteadily(s, clock)
	assert.InDelta(t, 2500*(1-decreaseMargin), s.throttled(clock.t), 1)
	rate0 := 2500 * (1 - decreaseMargin) * paceWindow.Seconds()
	assert.InDelta(t, rate0*(1-jitterMargin*0.1), s.maxSamples(), 1)
	for range 32 {
		s.rtt.add(5 * time.Millisecond)
	}
	assert.InDelta(t, rate0*(1-jitterMargin*0.005), s.maxSamples(), 1)
}

// atThePlateausEnd is a state lowered to 2,500 samples/s less
// decreaseMargin by a 429, its clock at the end of the plateau; rate0 is
// its limit per window.
func atThePlateausEnd(t *testing.T) (s *keyState, clock *virtualClock, rate0 int) {
	s, clock = newPacedState(t, 20_000)
	acceptSteadily(s, clock)
	s.throttled(clock.t)
	rate0 = s.maxSamples()
	clock.t = clock.t.Add(plateau)
	return s, clock, rate0
}

// backUp books n requests of 500 samples that wait to leave.
func backUp(s *keyState, n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i], _ = s.reserve(500)
	}
	return ids
}

// limitAfter advances the clock by d in steps of 50 ms, reading the limit
// at each step as waiting requests do, and returns the last one.
func limitAfter(s *keyState, clock *virtualClock, d time.Duration) int {
	var limit int
	for end := clock.t.Add(d); clock.t.Before(end); {
		clock.t = clock.t.Add(50 * time.Millisecond)
		limit = s.maxSamples()
	}
	return limit
}

func TestAdaptiveReclaimsWhenBackedUpPastThePlateau(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	acceptSteadily(s, clock) // 2,500 samples/s
	s.throttled(clock.t)
	rate0 := s.maxSamples()
	clock.t = clock.t.Add(plateau)

	// Every consumer holds a request: for reclaimAfter the rate follows the
	// probe's slow curve, then it doubles every reclaimDoubling.
	backUp(s, 10)
	slow := limitAfter(s, clock, reclaimAfter-100*time.Millisecond)
	assert.Less(t, slow, rate0*101/100, "reclaimed before reclaimAfter")
	fast := limitAfter(s, clock, 100*time.Millisecond+2*reclaimDoubling)
	assert.Greater(t, fast, 3*rate0, "backed up for reclaimAfter and two doublings: the rate is not reclaimed")
	assert.Less(t, fast, 5*rate0)
	assert.Equal(t, s.ceiling, limitAfter(s, clock, 2*time.Second), "reclaiming reaches the ceiling")

	// Back at the ceiling, the next 429 is a first decrease: to what the
	// ingest accepted, not to half the ceiling.
	acceptEvery(s, clock, 40, 50*time.Millisecond) // 10,000 samples/s
	assert.InDelta(t, 10_000*(1-decreaseMargin), s.throttled(clock.t), 1)
}

func TestAdaptiveDoesNotReclaimWhenNotBackedUp(t *testing.T) {
	s, clock, rate0 := atThePlateausEnd(t)

	// Ten requests waited once; three fewer now (the backlog drains): the
	// rate follows the probe's curve only.
	ids := backUp(s, 10)
	s.maxSamples()
	for _, id := range ids[:3] {
		s.cancel(id)
	}
	assert.Less(t, limitAfter(s, clock, reclaimAfter+2*time.Second), rate0*101/100)
}

func TestAdaptiveDoesNotReclaimWhileTheGateIsClosed(t *testing.T) {
	s, clock, rate0 := atThePlateausEnd(t)
	backUp(s, 10)
	limitAfter(s, clock, reclaimAfter)
	s.closeGate(clock.t.Add(2 * time.Second))
	assert.Less(t, limitAfter(s, clock, 2*time.Second), rate0*3/2, "the rate grew while nothing could be sent")
}

func TestAdaptiveA429WhileReclaimingHalvesTheReclaimedRate(t *testing.T) {
	s, clock, _ := atThePlateausEnd(t)
	backUp(s, 10)
	reclaimed := limitAfter(s, clock, reclaimAfter+2*reclaimDoubling)
	require.Less(t, reclaimed, s.ceiling)
	// The ingest accepted all it was sent while the rate climbed.
	for range 40 {
		s.acceptedAt(clock.t.Add(-time.Second), 500)
	}
	s.throttled(clock.t)
	assert.InDelta(t, float64(reclaimed)/2*(1-decreaseMargin), float64(s.maxSamples()), 2)
}

// TestAdaptiveTheEqualizingRampEndsAtLeastAtWhatWasAccepted: a 429 whose
// request left 700 ms into the ramp (a loaded machine's timers are late:
// the ramp's estimate points before its start) sets the rate to what the
// ingest accepted since the ramp started, per window, less equalizeMargin;
// not to the ramp's first rate.
func TestAdaptiveTheEqualizingRampEndsAtLeastAtWhatWasAccepted(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	acceptSteadily(s, clock)
	s.throttled(clock.t)
	acceptSteadily(s, clock)
	s.throttled(clock.t) // the ramp
	s.closeGate(clock.t.Add(time.Second))
	clock.t = clock.t.Add(time.Second)
	acceptEvery(s, clock, 7, 100*time.Millisecond) // 3,500 samples in 700 ms
	left := clock.t
	clock.t = left.Add(100 * time.Millisecond)
	assert.InDelta(t, 3500*(1-equalizeMargin)/paceWindow.Seconds(), s.throttled(left), 1)
}

// TestAdaptiveTheRampCountsFromItsOwnGate: the exporter's transport closes
// the Retry-After gate as a 429 comes, before the exporter reads it. The
// ramp counts from the gate of the episode that started it, not from the
// gate the ramp's last 429 closed: that 429 ends the ramp where it stood,
// as when the gate closes after (TestAdaptiveA429DuringThePlateauEqualizes).
func TestAdaptiveTheRampCountsFromItsOwnGate(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	acceptSteadily(s, clock)
	s.throttled(clock.t)
	acceptSteadily(s, clock)
	s.closeGate(clock.t.Add(time.Second)) // the transport, first
	s.throttled(clock.t)                  // the ramp
	clock.t = clock.t.Add(time.Second)
	assert.Equal(t, 1000, s.maxSamples(), "no growth while the gate is closed")
	clock.t = clock.t.Add(2 * time.Second)
	assert.Equal(t, 3000, s.maxSamples())
	acceptEvery(s, clock, 15, 100*time.Millisecond)
	left := clock.t.Add(-100 * time.Millisecond)
	s.closeGate(clock.t.Add(time.Second)) // the ramp's end: the transport first
	at := left.Add(50*time.Millisecond - paceWindow/2)
	at = at.Add(-time.Duration(500 / s.ramp(at) * float64(paceWindow)))
	assert.InDelta(t, s.ramp(at)*(1-equalizeMargin)/paceWindow.Seconds(), s.throttled(left), 1)
	assert.Greater(t, s.maxSamples(), 3000, "ended where the ramp stood, not at its first rate")
}

// TestAdaptedPacingRespacesAWaitingRequestWhileRamping: while the rate
// grows (joining or equalizing), a request waiting for its slot is spaced
// again at the current rate; a slot kept from a lower rate held a
// collector's queue at the rate its requests were booked at, seconds
// behind its ramp.
func TestAdaptedPacingRespacesAWaitingRequestWhileRamping(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	s.throttled(clock.t) // joins at 1,000 samples a window
	first, wait := s.reserve(500)
	require.Zero(t, wait)
	s.depart(first)
	s.answered(first)
	second, wait := s.reserve(500)
	assert.InDelta(t, float64(paceWindow)/2, float64(wait), float64(time.Millisecond), "half a window at 1,000")
	clock.t = clock.t.Add(200 * time.Millisecond)
	_, wait = s.rebook(second, 500)
	// At 200 ms the rate is 1,000 * 2^0.2: the second leaves its share at
	// that rate after the first, earlier than booked.
	share := time.Duration(float64(paceWindow) * 500 / float64(s.maxSamples()))
	assert.InDelta(t, float64(share-200*time.Millisecond), float64(wait), float64(time.Millisecond))
}
