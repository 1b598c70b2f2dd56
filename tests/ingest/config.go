package ingest

import (
	"maps"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Defaults of the documented ingest contract.
const (
	DefaultMaxFrames        = 1_000_000
	DefaultSamplesPerSecond = 20_000
	DefaultRetryAfter       = time.Second
	DefaultMaxBodyBytes     = 64 << 20
	DefaultKeepRecent       = 1000

	// ProfilesPath is where profiles are posted, below URL().
	ProfilesPath = "/v1development/profiles"
	// StatsPath answers GET with Stats as JSON.
	StatsPath = "/stats"
	// KeyHeader carries the ingest key.
	KeyHeader = "x-nexovue-key"
)

// Config configures a Server. The zero value is the documented contract with
// any non-empty key accepted.
type Config struct {
	// Addr to listen on; "" means 127.0.0.1:0 (a free loopback port).
	Addr string
	// Keys are the valid ingest keys. Empty means any non-empty key is
	// accepted (a missing or empty key is still answered 401).
	Keys []string
	// KeyLimits gives keys a samples-per-second limit of their own (each
	// key belongs to one project, whose limit may differ); keys not in it
	// have SamplesPerSecond. Server.SetKeyLimit changes them at run time.
	KeyLimits map[string]int64
	// KeyNames names keys for per-key statistics (Stats.Keys, RequestInfo.Key):
	// the name, never the key, is kept. Keys without a name are not counted
	// per key.
	KeyNames map[string]string
	// MaxFrames: a request whose stacks write out to more frames is
	// answered 413. Default 1,000,000.
	MaxFrames int64
	// SamplesPerSecond each key may send in any one-second window; a request
	// that would exceed it is answered 429. Default 20,000.
	SamplesPerSecond int64
	// RetryAfter is the delay announced with a 429. Default 1s. It is sent
	// as whole delay-seconds rounded up, or as an HTTP-date (rounded up to
	// the next whole second) when RetryAfterHTTPDate is set.
	RetryAfter         time.Duration
	RetryAfterHTTPDate bool
	// NoRetryAfter answers a key over the limit 429 without Retry-After and
	// without blocking it (as many real backends do): the next request that
	// fits in the window is accepted.
	NoRetryAfter bool
	// ClientHeader, when set, names a request header that tells senders of
	// one key apart (e.g. each collector of a fleet sets its own value). The
	// server then also counts, per client, requests that arrived inside a
	// Retry-After period that client itself was given (Stats.ClientEarlyRetries):
	// what a sender that honours Retry-After never does. EarlyRetries stays
	// per key: there a client is also counted when another one was throttled.
	ClientHeader string
	// MaxBodyBytes bounds a request body, both as sent and decompressed;
	// a larger body is answered 413. Default 64 MiB.
	MaxBodyBytes int64
	// KeepRecent is how many recent requests' metadata Stats keeps.
	// Default 1000.
	KeepRecent int
	// KeepBodies, when > 0, keeps the decompressed bodies of the first
	// KeepBodies accepted requests (AcceptedBodies), for tests that decode
	// what a client sent with another decoder. Default 0 (none).
	KeepBodies int
	// Now is the clock (for the rate limit and Retry-After); default time.Now.
	Now func() time.Time
	// OnAccepted, when set, is called with each accepted request's profiles
	// before the answer is written, for tests that look at what the
	// double does not keep (resource attributes). It must not keep pd.
	OnAccepted func(pd pprofile.Profiles)
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.MaxFrames <= 0 {
		c.MaxFrames = DefaultMaxFrames
	}
	if c.SamplesPerSecond <= 0 {
		c.SamplesPerSecond = DefaultSamplesPerSecond
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.KeepRecent <= 0 {
		c.KeepRecent = DefaultKeepRecent
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Keys = append([]string(nil), c.Keys...)
	c.KeyLimits = maps.Clone(c.KeyLimits)
	return c
}

// Fault makes the server misbehave on purpose. Set it with Server.SetFault;
// the zero Fault is normal behaviour. Faults act before the key is checked,
// in this order: Delay, then DropFirst/DropAll, then UnavailableFirst, then
// FixedStatus. ThrottleProbability acts at the rate-limit step, on requests
// that are otherwise valid.
type Fault struct {
	// Delay before answering every request (including dropped ones).
	Delay time.Duration
	// DropFirst: close the connection without answering the next N requests.
	DropFirst int
	// DropAll: close the connection without answering while set.
	DropAll bool
	// UnavailableFirst: answer 503 to the next N requests.
	UnavailableFirst int
	// UnavailableRetryAfter, when > 0, is sent as Retry-After with those 503
	// answers, in the form Config.RetryAfterHTTPDate selects. A 503 does not
	// block the key and no early retries are counted for it.
	UnavailableRetryAfter time.Duration
	// ThrottleProbability answers 429 (with Retry-After, like the rate limit)
	// to a valid request with this probability, drawn from a generator seeded
	// with Seed when the Fault is set.
	ThrottleProbability float64
	Seed                uint64
	// FixedStatus, when non-zero, answers every request with this status
	// and FixedBody (as the Status message, see WriteStatus).
	FixedStatus int
	FixedBody   string
}
