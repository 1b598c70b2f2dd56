package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"
)

// keyState is what every exporter, and every queue consumer of each of
// them, sending with the same endpoint and key shares: the Retry-After gate,
// the samples-per-second bucket and the once-a-minute rejected-key log.
//
// States live in a package-level registry keyed by a SHA-256 of endpoint and
// key, so the key itself is never held in a map key, label or log.
type keyState struct {
	id   [sha256.Size]byte
	refs int // guarded by registry.mu

	mu sync.Mutex
	// notBefore is the Retry-After gate: no request leaves before it.
	notBefore time.Time
	// Token bucket of samples: rate a second, burst one second's worth.
	rate   float64
	tokens float64
	last   time.Time
	// lastKeyLog is when the rejected-key error was last logged.
	lastKeyLog time.Time
	// now is time.Now, replaceable in tests.
	now func() time.Time
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
// different rates, the lowest one applies.
func acquireKeyState(endpoint, key string, samplesPerSecond int) *keyState {
	id := stateID(endpoint, key)
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.states == nil {
		registry.states = map[[sha256.Size]byte]*keyState{}
	}
	s, ok := registry.states[id]
	if !ok {
		s = &keyState{id: id, now: time.Now}
		registry.states[id] = s
	}
	s.refs++
	if samplesPerSecond > 0 {
		s.mu.Lock()
		if s.rate == 0 || float64(samplesPerSecond) < s.rate {
			s.rate = float64(samplesPerSecond)
			s.tokens = min(s.tokens, s.rate)
			if s.last.IsZero() {
				s.tokens = s.rate
				s.last = s.now()
			}
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
}

// gateWait is how long a request must still wait for the Retry-After gate.
func (s *keyState) gateWait() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notBefore.Sub(s.now())
}

// reserve takes n samples from the bucket and returns how long the request
// must wait before it leaves. A request may wait for at most min(n, burst)
// tokens, so one larger than the burst still goes once the bucket is full and
// leaves the bucket in debt for those that follow: nothing deadlocks.
func (s *keyState) reserve(n int) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rate <= 0 || n <= 0 {
		return 0
	}
	now := s.now()
	burst := s.rate
	if elapsed := now.Sub(s.last); elapsed > 0 {
		s.tokens = min(burst, s.tokens+elapsed.Seconds()*s.rate)
		s.last = now
	}
	need := min(float64(n), burst)
	var wait time.Duration
	if s.tokens < need {
		wait = time.Duration((need - s.tokens) / s.rate * float64(time.Second))
	}
	s.tokens -= float64(n)
	return wait
}

// refund gives back the tokens of a reservation whose request did not leave.
func (s *keyState) refund(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rate > 0 {
		s.tokens = min(s.rate, s.tokens+float64(n))
	}
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

var errStopped = errors.New("the exporter is shutting down")

// waits records how long admit held a request back.
type waits struct {
	pacing, retryAfter time.Duration
}

// admit holds a request of n samples back until it may leave: until the
// Retry-After gate is open and the bucket has paid for it. It returns early
// with an error when ctx is done or stop is closed (then the reservation is
// refunded).
func (s *keyState) admit(ctx context.Context, stop <-chan struct{}, n int) (waits, error) {
	var w waits
	reserved := false
	for {
		if d := s.gateWait(); d > 0 {
			start := time.Now()
			err := sleep(ctx, stop, d)
			w.retryAfter += time.Since(start)
			if err != nil {
				if reserved {
					s.refund(n)
				}
				return w, err
			}
			continue // the gate may have moved while we slept
		}
		if reserved {
			return w, nil
		}
		reserved = true
		if d := s.reserve(n); d > 0 {
			start := time.Now()
			err := sleep(ctx, stop, d)
			w.pacing += time.Since(start)
			if err != nil {
				s.refund(n)
				return w, err
			}
		}
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
