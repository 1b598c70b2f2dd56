// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAdaptiveRateFollowsWhatTheIngestAccepted(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	t0 := clock.t
	// 4 requests of 500 accepted in the last window, one older one.
	s.acceptedAt(t0.Add(-3*time.Second), 5000)
	for i := range 4 {
		s.acceptedAt(t0.Add(time.Duration(i)*200*time.Millisecond), 500)
	}
	clock.t = t0.Add(time.Second)
	refusedLeft := t0.Add(900 * time.Millisecond)
	perSecond := s.throttled(refusedLeft)
	assert.InDelta(t, 2000*(1-decreaseMargin)/paceWindow.Seconds(), perSecond, 1)
	assert.Equal(t, int(2000*(1-decreaseMargin)), s.maxSamples())

	// A 429 for a request that left before the decrease: the same episode.
	assert.Zero(t, s.throttled(refusedLeft))
	assert.Equal(t, 1900, s.maxSamples())

	// Without 429s it climbs back along the cubic curve, to the ceiling.
	clock.t = clock.t.Add(growthPeriod)
	assert.Equal(t, 1900+1728, s.maxSamples(), "+growthFraction of the ceiling after growthPeriod")
	clock.t = clock.t.Add(2 * growthPeriod)
	assert.Equal(t, 20_000, s.maxSamples())
	assert.False(t, s.adapted(), "back at the ceiling: bursts again")
}

func TestAdaptiveRateWithoutAMeasureHalves(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	s.throttled(clock.t)
	assert.Equal(t, 10_000, s.maxSamples())
	clock.t = clock.t.Add(time.Millisecond)
	s.throttled(clock.t)
	assert.Equal(t, 5000, s.maxSamples())
	for range 20 {
		clock.t = clock.t.Add(time.Millisecond)
		s.throttled(clock.t)
	}
	assert.Equal(t, 200, s.maxSamples(), "never below 1% of the ceiling")
}

// TestAdaptedPacingSpacesRequests: after a 429 requests leave evenly spaced
// (each its share of the window after the one before), not as a burst.
func TestAdaptedPacingSpacesRequests(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	s.acceptedAt(clock.t, 1000)
	clock.t = clock.t.Add(10 * time.Millisecond)
	s.throttled(clock.t) // 950 per window
	var at []time.Duration
	for range 4 {
		id, wait := s.reserve(190)
		at = append(at, wait)
		clock.t = clock.t.Add(wait)
		s.depart(id)
	}
	assert.Zero(t, at[0])
	for _, w := range at[1:] {
		assert.InDelta(t, float64(paceWindow)*190/950, float64(w), float64(time.Millisecond), "spaced by the request's share of the window")
	}
}

// TestAdaptedPacingKeepsOneRequestInFlight: after a 429 a request does not
// leave while another is in flight, so none can leave between the ingest's
// 429 and the exporter reading it.
func TestAdaptedPacingKeepsOneRequestInFlight(t *testing.T) {
	s, clock := newPacedState(t, 20_000)
	s.acceptedAt(clock.t, 10_000)
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
}
