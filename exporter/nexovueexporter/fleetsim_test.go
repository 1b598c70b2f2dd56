// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The fleet simulation runs the adaptive pacing of several collectors on one
// key against a simulated ingest, on a virtual clock: the same keyState code
// the exporter uses (reserve/rebook, depart, answered, acceptedAt, throttled,
// closeGate, gateWait), the admit loop and the retry helper modelled around
// it, and an ingest that enforces the key's limit as tests/ingest does (a
// sliding one-second window; a 429 blocks the whole key for its Retry-After,
// announced in whole seconds). It checks the fleet targets of issue 14
// deterministically, without the wall clock.

// simConfig is one fleet scenario.
type simConfig struct {
	collectors   int
	consumers    int           // queue consumers per collector
	offered      int           // samples per second offered to each collector
	request      int           // samples per request
	limit        int           // the key's limit at the ingest, samples per second
	ceiling      int           // rate_limit::samples_per_second of every collector
	retryAfter   time.Duration // 0: the ingest answers 429 without Retry-After
	load         time.Duration // how long the load is offered
	backoff      time.Duration // the retry helper's delay after a 429 without Retry-After
	minLat, jitt time.Duration // request latency: minLat plus up to jitt (uniform)
	seed         uint64
	// offeredByKey, when set, gives each collector one key per entry (one
	// keyState each, as an exporter routing to several keys holds), each
	// with its own limit at the ingest and its own queue consumers, offered
	// that many samples per second; offered is then unused.
	offeredByKey []int
	// lockstep: every collector is offered its first request at the start,
	// as the e2e fleet's senders, started together, post every 100 ms;
	// otherwise each at a random point of its first offer interval.
	lockstep bool
	// startSpread, when set, starts each collector's load at a random
	// moment within it (a fleet whose collectors come back, or are
	// restarted, one after the other), instead of within one offer interval.
	startSpread time.Duration
}

// simResult is what the simulated ingest saw.
type simResult struct {
	offered, accepted int
	// In the last 30 s of load:
	lastAccepted, lastRequests, last429 int
	requests, throttled                 int
	// clientEarly counts requests that arrived inside a Retry-After period
	// their own collector had been given (what tests/ingest reports as
	// ClientEarlyRetries).
	clientEarly int
	perWindow   []int // accepted samples per 5 s of load, % of the limit
	lastLimit   int   // the limit over the last 30 s of load, in samples
	// The busy period: from the first request's arrival to the last
	// accepted one's, and the requests and 429s that arrived in it.
	firstAt, lastOKAt time.Time
	limit             int
	// throttledBy counts each collector's 429s (by client).
	throttledBy []int
}

// busy is the busy period's accepted rate as % of the limit, and its 429s
// as % of its requests (every request arrives within it).
func (r simResult) busy() (acceptedPct, throttledPct float64) {
	d := r.lastOKAt.Sub(r.firstAt).Seconds()
	return 100 * float64(r.accepted) / (d * float64(r.limit)), 100 * float64(r.throttled) / float64(max(r.requests, 1))
}

func (r simResult) String() string {
	busyPct, busy429 := r.busy()
	return fmt.Sprintf("offered=%d accepted=%d requests=%d 429=%d inside_own_retry_after=%d busy_period=%s: accepted=%.1f%% of the limit, 429=%.2f%%; last_30s: accepted=%.1f%% of the limit, 429=%d of %d (%.2f%%), per 5 s: %v",
		r.offered, r.accepted, r.requests, r.throttled, r.clientEarly, r.lastOKAt.Sub(r.firstAt), busyPct, busy429,
		r.lastAcceptedPct(), r.last429, r.lastRequests, r.last429Pct(), r.perWindow)
}

func (r simResult) lastAcceptedPct() float64 {
	return 100 * float64(r.lastAccepted) / float64(r.lastLimit)
}
func (r simResult) last429Pct() float64 {
	return 100 * float64(r.last429) / float64(max(r.lastRequests, 1))
}

// simIngest is the ingest's rate limit for one key (tests/ingest/limit.go).
type simIngest struct {
	limit                   int
	retryAfter              time.Duration
	events                  []leave // accepted, by arrival
	sum                     int
	blockedAt, blockedUntil time.Time
	periods                 map[int][2]time.Time // client -> decided, until
}

