package pprofreceiver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

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
	u, err := url.Parse("https://scraper:s3cret@checkout:6060/debug/pprof/heap?seconds=5")
	require.NoError(t, err)
	assert.Equal(t, "https://checkout:6060/debug/pprof/heap?seconds=5", redactedURL(u))
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
