package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// waitFor polls out until re matches, returning the submatches.
func waitFor(t *testing.T, out *testenv.SyncBuffer, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	require.Eventually(t, func() bool {
		m = re.FindStringSubmatch(out.String())
		return m != nil
	}, 10*time.Second, 10*time.Millisecond, "output so far:\n%s", out.String())
	return m
}

func post(t *testing.T, url, key string, b *ingest.RequestBuilder) int {
	t.Helper()
	body, err := b.MarshalProto()
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", ingest.ContentTypeProto)
	if key != "" {
		req.Header.Set(ingest.KeyHeader, key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func TestRunPrintsTopTable(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &testenv.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-key", "secret-1, secret-2", "-print-top", "100ms", "-top-services", "2", "-top-functions", "1"}, out)
	}()
	m := waitFor(t, out, regexp.MustCompile(`listening on (http://\S+) \(profiles: (\S+), stats`))
	require.Equal(t, m[1]+ingest.ProfilesPath, m[2])
	assert.Contains(t, out.String(), "accepting 2 configured key(s)")
	assert.NotContains(t, out.String(), "secret", "keys are never printed")

	b := ingest.NewRequestBuilder().
		Samples("checkout", 6, "runtime.mallocgc", "main.main").
		Samples("checkout", 3, "main.handle", "main.main").
		Samples("cart", 2, "cart.total").
		Samples("dockerd", 1, "x")
	require.Equal(t, http.StatusOK, post(t, m[2], "secret-2", b))
	require.Equal(t, http.StatusUnauthorized, post(t, m[2], "wrong", b))

	// The one accepted request lands in one window; wait for its table.
	table := waitFor(t, out, regexp.MustCompile(`(?s)nexovue-ingest \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC  busiest services in the last \S+: 12 samples \(\d+/s\) from 3 services\n(.*?)answers: [^\n]*\n`))
	lines := strings.Split(strings.TrimRight(table[1], " \n"), "\n")
	require.Len(t, lines, 8, table[0])
	assert.Regexp(t, `^\s+#\s+SERVICE, then its hottest functions \(leaf samples\)\s+SAMPLES\s+SHARE$`, lines[0])
	assert.Regexp(t, `^\s+1\s+checkout\s+9\s+75\.0%$`, lines[1])
	assert.Regexp(t, `^\s+runtime\.mallocgc\s+6\s+66\.7%$`, lines[2])
	assert.Regexp(t, `^\s+2\s+cart\s+2\s+16\.7%$`, lines[3])
	assert.Regexp(t, `^\s+cart\.total\s+2\s+100\.0%$`, lines[4])
	assert.Regexp(t, `^\s+\(1 more services\)\s+1\s+8\.3%$`, lines[5])
	assert.Equal(t, "  SHARE: a service's share of all samples; a function's share of its service's samples", lines[6])
	assert.Equal(t, "  linked to a span: 0 samples (0.0%)", lines[7])
	assert.NotContains(t, table[0], "main.handle", "one function per service")
	// Both answers may land in this window or the 401 in the next one.
	assert.Regexp(t, `answers: 200 x1(, 401 x1)?\n$`, table[0])

	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, out.String(), "nexovue-ingest: stopped; accepted 12 samples in 1 requests, 0 of them linked to a span")
	assert.NotContains(t, out.String(), "secret")
}

func TestRunWithoutKeyAcceptsAnyKey(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &testenv.SyncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-print-top", "0"}, out) }()
	m := waitFor(t, out, regexp.MustCompile(`profiles: (\S+), stats`))
	assert.Contains(t, out.String(), "accepting any non-empty x-nexovue-key")
	b := ingest.NewRequestBuilder().Sample("a", "f")
	assert.Equal(t, http.StatusOK, post(t, m[1], "whatever", b))
	assert.Equal(t, http.StatusUnauthorized, post(t, m[1], "", b))
	cancel()
	require.NoError(t, <-done)
	assert.NotContains(t, out.String(), "busiest services", "-print-top 0 prints no table")
}

func TestRunRejectsBadFlags(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-samples-per-second", "0"}, "-samples-per-second must be positive"},
		{[]string{"-max-frames", "-5"}, "-max-frames must be positive"},
		{[]string{"-retry-after", "0s"}, "-retry-after must be positive"},
		{[]string{"-print-top", "-1s"}, "-print-top must not be negative"},
		{[]string{"-top-services", "0"}, "-top-services must be positive"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-no-such-flag"}, "flag provided but not defined"},
		{[]string{"-listen", busy.Addr().String()}, "listen on " + busy.Addr().String()},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tc.args, &out)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