// arrive decides a request of n samples from client arriving at now. It
// returns whether it was accepted and the Retry-After it announces (0: none).
func (g *simIngest) arrive(client, n int, now time.Time) (ok, early bool, retryAfter time.Duration) {
	if p, found := g.periods[client]; found && now.Before(p[1]) && !now.Before(p[0]) {
		early = true
	}
	if now.Before(g.blockedUntil) {
		secs := (g.blockedUntil.Sub(now) + time.Second - 1) / time.Second * time.Second
		g.periods[client] = [2]time.Time{now, g.blockedUntil}
		return false, early, secs
	}
	cut := now.Add(-time.Second)
	i := 0
	for i < len(g.events) && !g.events[i].at.After(cut) {
		g.sum -= g.events[i].samples
		i++
	}
	g.events = g.events[i:]
	if g.sum+n > g.limit {
		if g.retryAfter <= 0 {
			return false, early, 0
		}
		secs := (g.retryAfter + time.Second - 1) / time.Second * time.Second
		g.blockedAt, g.blockedUntil = now, now.Add(secs)
		g.periods[client] = [2]time.Time{now, g.blockedUntil}
		return false, early, secs
	}
	g.events = append(g.events, leave{at: now, samples: n})
	g.sum += n
	return true, early, 0
}

// simConsumer is one queue consumer of a simulated collector.
type simConsumer struct {
	busy     bool // holds a request
	id       uint64
	inFlight bool
	nextTry  time.Time // while admitting or backing off
	left     time.Time
	arriveAt time.Time
	answerAt time.Time
	decided  bool
	ok       bool
	retry    time.Duration
}

type simCollector struct {
	s         *keyState
	key       int // index into simConfig.offeredByKey
	client    int // the collector, as the ingest tells clients apart
	every     time.Duration
	backlog   int // requests queued
	nextOffer time.Time
	consumers []simConsumer
}

// simRuns numbers the simulation's runs.
var simRuns atomic.Int64

func runFleetSim(t *testing.T, cfg simConfig) simResult {
	t.Helper()
	return runFleetSimKeys(t, cfg)[0]
}

