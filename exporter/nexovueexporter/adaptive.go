// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"math"
	"time"
)

// Adaptive pacing (see the README's "Pacing in a fleet"). The ingest's limit
// is per key, and a fleet of collectors shares a key without knowing of each
// other. Each keyState starts at the configured limit (the ceiling). The
// first 429 lowers its rate to what the ingest accepted from it just before
// the refusal, less decreaseMargin (later ones lower the rate itself by
// decreaseMargin): the rates of a fleet that was refused add up
// to what the ingest accepted from all of them, the key's limit, so each
// collector lands on its share, and the fleet together just under the limit.
// The rate then holds for plateau (no growth: a fleet that found the limit
// stays under it, without a 429 episode every few seconds), and then probes
// upwards towards the ceiling along a cubic curve (as TCP CUBIC's window
// does): slowly near the rate that was refused, faster the longer no 429
// comes. While the rate is below the ceiling, requests leave evenly spaced,
// one in flight at a time.
//
// That measure is only fair when the fleet started sending together. A
// collector that started late (a fleet coming back one by one) gets little
// or nothing into the window before the key is full, and the early ones
// measure more than their share; nothing any one of them sees during the
// plateau tells it so. Two rules even such a fleet out, at the cost of two
// more 429 episodes: a collector refused before it has a measure (fewer
// than minMeasured accepted requests) joins, growing from joinFraction of
// the ceiling, doubling every joinDoubling, until it is refused again; a
// 429 during the plateau (the fleet grew: the rate fitted it at the
// decrease) has every collector refused in that episode, the joiner too,
// start over from the same rate, equalizeBase of the ceiling, and grow by
// the same amount, equalizeSlope of the ceiling a second, from when its
// gate reopens. They grow alike, so when the key is full again their rates
// are alike: the 429 that ends the ramp sets each one's rate to where the
// ramp stood when the ingest's window filled, less equalizeMargin, and
// starts the plateau.
const (
	// decreaseMargin is taken off the accepted rate on a decrease, so that
	// a fleet that all decreased together is below the key's limit, not on it.
	decreaseMargin = 0.03
	// sameEpisode: 429s within this time of a decrease answer requests that
	// were already on their way (or refused in the same window) and do not
	// lower the rate again. One ingest window, with pacing's margin.
	sameEpisode = paceWindow
	// plateau is how long the rate holds after a decrease before it grows.
	plateau = 60 * time.Second
	// growthPeriod and growthFraction shape the probe after the plateau:
	// r(t) = r0 + growthFraction * ceiling * ((t-plateau)/growthPeriod)^3.
	// Every collector of a fleet gains the same amount (so that their shares
	// converge, as with TCP's additive increase), the fleet together +5% of
	// the ceiling per collector 25 s into the probe for eight collectors at
	// the limit. A lone collector at 10% of the ceiling is back at the
	// ceiling 2 min after the plateau.
	growthPeriod   = 60 * time.Second
	growthFraction = 0.0864
	// remeasureBelow: once adapted, a 429 lowers the current rate by
	// decreaseMargin, unless the ingest accepted less than this fraction
	// of it (the fleet grew): then it lowers it to what was accepted.
	remeasureBelow = 0.5
	// minRateFraction of the ceiling is the lowest rate a decrease sets.
	minRateFraction = 0.01
	// measureSpan is how far back the accepted rate is measured. When
	// nothing was accepted within it before the refused request left,
	// the rate is not changed (see throttled).
	measureSpan = 5 * time.Second
	// keepAccepted is how long accepted requests are remembered.
	keepAccepted = measureSpan + paceWindow
	// jitterMargin is taken off the adapted rate for each second of the
	// usual round trip of the last requests (its 90th percentile), at most
	// maxJitterMargin: requests that left evenly arrive unevenly, up to a
	// round trip apart, and a fleet at 97% of the limit overflowed the
	// ingest's window at 100 ms (a second 429 episode in every simulated
	// draw; 4% at 100 ms: none).
	jitterMargin    = 0.4
	maxJitterMargin = 0.2
	// reclaimAfter and reclaimDoubling: past the plateau, a collector
	// backed up for reclaimAfter doubles its rate every reclaimDoubling.
	reclaimAfter    = 3 * time.Second
	reclaimDoubling = 250 * time.Millisecond
	// minMeasured is the fewest accepted requests a first decrease takes
	// as a measure of this collector's share: one or two requests (it
	// started sending a moment before the key was full) say little of it,
	// and such a collector joins instead (see throttled).
	minMeasured = 3
	// joinFraction and joinDoubling: a joiner's rate starts at
	// joinFraction of the ceiling and doubles every joinDoubling that the
	// Retry-After gate is open (back at the ceiling in 4.3 s).
	joinFraction = 0.05
	joinDoubling = time.Second
	// equalizeBase and equalizeSlope: the equalizing ramp's rate is
	// equalizeBase of the ceiling when the gate reopens, plus
	// equalizeSlope of the ceiling for every second since (eight
	// collectors on one key fill it about 2.5 s after the gate reopens).
	equalizeBase  = 0.05
	equalizeSlope = 0.05
	// equalizeMargin is taken off the ramp's rate when the ramp ends: the
	// rate where the ramp stood as the ingest's window filled is estimated
	// from the ramp, not measured, and a fleet set with decreaseMargin
	// alone met another episode in most simulated draws.
	equalizeMargin = 3 * decreaseMargin
)

