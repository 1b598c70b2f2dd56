// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"crypto/sha256"
	"math/rand/v2"
	"sync"
	"time"
)

// keyState is what every exporter, and every queue consumer of each of
// them, sending with the same endpoint and key shares: the Retry-After gate,
// the samples-per-second pacing and the once-a-minute rejected-key log.
//
// States live in a package-level registry keyed by a SHA-256 of endpoint and
// key, so the key itself is never held in a map key, label or log.
type keyState struct {
	id   [sha256.Size]byte
	refs int // guarded by registry.mu

	mu sync.Mutex
	// notBefore is the Retry-After gate: no request leaves before it.
	notBefore time.Time
	// noRetryAfter: the ingest has answered 429 without Retry-After.
	noRetryAfter bool
	// Pacing: at most limitAt(now) samples leave in any paceWindow (ceiling,
	// the configured limit, until a 429 lowers it: see adaptive.go). sent holds the
	// requests that left or are booked to leave, in leaving order.
	ceiling int
	ad      adaptive
	sent    []booking
	exits   []booking // rebook's scratch space
	rtt     roundTrips
	nextID  uint64
	// wake is closed when a request is answered (see wakeOnAnswer).
	wake chan struct{}
	// lastKeyLog is when the rejected-key error was last logged.
	lastKeyLog time.Time
	// now is time.Now, replaceable in tests.
	now func() time.Time
	// phase draws where in its share of the window the first spaced
	// request starts, in [0, 1): rand.Float64, replaceable in tests.
	phase func() float64
}

var registry struct {
	mu     sync.Mutex
	states map[[sha256.Size]byte]*keyState
}

// stateID hashes endpoint and key; the zero byte keeps ("ab","c") and ("a","bc") apart.
func stateID(endpoint, key string) [sha256.Size]byte {
	return sha256.Sum256([]byte(endpoint + "\x00" + key))
}

// acquireKeyState returns the state shared by endpoint+key and takes a reference on it.
// samplesPerSecond > 0 turns pacing on; when exporters sharing a key configure
// different limits, the lowest one applies.
func acquireKeyState(endpoint, key string, samplesPerSecond int) *keyState {
	id := stateID(endpoint, key)
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.states == nil {
		registry.states = map[[sha256.Size]byte]*keyState{}
	}
	s, ok := registry.states[id]
	if !ok {
		s = &keyState{id: id, now: time.Now, phase: rand.Float64}
		registry.states[id] = s
	}
	s.refs++
	if samplesPerSecond > 0 {
		s.mu.Lock()
		if s.ceiling == 0 || samplesPerSecond < s.ceiling {
			s.ceiling = samplesPerSecond
		}
		s.mu.Unlock()
	}
	return s
}

// release drops a reference; the last one removes the state from the registry.
func (s *keyState) release() {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	s.refs--
	if s.refs <= 0 && registry.states[s.id] == s {
		delete(registry.states, s.id)
	}
}

// closeGate moves the Retry-After gate to until, if that is later than it already is.
func (s *keyState) closeGate(until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if until.After(s.notBefore) {
		s.notBefore = until
	}
	if s.ceiling > 0 {
		now := s.now()
		s.ad.gateClosed(now, until)
		if s.ramping() && now.Sub(s.ad.decreasedAt) < sameEpisode {
			// The episode that started joining or equalizing: the
			// growth counts from when this gate reopens.
			s.ad.rampFrom = maxTime(s.ad.rampFrom, until)
		}
	}
}

// throttledWithoutRetryAfter records a 429 without Retry-After: this ingest
// has no Retry-After periods to keep, so several requests may be in flight.
func (s *keyState) throttledWithoutRetryAfter() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noRetryAfter = true
}

// gateWait is how long a request must still wait for the Retry-After gate.
func (s *keyState) gateWait() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notBefore.Sub(s.now())
}

// shouldLogRejectedKey reports whether the rejected-key error may be logged
// now: at most once a minute per key.
func (s *keyState) shouldLogRejectedKey() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if !s.lastKeyLog.IsZero() && now.Sub(s.lastKeyLog) < time.Minute {
		return false
	}
	s.lastKeyLog = now
	return true
}
