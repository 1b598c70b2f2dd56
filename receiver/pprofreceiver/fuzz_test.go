// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package pprofreceiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/metadata"
	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/pproftest"
)

// answer is what the fuzzed target sends.
type answer struct {
	status          int
	contentType     string
	contentEncoding string
	body            []byte
}

// fuzzLimit is max_body_size in FuzzScrape: small, so that bombs are cheap.
const fuzzLimit = 64 << 10

// FuzzScrape runs one scrape, through the receiver's real HTTP client,
// against a target answering a fuzzed status, Content-Type,
// Content-Encoding and body. Whatever it answers, the scrape returns (no
// panic), and it only succeeds within the bounds: a 200 status, every layer
// of the body (as sent, after the transport's Content-Encoding, after our
// gunzip) at most max_body_size, and no gzip nested inside the gzip we
// remove. Seeds are below and in testdata/fuzz/FuzzScrape.
func FuzzScrape(f *testing.F) {
	good := goodProfile(f)
	f.Add(200, "application/octet-stream", "", good)
	f.Add(200, "application/octet-stream", "gzip", pproftest.Gzip(f, good))
	f.Add(200, "", "", pproftest.Gzip(f, pproftest.Gzip(f, make([]byte, 4*fuzzLimit))))
	f.Add(200, "", "gzip", pproftest.Gzip(f, pproftest.Gzip(f, make([]byte, 4*fuzzLimit))))
	f.Add(200, "text/html; charset=utf-8", "", []byte("<html>login</html>"))
	f.Add(404, "text/plain", "", []byte("404 page not found"))
	f.Add(302, "", "", []byte{})
	f.Add(200, "", "", make([]byte, fuzzLimit+1))

	var cur atomic.Pointer[answer]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		a := cur.Load()
		if a.contentType != "" {
			w.Header().Set("Content-Type", a.contentType)
		}
		if a.contentEncoding != "" {
			w.Header().Set("Content-Encoding", a.contentEncoding)
		}
		w.Header().Set("Location", "http://elsewhere.invalid/")
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
	}))
	f.Cleanup(srv.Close)

	f.Fuzz(func(t *testing.T, status int, contentType, contentEncoding string, body []byte) {
		if status < 200 || status > 599 {
			status = 200 + (status%400+400)%400 // net/http refuses other codes
		}
		a := &answer{status: status, contentType: contentType, contentEncoding: contentEncoding, body: body}
		cur.Store(a)

		cfg := createDefaultConfig().(*Config)
		cfg.Remote.Client.Endpoint = srv.URL + "/debug/pprof/heap"
		cfg.Remote.Client.Timeout = 10 * time.Second
		cfg.Remote.MaxBodySize = fuzzLimit
		sink := new(consumertest.ProfilesSink)
		r, err := newReceiver(receivertest.NewNopSettings(metadata.Type), cfg, sink)
		require.NoError(t, err)
		require.NoError(t, r.buildClient(context.Background(), nil))
		defer r.telemetry.Shutdown()

		_, err = r.scrape(context.Background())
		if err != nil {
			require.Empty(t, sink.AllProfiles(), "a failed scrape delivers nothing")
			return
		}
		require.Equal(t, http.StatusOK, status, "only a 200 is a profile")
		payload := body
		if strings.EqualFold(strings.TrimSpace(contentEncoding), "gzip") {
			// Go's transport removed this layer (it asked for gzip).
			payload, err = gunzipAtMost(body, fuzzLimit)
			require.NoError(t, err, "a Content-Encoding layer over max_body_size was accepted")
		} else {
			require.LessOrEqual(t, len(body), fuzzLimit, "a body over max_body_size was accepted")
		}
		if isGzip(payload) {
			payload, err = gunzipAtMost(payload, fuzzLimit)
			require.NoError(t, err, "a gzip layer over max_body_size was accepted")
		}
		require.False(t, isGzip(payload), "gzip nested inside gzip was accepted")
	})
}

func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

var errOverLimit = errors.New("over the limit")

// gunzipAtMost gunzips b, failing if the result is longer than limit.
func gunzipAtMost(b []byte, limit int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, errOverLimit
	}
	return out, nil
}