// The modes of adaptive pacing after a 429 (see the comment above).
const (
	modeSteady     = iota // a plateau, then the probe and the reclaim
	modeJoining           // refused without a measure: doubling
	modeEqualizing        // the equalizing ramp
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
	// closed holds the recent periods the Retry-After gate was closed, oldest first.
	closed []gateClosure
	// reclaimed is the rate reached by reclaiming (samples per paceWindow;
	// 0 until the plateau ends), last updated at reclaimedAt.
	reclaimed   float64
	reclaimedAt time.Time
	// backedUpSince is when this collector was last found backed up, with
	// no break since (zero: it is not); mostHeld is the most samples its
	// requests ever held (see backedUp).
	backedUpSince time.Time
	mostHeld      int
	// mode is modeSteady, modeJoining or modeEqualizing; equalizedAt is
	// when the last equalizing ramp ended (zero: none).
	mode        int
	equalizedAt time.Time
	// rampFrom is when the gate reopened after the decrease that started
	// joining or equalizing: where the growth counts from (see closeGate).
	rampFrom time.Time
}

// gateClosure is a period the Retry-After gate was closed.
type gateClosure struct {
	from, until time.Time
}

// limitAt is the samples allowed in one paceWindow at now: the ceiling, or
// the adapted rate (held for plateau after a decrease, then climbing back).
// Caller holds s.mu.
func (s *keyState) limitAt(now time.Time) int {
	if s.ceiling <= 0 || s.ad.decreasedAt.IsZero() {
		return s.ceiling
	}
	r := s.ad.rate0
	switch since := now.Sub(s.ad.decreasedAt); {
	case s.ad.mode == modeJoining:
		r *= math.Exp2(s.openSince(now).Seconds() / joinDoubling.Seconds())
	case s.ad.mode == modeEqualizing:
		r = s.ramp(now)
	case since > plateau:
		t := (since - plateau).Seconds() / growthPeriod.Seconds()
		r += growthFraction * float64(s.ceiling) * t * t * t
		r = s.reclaim(now, r)
	}
	if r >= float64(s.ceiling) {
		// Back at the ceiling: the next 429 is a first decrease again.
		s.ad.decreasedAt, s.ad.mode = time.Time{}, modeSteady
		s.ad.reclaimed, s.ad.reclaimedAt, s.ad.backedUpSince = 0, time.Time{}, time.Time{}
		return s.ceiling
	}
	// Less for late answers: requests that leave evenly arrive up to a
	// round trip apart (see jitterMargin). The usual round trip is that of
	// the last requests: at a decrease, those of the burst that found the
	// limit (slow, several in flight); soon, those paced one at a time.
	r *= 1 - math.Min(jitterMargin*s.rtt.usual().Seconds(), maxJitterMargin)
	return max(1, int(r))
}

// openSince is how long the Retry-After gate has been open at now since it
// reopened after the decrease that started joining or equalizing (0 before).
// Caller holds s.mu.
func (s *keyState) openSince(now time.Time) time.Duration {
	return max(0, now.Sub(s.ad.rampFrom))
}

// ramp is the equalizing ramp's rate at t (samples per paceWindow): rate0
// (equalizeBase of the ceiling) plus equalizeSlope of the ceiling for every
// second since the gate reopened. Every collector that started the ramp in
// one episode has the same rate at the same moment, give or take the time
// between their refusals. Caller holds s.mu.
func (s *keyState) ramp(t time.Time) float64 {
	return s.ad.rate0 + equalizeSlope*float64(s.ceiling)*s.openSince(t).Seconds()
}

// ramping reports whether the rate grows while requests wait for their
// slots (joining or equalizing): then a waiting request's slot is spaced
// again at the current rate (see rebook). Caller holds s.mu.
func (s *keyState) ramping() bool {
	return s.ad.mode != modeSteady
}

