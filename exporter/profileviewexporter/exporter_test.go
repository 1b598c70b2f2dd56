// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	for _, tc := range []struct {
		id      string
		check   func(*testing.T, *Config)
		wantErr string
	}{
		{id: "profileview", check: func(t *testing.T, c *Config) {
			assert.Equal(t, DefaultEndpoint, c.NetAddr.Endpoint)
			assert.Equal(t, DefaultWindow, c.Window)
			assert.Equal(t, DefaultMaxMemoryMiB, c.MaxMemoryMiB)
			assert.Equal(t, DefaultMaxConcurrentRenders, c.MaxConcurrentRenders)
			assert.Equal(t, int64(DefaultMaxProfileBytes), c.MaxProfileBytes)
			assert.Equal(t, int64(DefaultMaxRequestBytes), c.MaxRequestBodySize)
		}},
		{id: "profileview/custom", check: func(t *testing.T, c *Config) {
			assert.Equal(t, "0.0.0.0:4391", c.NetAddr.Endpoint)
			assert.Equal(t, 10*time.Minute, c.Window)
			assert.Equal(t, 64, c.MaxMemoryMiB)
			assert.Equal(t, 4, c.MaxConcurrentRenders)
		}},
		{id: "profileview/bad_window", wantErr: "window: 10s is outside 1m to 24h"},
		{id: "profileview/bad_memory", wantErr: "max_memory_mib: 1 is below 8"},
		{id: "profileview/bad_renders", wantErr: "max_concurrent_renders: 0 must be at least 1"},
		{id: "profileview/unknown_key", wantErr: "has invalid keys: windw"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(tc.id)
			require.NoError(t, err)
			err = sub.Unmarshal(&cfg)
			if err == nil {
				err = cfg.(*Config).Validate()
			}
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.check(t, cfg.(*Config))
		})
	}
}

func newTestView(t testing.TB, cfg *Config) (*view, *httptest.Server) {
	if cfg == nil {
		cfg = NewFactory().CreateDefaultConfig().(*Config)
	}
	set := exportertest.NewNopSettings(typ)
	core, _ := observer.New(zap.InfoLevel)
	set.Logger = zap.New(core)
	v, err := newView(cfg, set)
	require.NoError(t, err)
	srv := httptest.NewServer(v.handler())
	t.Cleanup(srv.Close)
	return v, srv
}