// runFleetSimKeys runs the scenario and returns what the ingest saw of each key.
func runFleetSimKeys(t *testing.T, cfg simConfig) []simResult {
	t.Helper()
	rng := rand.New(rand.NewPCG(cfg.seed, 14))
	run := simRuns.Add(1)
	clock := &virtualClock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	start := clock.t
	offered := cfg.offeredByKey
	if offered == nil {
		offered = []int{cfg.offered}
	}
	ings := make([]*simIngest, len(offered))
	res := make([]simResult, len(offered))
	for k := range offered {
		ings[k] = &simIngest{limit: cfg.limit, retryAfter: cfg.retryAfter, periods: map[int][2]time.Time{}}
		res[k].perWindow = make([]int, int(cfg.load/(5*time.Second)))
		res[k].throttledBy = make([]int, cfg.collectors)
	}
	cols := make([]*simCollector, 0, cfg.collectors*len(offered))
	for i := range cfg.collectors {
		for k, o := range offered {
			key := testKey
			if k > 0 {
				key = fmt.Sprintf("%s-%d", testKey, k)
			}
			// A state of its own for each collector of each run: the
			// registry shares states by endpoint and key.
			s := acquireKeyState(fmt.Sprintf("https://fleet.test/%s/run-%d/%d", t.Name(), run, i), key, cfg.ceiling)
			defer s.release()
			s.now = clock.now
			s.phase = rng.Float64
			every := time.Duration(float64(time.Second) * float64(cfg.request) / float64(o))
			spread := every
			if cfg.startSpread > 0 {
				spread = cfg.startSpread
			}
			first := start.Add(time.Duration(rng.Int64N(int64(spread))))
			if cfg.lockstep {
				first = start
			}
			cols = append(cols, &simCollector{s: s, key: k, client: i, every: every, consumers: make([]simConsumer, cfg.consumers),
				nextOffer: first})
		}
	}
	lastFrom := start.Add(cfg.load - 30*time.Second)
	loadEnd := start.Add(cfg.load)
	const step = time.Millisecond
	for {
		now := clock.t
		pending := false
		for _, c := range cols {
			res, ing := &res[c.key], ings[c.key]
			for now.Before(loadEnd) && !c.nextOffer.After(now) {
				c.backlog++
				res.offered += cfg.request
				c.nextOffer = c.nextOffer.Add(c.every)
			}
			woken := false
			for k := range c.consumers {
				w := &c.consumers[k]
				if w.inFlight && !w.decided && !now.Before(w.arriveAt) {
					w.decided = true
					var early bool
					w.ok, early, w.retry = ing.arrive(c.client, cfg.request, now)
					res.requests++
					if res.firstAt.IsZero() {
						res.firstAt = now
					}
					if early {
						res.clientEarly++
					}
					if !w.ok {
						res.throttled++
						res.throttledBy[c.client]++
					}
					inLast := !now.Before(lastFrom) && now.Before(loadEnd)
					if inLast {
						res.lastRequests++
						if !w.ok {
							res.last429++
						}
					}
					if w.ok {
						res.accepted += cfg.request
						res.lastOKAt = now
						if inLast {
							res.lastAccepted += cfg.request
						}
						if i := int(now.Sub(start) / (5 * time.Second)); i < len(res.perWindow) {
							res.perWindow[i] += cfg.request
						}
					}
				}
				if w.inFlight && !now.Before(w.answerAt) {
					// exporter.send after the answer.
					w.inFlight = false
					c.s.answered(w.id)
					woken = true
					if w.ok {
						c.s.acceptedAt(w.left, cfg.request)
						w.busy = false
					} else {
						// The transport closes the gate as the answer
						// comes, before the exporter reads it.
						if w.retry > 0 {
							c.s.closeGate(now.Add(w.retry))
						}
						c.s.cancel(w.id)
						c.s.throttled(w.left)
						w.nextTry = now.Add(cfg.backoff)
						if w.retry > 0 {
							w.nextTry = now.Add(w.retry)
						} else {
							c.s.throttledWithoutRetryAfter()
						}
					}
					w.id = 0
				}
				if !w.busy && c.backlog > 0 {
					c.backlog--
					w.busy, w.nextTry = true, now
				}
				if w.busy && !w.inFlight && !now.Before(w.nextTry) {
					// One pass of keyState.admit.
					if d := c.s.gateWait(); d > 0 {
						w.nextTry = now.Add(d)
					} else {
						var d time.Duration
						w.id, d = c.s.rebook(w.id, cfg.request)
						if d > 0 {
							w.nextTry = now.Add(d)
						} else {
							c.s.depart(w.id)
							lat := cfg.minLat + time.Duration(rng.Int64N(int64(cfg.jitt)+1))
							w.inFlight, w.decided, w.left = true, false, now
							w.arriveAt, w.answerAt = now.Add(lat/2), now.Add(lat)
						}
					}
				}
				pending = pending || w.busy
			}
			if woken {
				// An answer wakes the consumers waiting for pacing (wakeOnAnswer).
				for k := range c.consumers {
					if w := &c.consumers[k]; w.busy && !w.inFlight && w.nextTry.After(now) && c.s.gateWait() <= 0 {
						w.nextTry = now
					}
				}
			}
			pending = pending || c.backlog > 0
		}
		if !pending && !now.Before(loadEnd) {
			break
		}
		if now.Sub(start) > cfg.load+10*time.Minute {
			t.Fatalf("the simulated fleet did not drain its queues 10 minutes after the load: %v", res)
		}
		clock.t = nextEvent(cols, now, loadEnd, step)
	}
	for k := range res {
		for i := range res[k].perWindow {
			res[k].perWindow[i] = 100 * res[k].perWindow[i] / (5 * cfg.limit)
		}
		res[k].lastLimit = 30 * cfg.limit
		res[k].limit = cfg.limit
	}
	return res
}