// reclaim is the rate past the plateau: the probe's cubic curve r, or more
// while this collector is backed up (see backedUp) for reclaimAfter or
// longer: then the rate doubles every reclaimDoubling of that time the
// Retry-After gate is open. A fleet that drained with this collector at
// its share is done by now, and a collector whose first window was short
// (one request of about five: the lowest share of a burst) takes the room
// that the others left. Caller holds s.mu.
func (s *keyState) reclaim(now time.Time, r float64) float64 {
	a := &s.ad
	a.reclaimed = math.Max(a.reclaimed, r)
	switch {
	case !s.backedUp():
		a.backedUpSince = time.Time{}
	case a.backedUpSince.IsZero():
		a.backedUpSince = now
	case now.Sub(a.backedUpSince) >= reclaimAfter && !a.reclaimedAt.IsZero() && !now.Before(s.notBefore):
		a.reclaimed *= math.Exp2(now.Sub(maxTime(a.reclaimedAt, s.notBefore)).Seconds() / reclaimDoubling.Seconds())
	}
	a.reclaimedAt = now
	return a.reclaimed
}

// backedUp reports whether the requests waiting to leave or in flight hold,
// give or take one request, as many samples as they ever did (see held):
// every queue consumer holds one, and the queue has more. Near the end of a
// backlog fewer consumers are busy. Caller holds s.mu.
func (s *keyState) backedUp() bool {
	held, largest := s.held()
	return held > 0 && held+largest >= s.ad.mostHeld
}

// held is the samples of the requests waiting to leave or in flight, and
// the largest of them; it keeps the most ever held in mostHeld (rebook
// calls it for every request). Caller holds s.mu.
func (s *keyState) held() (samples, largest int) {
	for _, b := range s.sent {
		if b.left.IsZero() || b.inFlight {
			samples += b.samples
			largest = max(largest, b.samples)
		}
	}
	s.ad.mostHeld = max(s.ad.mostHeld, samples)
	return samples, largest
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
// 429 for a request that left before the last decrease, or that comes
// within sameEpisode of it, belongs to the episode that decrease answered
// and is ignored. It returns the new rate in samples per second, or 0 when
// nothing changed.
func (s *keyState) throttled(left time.Time) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ceiling <= 0 {
		return 0
	}
	now := s.now()
	if d := s.ad.decreasedAt; !d.IsZero() && (left.Before(d) || now.Sub(d) < sameEpisode) {
		return 0
	}
	current := float64(s.limitAt(now))
	perSecond, ok := s.acceptedRate(left)
	if !s.adapted() && (!ok || s.acceptedSince(left.Add(-measureSpan), left) < minMeasured) {
		// No measure of its share (it started a moment before the key was
		// full, or a gateway replica replaced one): it joins, from
		// joinFraction of the ceiling, doubling while the gate is open (a
		// rate held low for the plateau kept a replacement replica at a
		// few requests a minute for minutes). Keeping the ceiling instead
		// sent its backlog at once every time the gate reopened: an
		// episode every 2 to 3 s. Its next 429 starts the equalizing ramp.
		return s.decrease(now, math.Max(1, joinFraction*float64(s.ceiling)), modeJoining)
	}
	if s.ad.mode == modeJoining {
		// The joiner found the key full (with a measure or not: at its
		// first rates it may have had nothing accepted yet): the fleet it
		// joined starts the equalizing ramp in this episode, and so does it.
		return s.decrease(now, math.Max(1, equalizeBase*float64(s.ceiling)), modeEqualizing)
	}
	if !ok {
		// Adapted, and nothing accepted for measureSpan (an outage): the
		// rate is left as it is; the Retry-After gate holds the process back.
		return 0
	}
	rate := perSecond * paceWindow.Seconds()
	switch {
	case s.ad.mode == modeEqualizing:
		// The ramp filled the key: where it stood, on average, over the
		// ingest's window that filled (half a window before the refused
		// request arrived, halfway between leaving and its answer; less
		// one request's spacing: requests follow the ramp one spacing
		// late), or what the ingest accepted since the ramp started if
		// more (per window, as the first decrease's measure: a loaded
		// machine's late timers put that point near the ramp's start),
		// less equalizeMargin. Then the plateau.
		at := left.Add(now.Sub(left)/2 - paceWindow/2)
		if n := len(s.ad.accepted); n > 0 {
			at = at.Add(-time.Duration(float64(s.ad.accepted[n-1].samples) / s.ramp(at) * float64(paceWindow)))
		}
		start := s.ad.rampFrom
		accepted := float64(s.acceptedSamples(start, left)) / max(1, left.Sub(start).Seconds()/paceWindow.Seconds())
		s.ad.equalizedAt = now
		return s.decrease(now, math.Max(1, math.Max(s.ramp(at), accepted)*(1-equalizeMargin)), modeSteady)
	case now.Sub(s.ad.decreasedAt) < plateau && rate > current*remeasureBelow &&
		(s.ad.equalizedAt.IsZero() || now.Sub(s.ad.equalizedAt) > plateau):
		// Refused during the plateau, at a rate that fitted the fleet at
		// the decrease: the fleet grew (a collector joined, or one that
		// had measured little). Every collector refused in this episode
		// starts the equalizing ramp. Once a plateau: after a ramp, a 429
		// lowers the rate by decreaseMargin as below.
		return s.decrease(now, math.Max(1, equalizeBase*float64(s.ceiling)), modeEqualizing)
	}
	reclaiming := s.ad.reclaimed > s.ad.rate0
	s.ad.reclaimed, s.ad.reclaimedAt = 0, time.Time{}
	if reclaiming {
		// Reclaiming found the key's limit: back to the last rate the
		// ingest accepted before the last doubling, or what it accepted.
		rate = math.Min(rate, current/2)
	}
	if s.adapted() && !reclaiming && rate > current*remeasureBelow {
		// Already adapted: the rate was right for the fleet a moment
		// ago, and the measure of a paced collector is noisy (a slow
		// ingest, a queue draining): lower the rate itself.
		rate = current
	}
	// Every episode lowers the rate by decreaseMargin at least (limitAt
	// takes jitterMargin off it).
	rate = math.Min(current, rate) * (1 - decreaseMargin)
	rate = math.Max(rate, math.Max(1, minRateFraction*float64(s.ceiling)))
	return s.decrease(now, rate, modeSteady)
}