func get(t testing.TB, u string) (int, string) {
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

var (
	traceID = pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	spanID  = pcommon.SpanID{1, 1, 2, 3, 5, 8, 13, 21}
)

// TestIndexFlameGraphDownload: two services on one host, the busier first;
// on-CPU and off-CPU kept apart; pprof's flame graph served for one; the
// download opens with the profile package, keeps the inlined call, lines and
// the span link as labels.
func TestIndexFlameGraphDownload(t *testing.T) {
	v, srv := newTestView(t, nil)
	now := time.Now()
	b := newBatch()
	cpu := b.profile("busy", "host-a", "samples", "count", 50_000_000)
	hot := b.stack("main.hot+main.inlined", "main.main")
	b.samples(cpu, hot, 30, now, traceID, spanID)
	b.samples(cpu, b.stack("main.cold", "main.main"), 5, now, pcommon.TraceID{}, pcommon.SpanID{})
	off := b.profile("busy", "host-a", "off_cpu", "nanoseconds", 0)
	s := off.Samples().AppendEmpty()
	s.SetStackIndex(b.stack("runtime.futex", "main.main"))
	s.Values().Append(7_000_000)
	s.TimestampsUnixNano().Append(uint64(now.UnixNano()))
	idle := b.profile("idle", "host-b", "samples", "count", 50_000_000)
	b.samples(idle, b.stack("idle.loop"), 3, now, pcommon.TraceID{}, pcommon.SpanID{})
	require.NoError(t, v.consume(context.Background(), b.pd))

	code, body := get(t, srv.URL+"/")
	require.Equal(t, http.StatusOK, code, body)
	busy, idleAt := strings.Index(body, `data-service="busy"`), strings.Index(body, `data-service="idle"`)
	require.True(t, busy >= 0 && idleAt > busy, "busy before idle in:\n%s", body)
	assert.Contains(t, body, `data-type="samples_count"`)
	assert.Contains(t, body, `data-type="off_cpu_nanoseconds"`)
	assert.Contains(t, body, "92.1%") // 35 of 38 samples of the same period

	code, body = get(t, srv.URL+uiPath("busy", "samples_count", nil)+"flamegraph")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "main.hot")
	code, body = get(t, srv.URL+uiPath("busy", "samples_count", nil)+"top")
	require.Equal(t, http.StatusOK, code, body)
	code, _ = get(t, srv.URL+uiPath("busy", "samples_count", nil)+"saveconfig")
	assert.Equal(t, http.StatusNotFound, code)

	code, body = get(t, srv.URL+downloadPath("busy", "samples_count", nil))
	require.Equal(t, http.StatusOK, code, body)
	p, err := profile.Parse(bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	require.Len(t, p.SampleType, 2)
	assert.Equal(t, "cpu", p.SampleType[1].Type)
	var hotSamples, linked int64
	for _, s := range p.Sample {
		if s.Location[0].Line[0].Function.Name == "main.hot" {
			hotSamples += s.Value[0]
			require.Len(t, s.Location[0].Line, 2, "the inlined call")
			assert.Equal(t, "main.inlined", s.Location[0].Line[1].Function.Name)
			assert.Equal(t, int64(10), s.Location[0].Line[0].Line)
			assert.Equal(t, []string{traceID.String()}, s.Label[traceIDLabel])
			assert.Equal(t, []string{spanID.String()}, s.Label[spanIDLabel])
			assert.Equal(t, 30*int64(50_000_000), s.Value[1])
			linked++
		}
	}
	assert.Equal(t, int64(30), hotSamples)
	assert.Equal(t, int64(1), linked)

	// Off-CPU is its own profile: nanoseconds, never samples.
	code, body = get(t, srv.URL+downloadPath("busy", "off_cpu_nanoseconds", nil))
	require.Equal(t, http.StatusOK, code, body)
	p, err = profile.Parse(strings.NewReader(body))
	require.NoError(t, err)
	require.Len(t, p.Sample, 1)
	assert.Equal(t, "off_cpu", p.SampleType[0].Type)
	assert.Equal(t, int64(7_000_000), p.Sample[0].Value[0])

	// Filter by host: only idle.
	code, body = get(t, srv.URL+"/?"+url.Values{"host.name": {"host-b"}}.Encode())
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `data-service="idle"`)
	assert.NotContains(t, body, `data-service="busy"`)
	code, _ = get(t, srv.URL+downloadPath("busy", "samples_count", url.Values{"host.name": {"host-b"}}))
	assert.Equal(t, http.StatusNotFound, code)
	code, body = get(t, srv.URL+"/?last=banana")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "last: &#34;banana&#34; is not a positive duration")
}

// TestTimeRange: a selection of the last minute leaves out what came four
// minutes ago; the whole window has both.
func TestTimeRange(t *testing.T) {
	v, srv := newTestView(t, nil)
	now := time.Now()
	b := newBatch()
	p := b.profile("svc", "", "samples", "count", 1)
	b.samples(p, b.stack("old.fn"), 4, now.Add(-4*time.Minute), pcommon.TraceID{}, pcommon.SpanID{})
	b.samples(p, b.stack("new.fn"), 2, now, pcommon.TraceID{}, pcommon.SpanID{})
	require.NoError(t, v.consume(context.Background(), b.pd))
	top := func(q url.Values) string {
		code, body := get(t, srv.URL+uiPath("svc", "samples_count", q)+"top")
		require.Equal(t, http.StatusOK, code, body)
		return body
	}
	all := top(nil)
	assert.Contains(t, all, "old.fn")
	assert.Contains(t, all, "new.fn")
	last := top(url.Values{"last": {"1m"}})
	assert.NotContains(t, last, "old.fn")
	assert.Contains(t, last, "new.fn")
}

