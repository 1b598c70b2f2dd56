package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
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
	t.Parallel() // see main_test.go
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

	// Each batch is sent once its predecessor was answered, so each is its
	// own request.
	const batches = 5
	for i := 1; i <= batches; i++ {
		sent += lg.send(t, 1, 200, 16)
		testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("the 401 of batch %d", i), func() (bool, error) {
			return srv.Requests(http.StatusUnauthorized) >= i, nil
		})
	}
	// A retry of the last batch would be due within the configured backoff
	// (max_interval 1s, plus jitter): wait, on the double's clock, until that
	// has passed, then make the next export attempt and wait for it. Every
	// request before it must be one of the batches: none was retried.
	const retryDue = 2 * time.Second
	last := srv.RecentRequests()[len(srv.RecentRequests())-1].Time
	testenv.WaitFor(t, 30*time.Second, "the last batch's retry to fall due", func() (bool, error) {
		return time.Since(last) > retryDue, nil
	})
	sent += lg.send(t, 1, 200, 16)
	testenv.WaitFor(t, 30*time.Second, "the 401 of the next export attempt", func() (bool, error) {
		return srv.Requests(http.StatusUnauthorized) >= batches+1, nil
	})

	st := srv.Stats()
	require.Equal(t, batches+1, st.RequestsByStatus[http.StatusUnauthorized], "each batch must be sent once: a rejected key is not retried")
	require.Equal(t, batches+1, st.Dropped+sumStatuses(st.RequestsByStatus), "no other request may reach the ingest")
	reqs := srv.RecentRequests()
	require.GreaterOrEqual(t, reqs[len(reqs)-1].Time.Sub(reqs[len(reqs)-2].Time), retryDue,
		"no request between the last batch and the next export attempt, which came after its retry was due")
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
	t.Parallel() // see main_test.go
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
