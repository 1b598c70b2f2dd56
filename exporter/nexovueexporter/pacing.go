// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// paceWindow is the ingest's one-second window plus a margin, so that
// requests sent just over a second apart do not arrive just under it.
const paceWindow = time.Second + 50*time.Millisecond

// booking is one request's place in the pacing window. A booking is made
// for a time (at) and leaves the window paceWindow after it. Once its request
// has left (inFlight), the ingest may count it at any moment until the answer
// comes back, so it stays in the window until paceWindow after the answer:
// answered moves at to the answer's time.
type booking struct {
	id       uint64
	at       time.Time
	samples  int
	inFlight bool
	// left is when the request left (zero until then), answered when its
	// answer came (zero until then).
	left, answered time.Time
	// slot is the earliest time the booking may leave while the rate is
	// adapted; waited: it has waited for a request in flight (see rebook).
	slot   time.Time
	waited bool
	// drawn: slot was drawn at random (see rebook), not spaced from the
	// booking before it.
	drawn bool
}

// spread is a random part of the share of the window a request of n
// samples takes at limit samples per window.
func (s *keyState) spread(n, limit int) time.Duration {
	return time.Duration(s.phase() * float64(paceWindow) * float64(n) / float64(limit))
}

// start is when the booking counts from, as seen at now: an in-flight
// request may still be counted by the ingest now.
func (b booking) start(now time.Time) time.Time {
	if b.inFlight && now.After(b.at) {
		return now
	}
	return b.at
}

// maxSamples is the most samples one request may carry to fit in the
// pacing window at the current rate (0: pacing is off).
func (s *keyState) maxSamples() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limitAt(s.now())
}

// reserve books a request of n samples and returns its id and how long it
// must wait before it leaves: the earliest time, no earlier than the
// requests booked before it, at which the samples still in the window plus
// n stay within the limit. A request larger than the limit waits until the
// window is empty and then goes alone: nothing deadlocks. The time is a
// lower bound while requests are in flight: admit books again after waiting.
func (s *keyState) reserve(n int) (uint64, time.Duration) {
	return s.rebook(0, n)
}

// rebook is reserve for booking id (0: a new booking). A booking made again
// keeps its place: only the bookings made before it are considered, and it
// keeps its id.
func (s *keyState) rebook(id uint64, n int) (uint64, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ceiling <= 0 || n <= 0 {
		return 0, 0
	}
	now := s.now()
	s.held() // the most ever held, for backedUp
	limit := s.limitAt(now)
	spaced := s.adapted()
	// Forget what left the window; keep what is in flight.
	kept := s.sent[:0]
	for _, b := range s.sent {
		if b.inFlight || b.at.Add(paceWindow).After(now) {
			kept = append(kept, b)
		}
	}
	s.sent = kept

	at := now
	var slot time.Time // the grid's next slot, while spaced
	drawn := false
	var usual time.Duration
	if spaced {
		usual = s.rtt.usual()
	}
	inWindow, counted := 0, 0
	// exits: when each booking leaves the window (while not spaced).
	exits := s.exits[:0]
	busy := false
	var own *booking // the booking made again, if any
	for i, b := range s.sent {
		if b.id == id {
			own = &s.sent[i]
		}
		// A booking made again considers those made before it, and every
		// request that has left (whichever booking was made first).
		if id != 0 && b.id >= id && (b.id == id || b.left.IsZero()) {
			continue
		}
		inWindow += b.samples
		start := b.start(now)
		if start.After(at) {
			at = start // keep the booking order
		}
		if b.inFlight && !s.noRetryAfter {
			// One request is in flight at a time, unless the ingest has
			// shown that it answers 429 without Retry-After: none can
			// leave between the ingest's 429 and the exporter reading it
			// (it would arrive inside the Retry-After period).
			busy = true
		}
		if spaced {
			// After a 429 requests leave evenly, each one its samples'
			// share of the window after the one before it.
			from := b.at
			if !b.left.IsZero() {
				from = b.left
			}
			if !b.answered.IsZero() {
				// An answer later than usual (a slow path, an ingest
				// that stalled) may come from a request the ingest
				// counted late: spaced from its departure, the next
				// one could arrive within less than its share of the
				// window after it.
				from = maxTime(from, b.answered.Add(-usual))
			}
			slot = maxTime(slot, from.Add(time.Duration(float64(paceWindow)*float64(b.samples)/float64(limit))))
		}
		if !spaced {
			exits = append(exits, booking{at: start.Add(paceWindow), samples: b.samples})
		}
		counted++
	}
	s.exits = exits // kept for the next call: rebook runs for every request
	// Let the bookings that leave the window first go until n fits.
	slices.SortFunc(exits, func(a, b booking) int { return a.at.Compare(b.at) })
	// While spaced, the spacing alone paces (a window check would round
	// each window down to whole requests).
	for j := 0; !spaced && j < len(exits) && inWindow+n > limit; j++ {
		if exits[j].at.After(at) {
			at = exits[j].at
		}
		inWindow -= exits[j].samples
	}
	if spaced {
		switch {
		case own != nil && own.slot.After(slot) && (own.drawn || !s.ramping()):
			// Drawn below, on an earlier booking; or spaced at the rate
			// then, which holds unless it grows (joining, equalizing: then
			// the slot is spaced again at the current rate).
			slot = own.slot
			drawn = own.drawn
		case counted == 0:
			// Nothing to space from (the first request after a 429, or
			// after the Retry-After gate reopens): start at a random point
			// of this request's share of the window, so that collectors
			// refused together do not send in step.
			slot = now.Add(s.spread(n, limit))
			drawn = true
		case !busy && slot.Before(now) && own != nil && own.waited:
			// It waited for the answer to the request in flight past its
			// time: when a slow ingest delayed the answers of many
			// collectors together, they must not all send at that moment.
			slot = now.Add(s.spread(n, limit) / 2)
			drawn = true
		}
		at = maxTime(at, slot)
	}
	wait := at.Sub(now)
	if busy && wait <= 0 {
		wait = inFlightPoll
	}
	if id != 0 {
		for i := range s.sent {
			if s.sent[i].id == id {
				s.sent[i].at, s.sent[i].slot, s.sent[i].drawn = at, slot, drawn
				s.sent[i].waited = s.sent[i].waited || busy
				return id, wait
			}
		}
	}
	s.nextID++
	s.sent = append(s.sent, booking{id: s.nextID, at: at, samples: n, slot: slot, waited: busy, drawn: drawn})
	return s.nextID, wait
}

// roundTrips holds the last round trips of a key's requests, from leaving to
// the answer.
type roundTrips struct {
	d [32]time.Duration
	n int // how many were added
}

func (r *roundTrips) add(d time.Duration) {
	r.d[r.n%len(r.d)] = d
	r.n++
}

// usual is the 90th percentile of the round trips kept (0 without any): an
// answer later than that is a slow one.
func (r *roundTrips) usual() time.Duration {
	n := min(r.n, len(r.d))
	if n == 0 {
		return 0
	}
	sorted := r.d
	slices.Sort(sorted[:n])
	return sorted[(n-1)*9/10]
}

// inFlightPoll is how often a request waiting for the one in flight (after a
// 429) looks again; answered wakes it earlier.
const inFlightPoll = 50 * time.Millisecond

// depart marks a booking's request as sent: it stays in the window until
// paceWindow after its answer.
func (s *keyState) depart(id uint64) {
	s.update(id, func(b *booking) {
		b.inFlight = true
		now := s.now()
		if now.After(b.at) {
			b.at = now
		}
		b.left = now
	})
}

// answered ends a booking's flight: the ingest counted it by now at the latest.
func (s *keyState) answered(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for i := range s.sent {
		if b := &s.sent[i]; b.id == id {
			b.inFlight = false
			b.answered = now
			if now.After(b.at) {
				b.at = now
			}
			if !b.left.IsZero() {
				s.rtt.add(now.Sub(b.left))
			}
			break
		}
	}
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
}

// wakeOnAnswer returns a channel closed when the next request is answered.
func (s *keyState) wakeOnAnswer() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wake == nil {
		s.wake = make(chan struct{})
	}
	return s.wake
}

func (s *keyState) update(id uint64, f func(*booking)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.sent {
		if s.sent[i].id == id {
			f(&s.sent[i])
			return
		}
	}
}

// cancel removes the booking of a request that did not leave, or that the
// ingest refused (it counts only the samples it accepts).
func (s *keyState) cancel(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, b := range s.sent {
		if b.id == id {
			s.sent = append(s.sent[:i], s.sent[i+1:]...)
			return
		}
	}
}

var errStopped = errors.New("the exporter is shutting down")

// waits records how long admit held a request back, and its booking in the
// pacing window (0 when pacing is off).
type waits struct {
	pacing, retryAfter time.Duration
	booking            uint64
}

// admit holds a request of n samples back until it may leave: until the
// Retry-After gate is open and the pacing window has room for it. If the
// gate closes while the request waits for pacing, its booking is given up
// and made again once the gate opens. admit returns early with an error when
// ctx is done or stop is closed, and at once with a gateTooLongError when the
// gate stays closed longer than maxWait from now (0: no bound).
func (s *keyState) admit(ctx context.Context, stop <-chan struct{}, n int, maxWait time.Duration) (waits, error) {
	var w waits
	var id uint64
	var deadline time.Time
	if maxWait > 0 {
		deadline = time.Now().Add(maxWait)
	}
	for {
		if d := s.gateWait(); d > 0 {
			if !deadline.IsZero() && time.Now().Add(d).After(deadline) {
				return w, gateTooLongError{wait: d, maxWait: maxWait}
			}
			start := time.Now()
			err := sleep(ctx, stop, d)
			w.retryAfter += time.Since(start)
			if err != nil {
				return w, err
			}
			continue // the gate may have moved while we slept
		}
		// After a wait, the booking is made again in its place: requests in
		// flight when it was made may have been answered later than it assumed.
		var d time.Duration
		wake := s.wakeOnAnswer()
		id, d = s.rebook(id, n)
		if d > 0 {
			start := time.Now()
			err := sleepOrWake(ctx, stop, wake, d)
			w.pacing += time.Since(start)
			if err != nil {
				s.cancel(id)
				return w, err
			}
			continue
		}
		if s.gateWait() > 0 {
			s.cancel(id)
			id = 0
			continue
		}
		s.depart(id)
		w.booking = id
		return w, nil
	}
}

// gateTooLongError: the Retry-After gate stays closed longer than the
// request may wait (retry_on_failure::max_elapsed_time).
type gateTooLongError struct {
	wait, maxWait time.Duration
}

func (g gateTooLongError) Error() string {
	return fmt.Sprintf("the Retry-After gate stays closed for %s more, longer than retry_on_failure::max_elapsed_time (%s)", g.wait.Round(time.Millisecond), g.maxWait)
}

// sleepOrWake is sleep that also ends when wake is closed.
func sleepOrWake(ctx context.Context, stop, wake <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return errStopped
	}
}

// sleep waits d, or until ctx is done or stop is closed.
func sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return errStopped
	}
}
