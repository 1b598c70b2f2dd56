//go:build bench

package bench

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
)

// benchKey is the ingest key of every benchmark pipeline.
const benchKey = "bench-key"

// sink is the nexovue ingest double (tests/ingest) served in-process with
// the bytes of every request body counted as they arrive on the wire
// (compressed, as the exporter sent them).
type sink struct {
	*ingest.Server
	url    string
	bytes  atomic.Int64
	served chan struct{} // a token after each request
}

// startSink serves the double with the rate limit off and the given frame
// limit (0: the ingest's default).
func startSink(t *testing.T, maxFrames int64) *sink {
	t.Helper()
	s := &sink{
		Server: ingest.New(ingest.Config{Keys: []string{benchKey}, SamplesPerSecond: 1 << 50, MaxFrames: maxFrames}),
		served: make(chan struct{}, 1),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &countingReader{r: r.Body, n: &s.bytes}
		s.Server.ServeHTTP(w, r)
		select {
		case s.served <- struct{}{}:
		default:
		}
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	s.url = "http://" + ln.Addr().String()
	return s
}

// waitSamples waits until the double has accepted at least n samples in
// all, at most d; it reports whether it did.
func (s *sink) waitSamples(n int64, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for s.SamplesAccepted() < n {
		select {
		case <-s.served:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return s.SamplesAccepted() >= n
		}
	}
	return true
}

// counters is a reading of what the double received: samples are Sample
// messages (records, what the rate limit counts), taken the samples as the
// profiler took them (timestamps; ingest.TakenCount), which do not depend on
// how a pipeline packs them into records.
type counters struct {
	samples, taken, bytes int64
	requests              int
}

func (s *sink) counters() counters {
	return counters{samples: s.SamplesAccepted(), taken: s.SamplesTaken(), bytes: s.bytes.Load(), requests: s.Requests(http.StatusOK)}
}

type countingReader struct {
	r io.ReadCloser
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }
