package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// TestBadKeyLoggedOnceNotRetried: the ingest answers 401 to a wrong key.
// The collector says once (within a minute) that the key was rejected and to
// check NEXOVUE_KEY, sends each batch once (no retry loop), and never writes
// the key.
func TestBadKeyLoggedOnceNotRetried(t *testing.T) {
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	var sent int64
	figures(t, "bad-key", srv, &sent)

	b := make([]byte, 12)
	_, err := rand.Read(b)
	require.NoError(t, err)
	wrongKey := "nxk-wrong-" + hex.EncodeToString(b)

	port := testenv.FreePort(t)
	cfg := otlpPipeline{Port: port, Endpoint: srv.URL(), RateLimit: ingest.DefaultSamplesPerSecond}.write(t, t.TempDir())
	p := testenv.StartCollector(t, cfg, testenv.CollectorOptions{Env: collectorEnv(wrongKey)})
	lg := newLoadgen(port)

	const batches = 5
	for range batches {
		sent += lg.send(t, 1, 200, 16)
		time.Sleep(300 * time.Millisecond)
	}
	testenv.WaitFor(t, 30*time.Second, "a 401 for every batch", func() (bool, error) {
		return srv.Requests(http.StatusUnauthorized) >= batches, nil
	})
	// Enough for several retries at the configured 100ms..1s backoff.
	time.Sleep(3 * time.Second)

	st := srv.Stats()
	require.Equal(t, batches, st.RequestsByStatus[http.StatusUnauthorized], "each batch must be sent once: a rejected key is not retried")
	require.Equal(t, batches, st.Dropped+sumStatuses(st.RequestsByStatus), "no other request may reach the ingest")
	require.Zero(t, st.SamplesAccepted)

	out := p.Output()
	require.NotContains(t, out, wrongKey, "the key must never be written")
	require.Equal(t, 1, countLines(out, "rejected the ingest key", "NEXOVUE_KEY"),
		"the rejected key must be logged once a minute at most (each line that says so counts):\n%s", rejectionLines(out))
}

// TestBadFormatLogged: the ingest answers 400 naming a table index (a
// profiles format it does not read); the log carries the ingest's message
// and which format this build sends (Collector 0.161.0).
func TestBadFormatLogged(t *testing.T) {
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	var sent int64
	figures(t, "bad-format", srv, &sent)
	const message = "invalid stack_table index 57 (table has 12 entries) at resource_profiles[0].scope_profiles[0].profiles[0].samples[3].stack_index"
	srv.SetFault(ingest.Fault{FixedStatus: http.StatusBadRequest, FixedBody: message})

	p, lg := startPipeline(t, otlpPipeline{Endpoint: srv.URL(), RateLimit: ingest.DefaultSamplesPerSecond})
	sent = lg.send(t, 1, 200, 16)
	testenv.WaitFor(t, 30*time.Second, "the refusal in the collector's log", func() (bool, error) {
		return strings.Contains(p.Output(), "HTTP 400"), nil
	})

	out := p.Output()
	require.Positive(t, countLines(out, message, "Collector 0.161.0", "profiles format"),
		"a log line must carry the ingest's message, the format this build sends (Collector 0.161.0) and the hint:\n%s", rejectionLines(out))
	require.Equal(t, 1, srv.Requests(http.StatusBadRequest), "a 400 is not retried")
}

func sumStatuses(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// rejectionLines returns the collector's error lines, for failure messages.
func rejectionLines(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "\terror\t") || strings.Contains(l, "\twarn\t") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
