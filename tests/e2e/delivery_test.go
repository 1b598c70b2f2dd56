package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

const testKey = "nxk-e2e-delivery-key"

// startPipeline starts a collector with the OTLP pipeline o (Port is chosen
// when zero) and returns it with a load generator pointed at it.
func startPipeline(t *testing.T, o otlpPipeline) (*testenv.Process, *loadgen) {
	t.Helper()
	if o.Port == 0 {
		o.Port = testenv.FreePort(t)
	}
	cfg := o.write(t, t.TempDir())
	p := testenv.StartCollector(t, cfg, testenv.CollectorOptions{Env: collectorEnv(testKey)})
	return p, newLoadgen(o.Port)
}

// TestThrottlePacedBelowLimit: with rate_limit at the ingest's limit the
// exporter's pacing alone keeps every request under it: no 429 at all.
func TestThrottlePacedBelowLimit(t *testing.T) {
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}, SamplesPerSecond: 2000, RetryAfter: 2 * time.Second})
	var sent int64
	figures(t, "throttle-paced", srv, &sent)
	_, lg := startPipeline(t, otlpPipeline{Endpoint: srv.URL(), RateLimit: 2000})

	sent = lg.send(t, 20, 1000, 16)
	waitAllSeq(t, srv, sent, 2*time.Minute)

	st := srv.Stats()
	require.Zero(t, st.RequestsByStatus[http.StatusTooManyRequests], "pacing at the ingest's limit must prevent every 429")
	require.Zero(t, st.EarlyRetries)
	require.Zero(t, st.Seq.Duplicates)
	require.Equal(t, sent, st.SamplesAccepted)
}

// TestThrottlePacedSlowIngest: pacing at the ingest's limit must hold when
// the ingest's answer time varies. The ingest counts a request when it
// decides it; here it takes 900ms to decide the first requests, then answers
// at once. A pacer that books a request's place in the window at the time it
// leaves, not when it is answered, sends the next second's requests less
// than a second (as the ingest counts) after the first ones: 429.
func TestThrottlePacedSlowIngest(t *testing.T) {
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}, SamplesPerSecond: 2000, RetryAfter: 2 * time.Second})
	var sent int64
	figures(t, "throttle-paced-slow-ingest", srv, &sent)
	_, lg := startPipeline(t, otlpPipeline{Endpoint: srv.URL(), RateLimit: 2000})

	srv.SetFault(ingest.Fault{Delay: 900 * time.Millisecond})
	sent = lg.send(t, 6, 1000, 16)
	// The first second's requests arrive and wait; once the double holds
	// one, the delay is lifted: the next ones leave a second after the
	// first and are answered at once.
	testenv.WaitFor(t, 30*time.Second, "the double holding a request", func() (bool, error) {
		return srv.Delaying() >= 1, nil
	})
	srv.SetFault(ingest.Fault{})
	waitAllSeq(t, srv, sent, time.Minute)

	st := srv.Stats()
	require.Zero(t, st.RequestsByStatus[http.StatusTooManyRequests], "pacing at the ingest's limit must prevent every 429, however long the ingest takes to answer")
	require.Zero(t, st.EarlyRetries)
	require.Zero(t, st.Seq.Duplicates)
}

// TestThrottle429PathLosesNothing: with pacing off the ingest answers 429
// with Retry-After 2s; the exporter honours it (no early retry) and loses
// nothing. One queue consumer: with the default ten, the requests already
// on their way when a 429 is decided reach the double after it, and the
// double cannot tell them from early retries (see the package report).
func TestThrottle429PathLosesNothing(t *testing.T) {
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}, SamplesPerSecond: 2000, RetryAfter: 2 * time.Second})
	var sent int64
	figures(t, "throttle-429", srv, &sent)
	_, lg := startPipeline(t, otlpPipeline{Endpoint: srv.URL(), RateLimit: 0, Consumers: 1})

	sent = lg.send(t, 20, 1000, 16)
	waitAllSeq(t, srv, sent, 3*time.Minute)
	requireThrottledOnceEach(t, srv, sent)
}

