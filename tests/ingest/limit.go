package ingest

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// The rate limit is described in the package documentation (doc.go).

const rateWindow = time.Second

type windowEvent struct {
	at      time.Time
	samples int64
}

type keyWindow struct {
	events       []windowEvent // accepted requests in the window, oldest first
	sum          int64
	blockedAt    time.Time // when the last 429 was decided
	blockedUntil time.Time
	// clients: the last Retry-After period announced to each client (Config.ClientHeader).
	clients map[string]clientPeriod
}

// clientPeriod is a Retry-After period announced to one client.
type clientPeriod struct {
	decided, until time.Time
}

func (k *keyWindow) expire(now time.Time) {
	cut := now.Add(-rateWindow)
	i := 0
	for i < len(k.events) && !k.events[i].at.After(cut) {
		k.sum -= k.events[i].samples
		i++
	}
	k.events = append(k.events[:0], k.events[i:]...)
}

// admission is the rate-limit decision for one request.
type admission struct {
	refused    bool
	early      bool
	retryAfter string // header value when refused ("" with Config.NoRetryAfter)
	reason     string
	// clientEarly: the request arrived inside a Retry-After period its own
	// client was given.
	clientEarly bool
}

func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// announce returns the Retry-After header announcing a delay d from now, in
// the configured form, and the time it announces (what a client can read).
func (s *Server) announce(now time.Time, d time.Duration) (string, time.Time) {
	if s.cfg.RetryAfterHTTPDate {
		until := now.Add(d)
		if t := until.Truncate(time.Second); t.Before(until) {
			until = t.Add(time.Second)
		}
		return until.UTC().Format(http.TimeFormat), until
	}
	secs := ceilSeconds(d)
	return strconv.FormatInt(secs, 10), now.Add(time.Duration(secs) * time.Second)
}

// remaining returns the Retry-After header for an early retry at now.
func (s *Server) remaining(now, until time.Time) string {
	if s.cfg.RetryAfterHTTPDate {
		return until.UTC().Format(http.TimeFormat)
	}
	return strconv.FormatInt(ceilSeconds(until.Sub(now)), 10)
}

// admit applies the rate limit (and the random-throttle fault) to a valid
// request of n samples from key that arrived at arrived, and books it when
// accepted.
func (s *Server) admit(key, client string, n, limit int64, arrived time.Time) admission {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	k := s.keys[key]
	if k == nil {
		k = &keyWindow{clients: map[string]clientPeriod{}}
		s.keys[key] = k
	}
	d := s.decide(k, n, limit, now, arrived)
	if client != "" {
		if p, ok := k.clients[client]; ok && now.Before(p.until) && !arrived.Before(p.decided) {
			d.clientEarly = true
		}
		if d.refused && d.retryAfter != "" {
			k.clients[client] = clientPeriod{decided: now, until: k.blockedUntil}
		}
	}
	return d
}

// decide is admit's decision for key window k. Caller holds s.mu.
func (s *Server) decide(k *keyWindow, n, limit int64, now, arrived time.Time) admission {
	if now.Before(k.blockedUntil) {
		// A request that arrived before the 429 was decided was on its way
		// already: refused too, but not an early retry.
		early := !arrived.Before(k.blockedAt)
		reason := "early retry: Retry-After has not passed yet"
		if !early {
			reason = "key is blocked until Retry-After has passed"
		}
		return admission{refused: true, early: early, retryAfter: s.remaining(now, k.blockedUntil), reason: reason}
	}
	refuse := func(reason string) admission {
		if s.cfg.NoRetryAfter {
			return admission{refused: true, reason: reason}
		}
		h, until := s.announce(now, s.cfg.RetryAfter)
		k.blockedAt, k.blockedUntil = now, until
		return admission{refused: true, retryAfter: h, reason: reason}
	}
	if p := s.fault.ThrottleProbability; p > 0 && s.rng.Float64() < p {
		return refuse("fault: random throttle")
	}
	k.expire(now)
	if k.sum+n > limit {
		return refuse(fmt.Sprintf("rate limit: %d samples in the last second plus %d in this request exceed %d samples per second for this key", k.sum, n, limit))
	}
	k.events = append(k.events, windowEvent{at: now, samples: n})
	k.sum += n
	return admission{}
}