// nextEvent is the next millisecond step at which anything of the fleet is
// due: an offer, a request's arrival or answer, a consumer's next try. The
// steps in between would change nothing, so the simulation skips them; it
// sees the same steps as one that visits every millisecond.
func nextEvent(cols []*simCollector, now, loadEnd time.Time, step time.Duration) time.Time {
	next := time.Time{}
	due := func(at time.Time) {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	for _, c := range cols {
		if c.nextOffer.Before(loadEnd) {
			due(c.nextOffer)
		}
		for k := range c.consumers {
			w := &c.consumers[k]
			switch {
			case w.inFlight && !w.decided:
				due(w.arriveAt)
			case w.inFlight:
				due(w.answerAt)
			case w.busy:
				due(w.nextTry)
			}
		}
	}
	min := now.Add(step)
	if next.IsZero() || !next.After(min) {
		return min
	}
	// Round up to the step grid the loop started on.
	return min.Add((next.Sub(min) + step - 1) / step * step)
}

// fleetScenario is the e2e fleet test's scenario (tests/e2e/pacing_test.go):
// eight collectors with the default rate limit, each offered 5,000
// samples/s in requests of 500 for 60 s, a key limited to 20,000 samples/s.
func fleetScenario(retryAfter time.Duration, seed uint64) simConfig {
	return simConfig{
		collectors: 8, consumers: 10, offered: 5000, request: 500,
		limit: 20_000, ceiling: 20_000, retryAfter: retryAfter,
		load: 60 * time.Second, backoff: 100 * time.Millisecond,
		minLat: 2 * time.Millisecond, jitt: 40 * time.Millisecond, seed: seed,
	}
}

// checkFleetTargets asserts issue 14's targets on a simulated fleet.
func checkFleetTargets(t *testing.T, res simResult) {
	t.Helper()
	t.Log(res)
	assert.Positive(t, res.throttled, "the fleet must have been throttled (else this proves nothing)")
	assert.Equal(t, res.offered, res.accepted, "every sample accepted once")
	assert.GreaterOrEqual(t, res.lastAcceptedPct(), 90.0, "accepted over the last 30 s, %% of the limit")
	assert.LessOrEqual(t, res.last429Pct(), 2.0, "429s over the last 30 s, %% of the requests")
	assert.Zero(t, res.clientEarly, "requests inside their own collector's Retry-After period")
}

// simLatencies are the request latencies simulated: up to 40 ms, and up to
// 100 ms (a loaded machine), where a second 429 episode follows the first.
var simLatencies = []time.Duration{40 * time.Millisecond, 100 * time.Millisecond}

func runFleetSims(t *testing.T, retryAfter time.Duration) {
	for _, jitter := range simLatencies {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("latency_up_to_%s/seed_%d", jitter, seed), func(t *testing.T) {
				cfg := fleetScenario(retryAfter, seed)
				cfg.jitt = jitter
				checkFleetTargets(t, runFleetSim(t, cfg))
			})
		}
	}
}

func TestFleetSimConvergesWithRetryAfter(t *testing.T) {
	t.Parallel() // waits on the clock (or simulates one): beside the others
	runFleetSims(t, time.Second)
}

func TestFleetSimConvergesWithoutRetryAfter(t *testing.T) {
	t.Parallel() // waits on the clock (or simulates one): beside the others
	runFleetSims(t, 0)
}

// burstScenario is the e2e fleet burst (tests/e2e/pacing_test.go): the
// fleet scenario's eight collectors all offered 5,000 samples/s together
// (twice the key's limit) for 30 s, then nothing.
func burstScenario(seed uint64, jitter time.Duration) simConfig {
	cfg := fleetScenario(time.Second, seed)
	cfg.load = 30 * time.Second
	cfg.jitt = jitter
	return cfg
}

// burstTarget reports whether a burst met issue 29's target: the busy
// period at 90% of the key's limit or more, with no more 429s than the
// first episode's one per collector.
func burstTarget(res simResult, collectors int) bool {
	return burstBound(res, collectors, 90, 1)
}

// burstBound reports whether a burst drained at minBusy % of the key's limit
// or more over its busy period, with at most perCollector 429s for any
// collector and collectors*perCollector in all.
func burstBound(res simResult, collectors int, minBusy float64, perCollector int) bool {
	busy, _ := res.busy()
	return busy >= minBusy && res.throttled <= collectors*perCollector && slices.Max(res.throttledBy) <= perCollector
}

// burstFigures logs a burst's busy-period figures and whether issue 29's
// target is met, and asserts what pacing guarantees in every draw
// (checkBurstDraw): every sample accepted once, the fleet throttled (else
// it proves nothing), no request inside its own collector's Retry-After
// period.
func burstFigures(t *testing.T, name string, seed int, res simResult, collectors int) {
	t.Helper()
	t.Logf("%s: %v", name, res)
	t.Logf("%s: issue 29's target (busy period >= 90%% of the limit, at most one 429 per collector): %v", name, burstTarget(res, collectors))
	checkBurstDraw(t, seed, res, collectors, 0, 0)
}

// burstDraws is how many draws TestFleetSimDrainsABurst runs of each case.
const burstDraws = 200

