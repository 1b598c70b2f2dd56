// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/otel/attribute"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
	"github.com/nexovue/otelcol-nexovue/tests/ingest"
)

// startIngest starts the project's ingest double with the test key.
func startIngest(t *testing.T, cfg ingest.Config) *ingest.Server {
	t.Helper()
	cfg.Keys = []string{testKey}
	return ingest.StartForTest(t, cfg)
}

// seqBatch is a generated batch whose samples carry seq values
// offset, offset+1, ..., offset+samples-1.
func seqBatch(t *testing.T, samples, offset int, seed uint64) pprofile.Profiles {
	t.Helper()
	pd := profilegen.Generate(profilegen.Config{Samples: samples, Seq: true, Seed: seed})
	dict := pd.Dictionary()
	attrs := dict.AttributeTable()
	shifted := 0
	for i := 0; i < attrs.Len(); i++ {
		a := attrs.At(i)
		if dict.StringTable().At(int(a.KeyStrindex())) == profilegen.SeqKey {
			a.Value().SetInt(a.Value().Int() + int64(offset))
			shifted++
		}
	}
	require.Equal(t, samples, shifted, "one seq attribute per sample")
	return pd
}

// e2eConfig is the exporter against the double with the sending queue
// (four consumers) and fast retries.
func e2eConfig(srv *ingest.Server, samplesPerSecond int) *Config {
	cfg := testConfig(srv.URL())
	q := exporterhelper.NewDefaultQueueConfig()
	q.NumConsumers = 4
	cfg.QueueConfig = configoptional.Some(q)
	cfg.RetryConfig.MaxElapsedTime = time.Minute
	cfg.RateLimit.SamplesPerSecond = samplesPerSecond
	return cfg
}

// TestEndToEndFramesAndPacing sends one large batch through the queue: the
// double refuses requests over its frame limit (413) and over its rate
// limit (429). Pacing and halving deliver every sample exactly once.
func TestEndToEndFramesAndPacing(t *testing.T) {
	const (
		samples = 6000 // 64 frames each: 384,000 frames
		limit   = 2000
	)
	srv := startIngest(t, ingest.Config{SamplesPerSecond: limit, MaxFrames: 50_000})
	h := newHarness(t, e2eConfig(srv, limit))

	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), seqBatch(t, samples, 0, 61)))
	require.Eventually(t, func() bool { return srv.SamplesAccepted() == samples }, 30*time.Second, 10*time.Millisecond)

	seq := srv.Seq()
	assert.Equal(t, samples, seq.Distinct)
	assert.Zero(t, seq.Duplicates)
	assert.Empty(t, srv.MissingSeq(samples))
	assert.Zero(t, srv.EarlyRetries())
	assert.Positive(t, srv.Requests(http.StatusRequestEntityTooLarge), "the frame limit was met")
	assert.Zero(t, srv.Requests(http.StatusTooManyRequests), "pacing kept the key under the rate limit")
	for _, r := range srv.RecentRequests() {
		if r.Status == http.StatusOK {
			assert.LessOrEqual(t, r.Frames, int64(50_000))
			assert.LessOrEqual(t, r.Samples, int64(limit))
		}
	}
	// The exporter counts a request once it has read the answer, just after the double counted it.
	require.Eventually(t, func() bool { return h.intSum(t, mSent) == samples }, 10*time.Second, 10*time.Millisecond)
	assert.Positive(t, h.intSum(t, mSplit))
	assert.Positive(t, h.floatSum(t, mWait, attribute.String("reason", "pacing")))
	assert.Zero(t, h.intSum(t, mDropped))
}

// roundTrip is one request as the exporter's HTTP client saw it.
type roundTrip struct {
	start, end time.Time // when it left, when its answer came back
	status     int
	notBefore  time.Time // from a Retry-After answer, as the exporter reads it
}