// TestMalformedAndHugeDropped: a profile referring outside the dictionary and
// one over max_profile_bytes are dropped, counted and logged; the rest of
// the batch is kept and the page still serves.
func TestMalformedAndHugeDropped(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.MaxProfileBytes = 4096
	set := exportertest.NewNopSettings(typ)
	core, logs := observer.New(zap.InfoLevel)
	set.Logger = zap.New(core)
	v, err := newView(cfg, set)
	require.NoError(t, err)
	srv := httptest.NewServer(v.handler())
	defer srv.Close()

	b := newBatch()
	ok := b.profile("good", "", "samples", "count", 1)
	b.samples(ok, b.stack("good.fn"), 1, time.Now(), pcommon.TraceID{}, pcommon.SpanID{})
	bad := b.profile("bad", "", "samples", "count", 1)
	bad.Samples().AppendEmpty().SetStackIndex(999)
	huge := b.profile("huge", "", "samples", "count", 1)
	for i := range 200 {
		b.valued(huge, b.stack(fnName(i), "a", "b", "c"), 1)
	}
	res := v.store.ingest(b.pd, cfg.MaxProfileBytes)
	assert.Equal(t, int64(1), res.kept)
	assert.Equal(t, int64(1), res.malformed)
	assert.Equal(t, int64(200), res.tooLarge)
	require.Len(t, res.reasons, 2)
	assert.Contains(t, res.reasons[0], `malformed profile of service "bad": sample 0: stack_index 999 outside the stack table`)
	assert.Contains(t, res.reasons[1], `profile of service "huge" too large`)

	require.NoError(t, v.consume(context.Background(), b.pd))
	require.Equal(t, 1, logs.FilterMessageSnippet("Profile view dropped profiles").Len())
	code, body := get(t, srv.URL+"/")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `data-service="good"`)
	assert.NotContains(t, body, `data-service="bad"`)
}

// TestMemoryCapDropsOldestSlots: over the cap, the oldest time slots go and
// are counted; the newest stays.
func TestMemoryCapDropsOldestSlots(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	st := newStore(5*time.Minute, 1<<20, func() time.Time { return now })
	var dropped, kept int64
	for m := range 50 {
		now = now.Add(10 * time.Second)
		b := newBatch()
		p := b.profile("svc", "", "samples", "count", 1)
		for i := range 100 {
			b.samples(p, b.stack(fnName(m*100+i), "main"), 1, now, pcommon.TraceID{}, pcommon.SpanID{})
		}
		res := st.ingest(b.pd, DefaultMaxProfileBytes)
		dropped += res.memoryCap
		kept += res.kept
		require.LessOrEqual(t, st.bytes, int64(1<<20)+st.slots[len(st.slots)-1].bytes)
	}
	assert.Positive(t, dropped)
	assert.Equal(t, int64(5000), kept)
	var held int64
	for _, sl := range st.slots {
		held += sl.samples
	}
	assert.Equal(t, kept-dropped, held, "what is held is what was kept less what the cap dropped (the window did not move past any slot)")
}

// TestRenderLimit: with every render slot taken, a page is 503 with
// Retry-After, not queued.
func TestRenderLimit(t *testing.T) {
	v, srv := newTestView(t, nil)
	for range cap(v.renders) {
		v.renders <- struct{}{}
	}
	resp, err := http.Get(srv.URL + uiPath("x", "samples_count", nil) + "flamegraph")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	code, _ := get(t, srv.URL+"/?"+strings.Repeat("a", maxQueryBytes+1))
	assert.Equal(t, http.StatusRequestURITooLong, code)
}

// TestLifecycleAndNonLoopbackWarning starts the exporter through its factory
// on every interface: it warns that profiles reveal code paths, and serves.
func TestLifecycleAndNonLoopbackWarning(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = "0.0.0.0:0"
	set := exportertest.NewNopSettings(typ)
	core, logs := observer.New(zap.InfoLevel)
	set.Logger = zap.New(core)
	exp, err := NewFactory().(xexporter.Factory).CreateProfiles(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	warn := logs.FilterMessageSnippet("profiles reveal code paths and process details")
	require.Equal(t, 1, warn.Len())
	serving := logs.FilterMessageSnippet("Profile view serving").All()
	require.Len(t, serving, 1)
	u := serving[0].ContextMap()["url"].(string)
	code, body := get(t, strings.Replace(u, "0.0.0.0", "127.0.0.1", 1)+"?")
	assert.Equal(t, http.StatusOK, code, body)
	require.NoError(t, exp.Shutdown(context.Background()))

	cfg.NetAddr.Endpoint = "127.0.0.1:0"
	core, logs = observer.New(zap.InfoLevel)
	set.Logger = zap.New(core)
	exp, err = NewFactory().(xexporter.Factory).CreateProfiles(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	assert.Equal(t, 0, logs.FilterMessageSnippet("profiles reveal").Len())
	require.NoError(t, exp.Shutdown(context.Background()))
}