// burstCase is one way the fleet of the burst starts: in step, with each
// collector's first offer at a random point of its first offer interval,
// or with each collector starting at a random moment within 2 s.
type burstCase struct {
	name     string
	latency  time.Duration
	lockstep bool
	spread   time.Duration
	// Every draw drains at minBusy % of the key's limit or more over its
	// busy period, with at most perCollector 429s for any collector:
	// issue 47's target (90, 1), or the bound this pacing reaches where it
	// falls short of it (see the README's "Bursts").
	minBusy      float64
	perCollector int
}

var burstCases = []burstCase{
	{name: "in_step", latency: 40 * time.Millisecond, lockstep: true, minBusy: 90, perCollector: 1},
	{name: "in_step", latency: 100 * time.Millisecond, lockstep: true, minBusy: 90, perCollector: 1},
	{name: "random_first_offers", latency: 40 * time.Millisecond, minBusy: 90, perCollector: 1},
	{name: "random_first_offers", latency: 100 * time.Millisecond, minBusy: 75, perCollector: 2},
	{name: "random_start_within_2s", latency: 40 * time.Millisecond, spread: 2 * time.Second, minBusy: 70, perCollector: 5},
	{name: "random_start_within_2s", latency: 100 * time.Millisecond, spread: 2 * time.Second, minBusy: 70, perCollector: 5},
}

// TestFleetSimDrainsABurst: the fleet of the e2e burst test on a virtual
// clock (issues 29 and 47), burstDraws draws of each of burstCases. Every
// draw loses nothing, sends nothing inside its own Retry-After, and drains
// at its case's minBusy % of the key's limit or more with at most its
// perCollector 429s for any collector (the minimum over the draws, not the
// mean): issue 47's target (90%, one) in step and with random first offers
// at 40 ms, the bound reached otherwise (see the README's "Bursts" for why
// they fall short).
func TestFleetSimDrainsABurst(t *testing.T) {
	t.Parallel() // waits on the clock (or simulates one): beside the others
	for _, bc := range burstCases {
		t.Run(fmt.Sprintf("%s/latency_up_to_%s", bc.name, bc.latency), func(t *testing.T) {
			t.Parallel()
			shares := make([]float64, burstDraws)
			throttled := make([]int, burstDraws)
			perCollector := make([]int, burstDraws)
			met := 0
			for seed := range burstDraws {
				cfg := burstScenario(uint64(seed), bc.latency)
				cfg.lockstep, cfg.startSpread = bc.lockstep, bc.spread
				res := runFleetSim(t, cfg)
				shares[seed], _ = res.busy()
				throttled[seed], perCollector[seed] = res.throttled, slices.Max(res.throttledBy)
				checkBurstDraw(t, seed, res, cfg.collectors, bc.minBusy, bc.perCollector)
				if burstTarget(res, cfg.collectors) {
					met++
				}
			}
			sorted := slices.Clone(shares)
			slices.Sort(sorted)
			t.Logf("%s, latencies up to %s, %d draws: busy period %% of the limit: min %.1f, 10th percentile %.1f, median %.1f; most 429s in a draw %d, for one collector %d; issue 47's target met in %d",
				bc.name, bc.latency, burstDraws, sorted[0], sorted[len(sorted)/10], sorted[len(sorted)/2], slices.Max(throttled), slices.Max(perCollector), met)
		})
	}
}

// checkBurstDraw asserts what every draw of a burst holds (every sample
// accepted once, the fleet throttled, else it proves nothing, nothing
// inside its own collector's Retry-After) and, when minBusy > 0, the
// draw's bound: its busy period at minBusy % of the key's limit or more,
// with at most perCollector 429s for any collector (burstBound).
func checkBurstDraw(t *testing.T, seed int, res simResult, collectors int, minBusy float64, perCollector int) {
	t.Helper()
	if !assert.Equal(t, res.offered, res.accepted, "seed %d: every sample accepted once", seed) ||
		!assert.Positive(t, res.throttled, "seed %d: the burst must have been throttled (else this proves nothing)", seed) ||
		!assert.Zero(t, res.clientEarly, "seed %d: requests inside their own collector's Retry-After period", seed) {
		t.Logf("seed %d: %v", seed, res)
	}
	if minBusy > 0 && !burstBound(res, collectors, minBusy, perCollector) {
		busy, _ := res.busy()
		t.Errorf("seed %d: busy period at %.1f%% of the limit with %d 429s (%d for one collector): this case asks %.0f%% or more and %d 429s a collector at most in every draw: %v",
			seed, busy, res.throttled, slices.Max(res.throttledBy), minBusy, perCollector, res)
	}
}

