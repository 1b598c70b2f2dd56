// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"math"
	"time"
)

// Adaptive pacing (see the README's "Pacing in a fleet"). The ingest's limit
// is per key, and a fleet of collectors shares a key without knowing of each
// other. Each keyState starts at the configured limit (the ceiling). A 429
// lowers its rate to what the ingest accepted from it in the last window
// before the refusal, less decreaseMargin; without 429s the rate climbs back
// to the ceiling along a cubic curve (as TCP CUBIC's window does): slowly
// near the rate that was refused, faster the longer no 429 comes, by the
// same amount for every collector. N collectors on one key each settle near
// their share of the key's limit. While the rate is below the ceiling,
// requests leave evenly spaced, one in flight at a time.
const (
	// decreaseMargin is taken off the accepted rate on a decrease, so that
	// a fleet that all decreased together is below the key's limit, not on it.
	decreaseMargin = 0.05
	// growthPeriod and growthFraction shape the climb after a decrease,
	// without another 429: r(t) = r0 + growthFraction * ceiling *
	// (t/growthPeriod)^3. Every collector of a fleet gains the same amount
	// (so that their shares converge, as with TCP's additive increase), the
	// fleet together +5% of the ceiling per collector after 25 s: one 429
	// episode about every half minute for eight collectors at the limit. A
	// lone collector at 10% of the ceiling is back at the ceiling after 2 min.
	growthPeriod   = 60 * time.Second
	growthFraction = 0.0864
	// minRateFraction of the ceiling is the lowest rate a decrease sets.
	minRateFraction = 0.01
	// staleMeasure: when nothing was accepted within this time before the
	// refused request left, there is no measure of the accepted rate and the
	// rate is halved instead.
	staleMeasure = 5 * time.Second
	// keepAccepted is how long accepted requests are remembered.
	keepAccepted = staleMeasure + paceWindow
)

// acceptedRequest is a request the ingest accepted, by the time it left.
type acceptedRequest struct {
	left    time.Time
	samples int
}

// adaptive is the adaptive part of a keyState, guarded by keyState.mu.
type adaptive struct {
	// decreasedAt is the last decrease; zero while the rate is the ceiling.
	decreasedAt time.Time
	// rate0 is the rate the last decrease set (samples per paceWindow).
	rate0    float64
	accepted []acceptedRequest
}

// limitAt is the samples allowed in one paceWindow at now: the ceiling, or
// the adapted rate while it climbs back. Caller holds s.mu.
func (s *keyState) limitAt(now time.Time) int {
	if s.ceiling <= 0 || s.ad.decreasedAt.IsZero() {
		return s.ceiling
	}
	t := now.Sub(s.ad.decreasedAt).Seconds() / growthPeriod.Seconds()
	r := s.ad.rate0 + growthFraction*float64(s.ceiling)*t*t*t
	if r >= float64(s.ceiling) {
		s.ad.decreasedAt = time.Time{} // back at the ceiling
		return s.ceiling
	}
	return max(1, int(r))
}

// adapted reports whether the rate is below the ceiling after a 429: then
// requests leave evenly spaced instead of in bursts. Caller holds s.mu.
func (s *keyState) adapted() bool {
	return !s.ad.decreasedAt.IsZero()
}

// acceptedAt records a request of n samples that left at left and was accepted.
func (s *keyState) acceptedAt(left time.Time, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ceiling <= 0 {
		return
	}
	cut := s.now().Add(-keepAccepted)
	i := 0
	for i < len(s.ad.accepted) && s.ad.accepted[i].left.Before(cut) {
		i++
	}
	s.ad.accepted = append(s.ad.accepted[i:], acceptedRequest{left: left, samples: n})
}

// throttled lowers the rate after a 429 for a request that left at left. A
// 429 for a request that left before the last decrease says nothing new
// (the rate was already lowered for that episode) and is ignored. It returns
// the new rate in samples per second, or 0 when nothing changed.
func (s *keyState) throttled(left time.Time) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ceiling <= 0 || left.Before(s.ad.decreasedAt) {
		return 0
	}
	now := s.now()
	current := float64(s.limitAt(now))
	// What the ingest accepted from this state in the window that ends with
	// the last accepted request that left before the refused one.
	var last time.Time
	for _, a := range s.ad.accepted {
		if a.left.Before(left) && a.left.After(last) {
			last = a.left
		}
	}
	var rate float64
	if last.IsZero() || left.Sub(last) > staleMeasure {
		rate = current / 2
	} else {
		acc := 0
		for _, a := range s.ad.accepted {
			if !a.left.After(last) && a.left.After(last.Add(-paceWindow)) {
				acc += a.samples
			}
		}
		rate = float64(acc) * (1 - decreaseMargin)
	}
	rate = math.Min(current, math.Max(rate, math.Max(1, minRateFraction*float64(s.ceiling))))
	s.ad.rate0 = rate
	s.ad.decreasedAt = now
	return rate / paceWindow.Seconds()
}