// TestFramesSplitBelowLimit sends one batch of 3,000,000 frames: frame_limit
// (and the exporter) split it so that no request exceeds 1,000,000 frames.
func TestFramesSplitBelowLimit(t *testing.T) {
	t.Parallel() // see main_test.go
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	var sent int64
	figures(t, "frames", srv, &sent)
	_, lg := startPipeline(t, otlpPipeline{Endpoint: srv.URL(), RateLimit: ingest.DefaultSamplesPerSecond})

	const depth, samples = 64, 3_000_000 / 64 // 46,875 samples of 64 frames
	sent = lg.send(t, 1, samples, depth)
	waitAllSeq(t, srv, sent, 2*time.Minute)

	st := srv.Stats()
	require.Zero(t, st.RequestsByStatus[http.StatusRequestEntityTooLarge], "no request may be answered 413")
	require.Equal(t, int64(3_000_000), st.FramesAccepted)
	require.GreaterOrEqual(t, st.AcceptedRequests, 3, "3,000,000 frames need at least 3 requests")
	for _, r := range srv.RecentRequests() {
		require.LessOrEqual(t, r.Frames, int64(ingest.DefaultMaxFrames), "a request above the frame limit: %+v", r)
	}
	require.Zero(t, st.Seq.Duplicates)
	require.Zero(t, st.EarlyRetries)
}

// TestOutageRecovers: the ingest drops connections, then answers 503, then
// recovers; every seq arrives once.
func TestOutageRecovers(t *testing.T) {
	t.Parallel() // see main_test.go
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	var sent int64
	figures(t, "outage", srv, &sent)
	_, lg := startPipeline(t, otlpPipeline{Endpoint: srv.URL(), RateLimit: ingest.DefaultSamplesPerSecond})

	srv.SetFault(ingest.Fault{DropAll: true})
	down := time.Now()
	sent = lg.send(t, 10, 500, 16)
	// Down for at least 3 s and until every batch was tried at least once.
	testenv.WaitFor(t, time.Minute, "dropped connections during the outage", func() (bool, error) {
		return srv.Dropped() >= 10 && time.Since(down) >= 3*time.Second, nil
	})
	const unavailable = 10
	srv.SetFault(ingest.Fault{UnavailableFirst: unavailable})
	testenv.WaitFor(t, time.Minute, "the 503 answers", func() (bool, error) {
		return srv.Fault().UnavailableFirst == 0, nil
	})
	waitAllSeq(t, srv, sent, 2*time.Minute)

	st := srv.Stats()
	require.Equal(t, unavailable, st.RequestsByStatus[http.StatusServiceUnavailable])
	require.GreaterOrEqual(t, st.Dropped, 10)
	require.Zero(t, st.Seq.Duplicates)
	require.Equal(t, sent, st.SamplesAccepted)
}

// TestRestartKeepsQueue: the ingest is down; the collector, with its sending
// queue on disk, accepts data and is killed with SIGKILL; started again on
// the same storage, it delivers everything once the ingest is back.
func TestRestartKeepsQueue(t *testing.T) {
	t.Parallel()                // see main_test.go
	port := testenv.FreePort(t) // the ingest's, down for now
	srv := ingest.New(ingest.Config{Addr: fmt.Sprintf("127.0.0.1:%d", port), Keys: []string{testKey}})
	var sent int64
	figures(t, "restart", srv, &sent)
	o := otlpPipeline{Port: testenv.FreePort(t), Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), RateLimit: ingest.DefaultSamplesPerSecond, StorageDir: t.TempDir()}

	first, lg := startPipeline(t, o)
	sent = lg.send(t, 10, 500, 16)
	// The exporter took data from the queue and failed to send it: some is
	// in flight when the collector is killed.
	testenv.WaitFor(t, 30*time.Second, "a failed send while the ingest is down", func() (bool, error) {
		return strings.Contains(first.Output(), "connection refused"), nil
	})
	first.Kill()

	startPipeline(t, o)
	require.NoError(t, srv.Start(), "the ingest double must come back on its port")
	t.Cleanup(srv.Close)
	waitAllSeq(t, srv, sent, 2*time.Minute)

	st := srv.Stats()
	require.Zero(t, st.Seq.Duplicates)
	require.Equal(t, sent, st.SamplesAccepted)
}