// TestFleetSimKeysAreApartInABurst: every collector of the fleet sends to
// two keys (two keyStates in one exporter), each with its own limit at the
// ingest. The first key gets the burst (twice its limit for 30 s), the
// second a quarter of its limit meanwhile: the second is never throttled
// and nothing of it waits for the first's Retry-After or pacing, and the
// first drains its burst as a fleet on one key does.
func TestFleetSimKeysAreApartInABurst(t *testing.T) {
	cfg := burstScenario(0, 40*time.Millisecond)
	cfg.offeredByKey = []int{5000, 625}
	cfg.lockstep = true
	res := runFleetSimKeys(t, cfg)
	burstFigures(t, "burst key", int(cfg.seed), res[0], cfg.collectors)
	assert.True(t, burstTarget(res[0], cfg.collectors), "the burst key: issue 29's target")
	t.Logf("quiet key: %v", res[1])
	assert.Zero(t, res[1].throttled, "the quiet key was throttled: the burst on the other key reached it")
	assert.Equal(t, res[1].offered, res[1].accepted, "every sample of the quiet key accepted once")
	assert.Positive(t, res[1].offered)
	// The quiet key's last sample arrived within one offer interval and a
	// request's latency of the end of the load: nothing of it was held back.
	busy := res[1].lastOKAt.Sub(res[1].firstAt)
	assert.Less(t, busy, cfg.load+cfg.minLat+cfg.jitt, "the quiet key's requests were held back past the end of its load")
}

// fleetSizeCase is a burst of TestFleetSimFleetSizes: collectors share the
// key (each offered 40,000/collectors samples/s for 30 s: twice the key's
// limit together, as the eight of burstScenario), sending requests of
// request samples, with random first offers and answers of up to 40 ms.
type fleetSizeCase struct {
	collectors, request, draws int
	// Every draw drains at minBusy % of the key's limit or more with at
	// most perCollector 429s for any collector. minBusy 0: each
	// collector's share is under three requests a second (20,000 /
	// collectors < 3 * request), pacing cannot find the shares, and only
	// what holds in every draw is asserted (checkBurstDraw); the busy
	// period is a figure.
	minBusy      float64
	perCollector int
}

var fleetSizeCases = []fleetSizeCase{
	{collectors: 16, request: 100, draws: 10, minBusy: 85, perCollector: 2},
	{collectors: 50, request: 100, draws: 10, minBusy: 85, perCollector: 2},
	{collectors: 16, request: 500, draws: 3},
	{collectors: 32, request: 500, draws: 3},
	{collectors: 50, request: 500, draws: 3},
}

// TestFleetSimFleetSizes: bursts of larger fleets than the e2e fleet's
// eight (see the README's "Fleet size and request size"). Every draw
// loses nothing and sends nothing inside its own Retry-After. Where each
// collector's share is four requests a second or more, the fleet drains
// the burst near the limit with a 429 or two per collector; where it is
// under three (requests of 500 samples among 16 or more collectors),
// pacing cannot find the shares: a figure, for the README's table.
func TestFleetSimFleetSizes(t *testing.T) {
	t.Parallel() // waits on the clock (or simulates one): beside the others
	for _, fc := range fleetSizeCases {
		t.Run(fmt.Sprintf("%d_collectors/requests_of_%d", fc.collectors, fc.request), func(t *testing.T) {
			t.Parallel()
			shares := make([]float64, fc.draws)
			limit := 0
			for seed := range fc.draws {
				cfg := burstScenario(uint64(seed), 40*time.Millisecond)
				cfg.collectors, cfg.offered, cfg.request = fc.collectors, 2*cfg.limit/fc.collectors, fc.request
				limit = cfg.limit
				res := runFleetSim(t, cfg)
				shares[seed], _ = res.busy()
				checkBurstDraw(t, seed, res, fc.collectors, fc.minBusy, fc.perCollector)
			}
			sorted := slices.Clone(shares)
			slices.Sort(sorted)
			t.Logf("%d collectors, requests of %d samples (a share of %.1f requests a second), %d draws: busy period %% of the limit: min %.1f, median %.1f",
				fc.collectors, fc.request, float64(limit)/float64(fc.collectors*fc.request), fc.draws, sorted[0], sorted[len(sorted)/2])
		})
	}
}