// decrease sets the rate to rate (samples per paceWindow) in mode at now and
// returns it in samples per second. Caller holds s.mu.
func (s *keyState) decrease(now time.Time, rate float64, mode int) float64 {
	s.ad.rate0, s.ad.decreasedAt, s.ad.mode = rate, now, mode
	s.ad.reclaimed, s.ad.reclaimedAt = 0, time.Time{}
	// The gate this 429 closes may be closed already (the transport closes
	// it as the answer comes) or next (closeGate moves rampFrom then).
	s.ad.rampFrom = maxTime(now, s.notBefore)
	return rate / paceWindow.Seconds()
}

// acceptedSince is how many accepted requests left in [from, to).
// Caller holds s.mu.
func (s *keyState) acceptedSince(from, to time.Time) int {
	n := 0
	for _, a := range s.ad.accepted {
		if !a.left.Before(from) && a.left.Before(to) {
			n++
		}
	}
	return n
}

// acceptedSamples is the samples of the accepted requests that left in
// [from, to). Caller holds s.mu.
func (s *keyState) acceptedSamples(from, to time.Time) int {
	n := 0
	for _, a := range s.ad.accepted {
		if !a.left.Before(from) && a.left.Before(to) {
			n += a.samples
		}
	}
	return n
}

// acceptedRate is the rate, in samples per second, at which the ingest
// accepted this state's requests up to the last one that left before left:
// over measureSpan, or since the first accepted request still remembered,
// not counting the time the Retry-After gate was closed (nothing could be
// sent then). Over less than one ingest window of sending (a fleet that
// started together and was refused within its first second), it is what
// was accepted in that window, per second. ok is false when nothing was
// accepted within measureSpan. Caller holds s.mu.
func (s *keyState) acceptedRate(left time.Time) (perSecond float64, ok bool) {
	var first, last time.Time
	for _, a := range s.ad.accepted {
		if !a.left.Before(left) {
			continue
		}
		if first.IsZero() || a.left.Before(first) {
			first = a.left
		}
		if a.left.After(last) {
			last = a.left
		}
	}
	if last.IsZero() || left.Sub(last) > measureSpan {
		return 0, false
	}
	from := maxTime(first, last.Add(-measureSpan))
	sending := last.Sub(from) - s.ad.closedWithin(from, last)
	window := sending < time.Second
	n := 0
	for _, a := range s.ad.accepted {
		// (from, last]: n requests, one sending interval each; within one
		// window, [from, last]: all that window accepted.
		if !a.left.After(last) && (a.left.After(from) || window && a.left.Equal(from)) {
			n += a.samples
		}
	}
	if window {
		return float64(n), true
	}
	return float64(n) / sending.Seconds(), true
}

// gateClosed records that the Retry-After gate is closed from from to until.
// Caller holds s.mu.
func (a *adaptive) gateClosed(from, until time.Time) {
	cut := from.Add(-keepAccepted)
	i := 0
	for i < len(a.closed) && a.closed[i].until.Before(cut) {
		i++
	}
	a.closed = a.closed[i:]
	if n := len(a.closed); n > 0 && !from.After(a.closed[n-1].until) {
		a.closed[n-1].until = maxTime(a.closed[n-1].until, until)
		return
	}
	a.closed = append(a.closed, gateClosure{from: from, until: until})
}

// closedWithin is how long the gate was closed between from and to.
func (a *adaptive) closedWithin(from, to time.Time) time.Duration {
	var d time.Duration
	for _, c := range a.closed {
		if lo, hi := maxTime(c.from, from), minTime(c.until, to); hi.After(lo) {
			d += hi.Sub(lo)
		}
	}
	return d
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
