// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package pprofreceiver

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/metadata"
	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/metadatatest"
)

func TestResourceAndScope(t *testing.T) {
	good := goodProfile(t)
	h := startHarness(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(good) },
		func(c *Config) { c.ServiceName = "checkout" })
	require.Eventually(t, func() bool { return len(h.sink.AllProfiles()) > 0 }, 10*time.Second, 5*time.Millisecond)
	pd := h.sink.AllProfiles()[0]

	u, err := url.Parse(h.url)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"service.name":   "checkout",
		"server.address": "127.0.0.1",
		"server.port":    int64(port),
	}, pd.ResourceProfiles().At(0).Resource().Attributes().AsRaw(), "no process.runtime.name: not a Go runtime profile")
	scope := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Scope()
	assert.Equal(t, metadata.ScopeName, scope.Name())
	prof := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0)
	assert.Empty(t, prof.OriginalPayloadFormat(), "original payload only on request")
	assert.Equal(t, 0, prof.OriginalPayload().Len())
}

func TestDefaultPortAndDeltaChoice(t *testing.T) {
	for _, tc := range []struct {
		endpoint  string
		delta     bool
		port      int64
		tracksOld bool
	}{
		{"http://checkout/debug/pprof/heap", true, 80, true},
		{"https://checkout/debug/pprof/heap", true, 443, true},
		{"http://checkout:6060/debug/pprof/allocs?seconds=10", true, 6060, false}, // the Go server computes the delta
		{"http://checkout:6060/debug/pprof/heap", false, 6060, false},
		// godeltaprof's endpoints serve deltas already
		{"http://checkout:6060/debug/pprof/delta_heap", true, 6060, false},
		{"http://checkout:6060/debug/pprof/delta_mutex", true, 6060, false},
		{"http://checkout:6060/debug/pprof/delta_block", true, 6060, false},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.Remote.Client.Endpoint = tc.endpoint
			cfg.Delta = tc.delta
			require.NoError(t, cfg.Validate())
			r, err := newReceiver(receivertest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
			require.NoError(t, err)
			assert.Equal(t, tc.tracksOld, r.tracker != nil)
			pd, commit, err := r.convert(goodProfile(t), time.Now())
			require.NoError(t, err)
			commit()
			v, ok := pd.ResourceProfiles().At(0).Resource().Attributes().Get("server.port")
			require.True(t, ok)
			assert.Equal(t, tc.port, v.Int())
		})
	}
}

func TestRedactedURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://scraper:s3cret@checkout:6060/debug/pprof/heap?seconds=5":         "https://checkout:6060/debug/pprof/heap?seconds=5",
		"http://checkout/debug/pprof/heap?gc=1&token=s3cret&debug=0":              "http://checkout/debug/pprof/heap?gc=1&token=REDACTED&debug=0",
		"http://checkout/debug/pprof/profile?X-Amz-Signature=s3cret&seconds=10&x": "http://checkout/debug/pprof/profile?X-Amz-Signature=REDACTED&seconds=10&x",
		"http://checkout/debug/pprof/heap?sig=a%3Db&debug":                        "http://checkout/debug/pprof/heap?sig=REDACTED&debug",
	} {
		u, err := url.Parse(in)
		require.NoError(t, err)
		assert.Equal(t, want, redactedURL(u))
	}
}

// TestLoggedURLHasNoQuerySecret: a failing scrape logs the URL with the
// values of query parameters other than seconds, gc and debug redacted.
func TestLoggedURLHasNoQuerySecret(t *testing.T) {
	h := startHarness(t, func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) },
		func(c *Config) { c.Remote.Client.Endpoint += "?gc=1&access_token=s3cret" })
	require.Eventually(t, func() bool { return len(h.failures()) > 0 }, 10*time.Second, 5*time.Millisecond)
	logged := h.failures()[0].ContextMap()["url"]
	assert.Equal(t, strings.TrimSuffix(h.url, "s3cret")+"REDACTED", logged)
	assert.NotContains(t, logged, "s3cret")
}

// TestGodeltaprofSentAsServed: godeltaprof's delta_heap serves its alloc_*
// types as differences already: each scrape is sent as it is served, the
// first one included, never differenced again.
func TestGodeltaprofSentAsServed(t *testing.T) {
	var n atomic.Int64
	h := startHarness(t, func(w http.ResponseWriter, _ *http.Request) {
		// alloc_space 100, 300, 600, ...: as cumulative counts these would
		// give deltas 200, 300, ...
		_, _ = w.Write(allocProfile(t, 100*n.Add(1)*(n.Load()+1)/2))
	}, func(c *Config) {
		c.Remote.Client.Endpoint = strings.Replace(c.Remote.Client.Endpoint, "/heap", "/delta_heap", 1)
	})
	require.Eventually(t, func() bool { return len(h.sink.AllProfiles()) >= 3 }, 10*time.Second, 5*time.Millisecond)
	for i, pd := range h.sink.AllProfiles()[:3] {
		prof := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0)
		assert.Equal(t, "alloc_space", pd.Dictionary().StringTable().At(int(prof.SampleType().TypeStrindex())))
		want := int64(100 * (i + 1) * (i + 2) / 2)
		assert.Equal(t, want, prof.Samples().At(0).Values().At(0), "scrape %d sent as served", i+1)
	}
}

// allocProfile is a profile with one alloc_space sample of value v.
func allocProfile(t *testing.T, v int64) []byte {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "main.alloc", Filename: "main.go"}
	loc := &profile.Location{ID: 1, Address: 0x1010, Line: []profile.Line{{Function: fn, Line: 7}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}},
		Sample:     []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{v}}},
		Location:   []*profile.Location{loc},
		Function:   []*profile.Function{fn},
	}
	var buf bytes.Buffer
	require.NoError(t, p.Write(&buf))
	return buf.Bytes()
}

func TestTelemetry(t *testing.T) {
	good := goodProfile(t)
	ft := &fakeTarget{handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(good) }}
	srv := httptest.NewServer(ft)
	defer srv.Close()

	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	cfg := createDefaultConfig().(*Config)
	cfg.Remote.Client.Endpoint = srv.URL + "/debug/pprof/heap"
	r, err := newReceiver(metadatatest.NewSettings(tt), cfg, consumertest.NewNop())
	require.NoError(t, err)
	r.client = srv.Client()
	defer func() { require.NoError(t, r.Shutdown(context.Background())) }()

	ctx := context.Background()
	r.scrapeAndReport(ctx)
	r.scrapeAndReport(ctx)
	ft.set(func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) })
	r.scrapeAndReport(ctx)

	metadatatest.AssertEqualReceiverPprofScrapes(t, tt, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualReceiverPprofSamples(t, tt, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualReceiverPprofScrapeErrors(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
}
