// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter/internal/metadatatest"
	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
)

// testKey is the ingest key of the tests; it must never show up in logs,
// errors or telemetry.
const testKey = "nxv-SECRET-test-key-4f1c9a"

// received is one request as the fake ingest saw it.
type received struct {
	at      time.Time
	header  http.Header
	path    string
	pd      pprofile.Profiles
	samples int
	status  int
}

// reply is the fake ingest's answer to one request.
type reply struct {
	status int
	header map[string]string
	ctype  string
	body   []byte
}

// fakeIngest is an httptest server that decodes and records every request
// and answers with answer(i, request) (200 when answer is nil).
type fakeIngest struct {
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []received
	answer func(i int, r *received) reply
}

func newFakeIngest(t *testing.T, answer func(i int, r *received) reply) *fakeIngest {
	f := &fakeIngest{answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeIngest) serve(w http.ResponseWriter, r *http.Request) {
	rec := received{at: time.Now(), header: r.Header.Clone(), path: r.URL.Path}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := pprofileotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec.pd = req.Profiles()
	rec.samples = rec.pd.SampleCount()

	f.mu.Lock()
	i := len(f.reqs)
	f.reqs = append(f.reqs, rec)
	f.mu.Unlock()

	rp := reply{status: http.StatusOK}
	if f.answer != nil {
		rp = f.answer(i, &rec)
	}
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	if rp.ctype != "" {
		w.Header().Set("Content-Type", rp.ctype)
	}
	f.mu.Lock()
	f.reqs[i].status = rp.status
	f.mu.Unlock()
	w.WriteHeader(rp.status)
	_, _ = w.Write(rp.body)
}

func (f *fakeIngest) requests() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.reqs...)
}

// accepted returns the sorted resolved samples of every 2xx request.
func (f *fakeIngest) accepted() []string {
	var out []string
	for _, r := range f.requests() {
		if r.status >= 200 && r.status <= 299 {
			out = append(out, profilesplit.ResolveSamples(r.pd, 0)...)
		}
	}
	slices.Sort(out)
	return out
}

// harness is an exporter created through the factory, with observed logs
// and an in-memory meter.
type harness struct {
	exp   xexporter.Profiles
	inner *nexovueExporter
	tel   *componenttest.Telemetry
	logs  *observer.ObservedLogs
}

// testConfig is a config against url with the test key, no queue (so
// ConsumeProfiles returns the outcome), fast retries and pacing off.
func testConfig(url string) *Config {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = url
	cfg.Key = testKey
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 50 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = 20 * time.Second
	cfg.RateLimit.SamplesPerSecond = 0
	return cfg
}

func newHarness(t *testing.T, cfg *Config) *harness {
	t.Helper()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	return newHarnessWith(t, cfg, tel, "")
}

// newHarnessWith starts an exporter named nexovue/<name> (nexovue when name
// is empty) that records into tel; the caller shuts tel down.
func newHarnessWith(t *testing.T, cfg *Config, tel *componenttest.Telemetry, name string) *harness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	set := metadatatest.NewSettings(tel)
	set.ID = component.NewIDWithName(set.ID.Type(), name)
	set.Logger = zap.New(core)
	exp, err := NewFactory().(xexporter.Factory).CreateProfiles(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	h := &harness{exp: exp, inner: exp.(*profilesExporter).exp, tel: tel, logs: logs}
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return h
}

// intSum adds up the data points of an int64 sum whose attributes include attrs.
func (h *harness) intSum(t *testing.T, name string, attrs ...attribute.KeyValue) int64 {
	return metricSum[int64](t, h.tel, name, attrs)
}

// floatSum adds up the data points of a float64 sum whose attributes include attrs.
func (h *harness) floatSum(t *testing.T, name string, attrs ...attribute.KeyValue) float64 {
	return metricSum[float64](t, h.tel, name, attrs)
}

func metricSum[N int64 | float64](t *testing.T, tel *componenttest.Telemetry, name string, attrs []attribute.KeyValue) N {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0 // not recorded yet
	}
	var total N
	for _, dp := range m.Data.(metricdata.Sum[N]).DataPoints {
		if hasAttrs(dp.Attributes, attrs) {
			total += dp.Value
		}
	}
	return total
}

func hasAttrs(set attribute.Set, attrs []attribute.KeyValue) bool {
	for _, kv := range attrs {
		v, ok := set.Value(kv.Key)
		if !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// logText is every observed log entry, message and fields, as text.
func (h *harness) logText() string {
	var b strings.Builder
	for _, e := range h.logs.All() {
		fmt.Fprintf(&b, "%s %s %v\n", e.Level, e.Message, e.ContextMap())
	}
	return b.String()
}

// telemetryText is every metric and span the exporter produced, as text.
func (h *harness) telemetryText(t *testing.T) string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.tel.Reader.Collect(context.Background(), &rm))
	var b strings.Builder
	fmt.Fprintf(&b, "%+v\n", rm)
	for _, s := range h.tel.SpanRecorder.Ended() {
		fmt.Fprintf(&b, "%s %v %v %v\n", s.Name(), s.Attributes(), s.Events(), s.Status())
	}
	return b.String()
}

// batch generates a realistic eBPF-like batch whose samples carry their ordinal.
func batch(samples int, seed uint64) pprofile.Profiles {
	return profilegen.Generate(profilegen.Config{Samples: samples, Seq: true, Seed: seed, Resources: 4, Stacks: 40, Depth: 24})
}

// gunzip is used by tests that look at a body directly.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	return out
}