// recordingTransport records when each request leaves the exporter.
type recordingTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	rts  []roundTrip
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := roundTrip{start: time.Now()}
	resp, err := rt.base.RoundTrip(req)
	r.end = time.Now()
	if err == nil {
		r.status = resp.StatusCode
		r.notBefore, _ = parseRetryAfter(resp.Header.Get("Retry-After"), r.end)
	}
	rt.mu.Lock()
	rt.rts = append(rt.rts, r)
	rt.mu.Unlock()
	return resp, err
}

func (rt *recordingTransport) trips() []roundTrip {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]roundTrip(nil), rt.rts...)
}

// TestEndToEndRetryAfter turns pacing off so that the double's rate limit
// answers 429 with Retry-After, in both forms, to four queue consumers.
// Once the exporter has an answer with Retry-After, no request leaves before
// that time; the only requests the double sees early are those that had left
// while the 429 was on its way back. Every sample arrives exactly once.
func TestEndToEndRetryAfter(t *testing.T) {
	t.Parallel() // waits on the clock (or simulates one): beside the others
	for _, httpDate := range []bool{false, true} {
		name := "delay-seconds"
		if httpDate {
			name = "HTTP-date"
		}
		t.Run(name, func(t *testing.T) {
			const (
				batches = 8
				per     = 300
			)
			srv := startIngest(t, ingest.Config{SamplesPerSecond: 900, RetryAfterHTTPDate: httpDate})
			h := newHarness(t, e2eConfig(srv, 0))
			// Set before any data is queued: the queue hands data to its
			// consumers after this write.
			rec := &recordingTransport{base: h.inner.client.Transport}
			h.inner.client.Transport = rec

			pds := make([]pprofile.Profiles, batches)
			for i := range pds {
				pds[i] = seqBatch(t, per, i*per, uint64(70+i))
			}
			for _, pd := range pds {
				require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))
			}
			require.Eventually(t, func() bool { return srv.SamplesAccepted() == batches*per }, time.Minute, 10*time.Millisecond)

			assert.Positive(t, srv.Requests(http.StatusTooManyRequests), "the rate limit was met")
			trips := rec.trips()
			inFlight := 0
			for _, r := range trips {
				if r.notBefore.IsZero() {
					continue
				}
				for _, o := range trips {
					if o.status == 0 {
						continue // held back by the gate: it did not leave
					}
					if o.start.After(r.start) && o.start.Before(r.end) {
						inFlight++ // left while the 429 was on its way back
					}
					if !o.start.Before(r.end) {
						assert.False(t, o.start.Before(r.notBefore), "a request left %v before the Retry-After time", r.notBefore.Sub(o.start))
					}
				}
			}
			assert.LessOrEqual(t, srv.EarlyRetries(), inFlight, "every early request had left before the exporter knew")
			seq := srv.Seq()
			assert.Equal(t, batches*per, seq.Distinct)
			assert.Zero(t, seq.Duplicates)
			assert.Empty(t, srv.MissingSeq(batches*per))
			assert.Positive(t, h.floatSum(t, mWait, attribute.String("reason", "retry_after")))
		})
	}
}

func TestEndToEndWrongKey(t *testing.T) {
	srv := startIngest(t, ingest.Config{})
	cfg := testConfig(srv.URL())
	cfg.Key = "not-the-key"
	h := newHarness(t, cfg)

	err := h.exp.ConsumeProfiles(context.Background(), seqBatch(t, 50, 0, 80))
	require.True(t, consumererror.IsPermanent(err), "dropped and failed permanently: %v", err)
	assert.Equal(t, 1, srv.Requests(http.StatusUnauthorized))
	assert.Equal(t, 1, h.logs.FilterMessageSnippet("rejected the ingest key").Len())
	assert.Equal(t, int64(50), h.intSum(t, mDropped, attribute.String("reason", "rejected_key")))
	assert.NotContains(t, h.logText(), "not-the-key")
}
