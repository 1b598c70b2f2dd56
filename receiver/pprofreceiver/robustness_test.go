// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package pprofreceiver

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/metadata"
	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/pproftest"
)

// goodProfile returns a small valid gzipped pprof heap-like profile.
func goodProfile(t testing.TB) []byte {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "main.work", SystemName: "main.work", Filename: "main.go", StartLine: 3}
	m := &profile.Mapping{ID: 1, Start: 0x1000, Limit: 0x2000, File: "/bin/app", BuildID: "abc"}
	loc := &profile.Location{ID: 1, Mapping: m, Address: 0x1010, Line: []profile.Line{{Function: fn, Line: 7}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "inuse_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:     512 * 1024,
		TimeNanos:  time.Now().UnixNano(),
		Sample:     []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{4096}}},
		Mapping:    []*profile.Mapping{m},
		Location:   []*profile.Location{loc},
		Function:   []*profile.Function{fn},
	}
	var buf bytes.Buffer
	require.NoError(t, p.Write(&buf))
	return buf.Bytes()
}

type fakeTarget struct {
	mu       sync.Mutex
	handler  http.HandlerFunc
	requests atomic.Int64
	inFlight atomic.Int64
	maxIn    atomic.Int64
}

func (f *fakeTarget) set(h http.HandlerFunc) {
	f.mu.Lock()
	f.handler = h
	f.mu.Unlock()
}

func (f *fakeTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxIn.Load()
		if n <= m || f.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	f.mu.Lock()
	h := f.handler
	f.mu.Unlock()
	h(w, r)
}

type harness struct {
	target *fakeTarget
	sink   *consumertest.ProfilesSink
	logs   *observer.ObservedLogs
	r      *pprofReceiver
	url    string
}

func startHarness(t *testing.T, h http.HandlerFunc, tweak func(*Config)) *harness {
	t.Helper()
	ft := &fakeTarget{handler: h}
	srv := httptest.NewServer(ft)
	t.Cleanup(srv.Close)

	cfg := createDefaultConfig().(*Config)
	cfg.Remote.Client.Endpoint = srv.URL + "/debug/pprof/heap"
	cfg.Remote.CollectionInterval = 20 * time.Millisecond
	cfg.Remote.Client.Timeout = 2 * time.Second
	if tweak != nil {
		tweak(cfg)
	}
	// The tests scrape every few milliseconds to run quickly, below the
	// minimum collection_interval a user may set: all else is validated.
	valid := *cfg
	valid.Remote.CollectionInterval = max(cfg.Remote.CollectionInterval, minCollectionInterval)
	require.NoError(t, valid.Validate())

	sink := new(consumertest.ProfilesSink)
	r, logs := startObserved(t, cfg, sink)
	return &harness{target: ft, sink: sink, logs: logs, r: r, url: cfg.Remote.Client.Endpoint}
}

// startObserved starts a receiver whose logs are observed; it is shut down
// when the test ends.
func startObserved(t *testing.T, cfg *Config, next xconsumer.Profiles) (*pprofReceiver, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	r, err := newReceiver(set, cfg, next)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, r.Shutdown(context.Background())) })
	return r, logs
}

// failures returns the logged scrape failures.
func (h *harness) failures() []observer.LoggedEntry {
	return h.logs.FilterMessage("pprof scrape failed").All()
}

func TestBadTargets(t *testing.T) {
	good := goodProfile(t)
	bomb := pproftest.Gzip(t, make([]byte, 4<<20)) // 4 MiB of zeros, a few KiB compressed
	// 64 MiB of zeros gzipped twice: a 404-byte body.
	nestedBomb := pproftest.Gzip(t, pproftest.Gzip(t, make([]byte, 64<<20)))
	require.Less(t, len(nestedBomb), 1024)

	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		tweak   func(*Config)
		reason  string
	}{
		{"404", func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) }, nil, "unexpected HTTP status 404 Not Found"},
		{"html page", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte("<html><body>login</body></html>"))
		}, nil, "HTML page"},
		{"html without content type", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write([]byte("<!doctype html><html><body>hello</body></html>"))
		}, nil, "not a valid pprof profile"},
		{"truncated gzip", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(good[:len(good)/2]) }, nil, "gzip"},
		{"corrupt gzip", func(w http.ResponseWriter, _ *http.Request) {
			bad := bytes.Clone(good)
			for i := 12; i < len(bad)-8; i++ {
				bad[i] ^= 0x5a
			}
			_, _ = w.Write(bad)
		}, nil, "gzip"},
		{"not pprof", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte{0x0a, 0xff, 0xff, 0x01}) }, nil, "not a valid pprof profile"},
		{"empty body", func(http.ResponseWriter, *http.Request) {}, nil, "not a valid pprof profile: empty profile"},
		{"body over max_body_size", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(make([]byte, 2048)) },
			func(c *Config) { c.Remote.MaxBodySize = 1024 }, "body larger than remote::max_body_size (1024 bytes)"},
		{"decompression bomb", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(bomb) },
			func(c *Config) { c.Remote.MaxBodySize = 1 << 20 }, "decompressed body larger than remote::max_body_size"},
		{"nested gzip", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(nestedBomb) },
			func(c *Config) { c.Remote.MaxBodySize = 1 << 20 }, "body refused: gzip inside gzip"},
		{"nested gzip under content-encoding", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(pproftest.Gzip(t, nestedBomb))
		}, func(c *Config) { c.Remote.MaxBodySize = 1 << 20 }, "body refused: gzip inside gzip"},
		{"redirect to another host", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://localhost:1/debug/pprof/heap", http.StatusFound)
		}, nil, "unexpected HTTP status 302 Found: redirects are followed only to the same scheme, host and port"},
		{"content-encoding bomb", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(bomb)
		}, func(c *Config) { c.Remote.MaxBodySize = 1 << 20 }, "body larger than remote::max_body_size (1048576 bytes)"},
		{"slow", func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, func(c *Config) { c.Remote.Client.Timeout = 50 * time.Millisecond }, "request timed out after 50ms (remote::timeout)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHarness(t, tc.handler, tc.tweak)
			// Failures are logged once per scrape, and scraping goes on.
			require.Eventually(t, func() bool { return len(h.failures()) >= 3 }, 10*time.Second, 5*time.Millisecond)
			for _, e := range h.failures() {
				fields := e.ContextMap()
				assert.Equal(t, h.url, fields["url"])
				assert.Contains(t, fields["error"], tc.reason)
			}
			assert.GreaterOrEqual(t, h.target.requests.Load(), int64(3))
			assert.LessOrEqual(t, int64(len(h.failures())), h.target.requests.Load(), "one log line per failed scrape")
			assert.Empty(t, h.sink.AllProfiles())

			// Once the target behaves, profiles flow again.
			h.target.set(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(good) })
			require.Eventually(t, func() bool { return len(h.sink.AllProfiles()) > 0 }, 10*time.Second, 5*time.Millisecond)
		})
	}
}

func TestTargetDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/debug/pprof/heap"
	srv.Close() // nothing listens there any more

	cfg := createDefaultConfig().(*Config)
	cfg.Remote.Client.Endpoint = strings.Replace(url, "http://", "http://scraper:s3cret@", 1)
	cfg.Remote.CollectionInterval = 20 * time.Millisecond
	_, logs := startObserved(t, cfg, consumertest.NewNop())

	require.Eventually(t, func() bool { return logs.FilterMessage("pprof scrape failed").Len() >= 2 }, 10*time.Second, 5*time.Millisecond)
	for _, e := range logs.FilterMessage("pprof scrape failed").All() {
		fields := e.ContextMap()
		assert.Equal(t, url, fields["url"], "logged URL without credentials")
		assert.Contains(t, fields["error"], "connection refused")
		assert.NotContains(t, fields["error"], "s3cret")
		assert.NotContains(t, fields["error"], "scraper")
	}
}

func TestScrapesNeverOverlap(t *testing.T) {
	good := goodProfile(t)
	h := startHarness(t, func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(60 * time.Millisecond) // three intervals
		_, _ = w.Write(good)
	}, func(c *Config) { c.Remote.CollectionInterval = 20 * time.Millisecond })
	require.Eventually(t, func() bool { return h.target.requests.Load() >= 5 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, int64(1), h.target.maxIn.Load(), "one scrape at a time")
	assert.Empty(t, h.failures())
}

func TestPipelineRefusalIsLoggedAndRetriedNextInterval(t *testing.T) {
	good := goodProfile(t)
	ft := &fakeTarget{handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(good) }}
	srv := httptest.NewServer(ft)
	defer srv.Close()
	cfg := createDefaultConfig().(*Config)
	cfg.Remote.Client.Endpoint = srv.URL + "/debug/pprof/heap"
	cfg.Remote.CollectionInterval = 20 * time.Millisecond
	_, logs := startObserved(t, cfg, consumertest.NewErr(assert.AnError))
	require.Eventually(t, func() bool { return logs.FilterMessage("pprof scrape failed").Len() >= 2 }, 10*time.Second, 5*time.Millisecond)
	assert.Contains(t, logs.FilterMessage("pprof scrape failed").All()[0].ContextMap()["error"], "pipeline refused the profiles")
}

func TestShutdownAbortsScrapeInFlight(t *testing.T) {
	started := make(chan struct{}, 1)
	h := startHarness(t, func(_ http.ResponseWriter, r *http.Request) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}, func(c *Config) {
		c.Remote.Client.Endpoint += "?seconds=30" // like a long CPU profile
		c.Remote.CollectionInterval = time.Minute
		c.Remote.Client.Timeout = 0
	})
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, h.r.Shutdown(ctx))
	assert.Empty(t, h.failures(), "an aborted scrape at shutdown is no failure of the target")
}

// TestNoGoroutineLeftAfterShutdown checks, while the target still runs, that
// Shutdown leaves no goroutine behind: the scrape loop ends and the client's
// kept-alive connections are closed.
func TestNoGoroutineLeftAfterShutdown(t *testing.T) {
	good := goodProfile(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(good) }))
	defer srv.Close()
	before := goleak.IgnoreCurrent()

	cfg := createDefaultConfig().(*Config)
	cfg.Remote.Client.Endpoint = srv.URL + "/debug/pprof/heap"
	cfg.Remote.CollectionInterval = 10 * time.Millisecond
	sink := new(consumertest.ProfilesSink)
	r, err := newReceiver(receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	require.Eventually(t, func() bool { return len(sink.AllProfiles()) >= 3 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, r.Shutdown(context.Background()))
	goleak.VerifyNone(t, before)
}

// heldListener holds each accepted connection until release is closed, and
// says on accepted when it has one: a client's TCP connect completes (the
// kernel accepts it) while its TLS handshake waits for the server.
type heldListener struct {
	net.Listener
	accepted chan struct{}
	release  chan struct{}
}

func (l *heldListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	select {
	case l.accepted <- struct{}{}:
	default:
	}
	<-l.release
	return c, nil
}

// TestNoConnectionLeftWhenShutdownOvertakesADial: Shutdown aborts a scrape
// whose connection is still being made (its TLS handshake held by the
// target); net/http finishes such a dial on its own, and the connection it
// yields must be closed, not kept idle with its goroutines after the
// receiver is gone (a make test run under load once found them).
func TestNoConnectionLeftWhenShutdownOvertakesADial(t *testing.T) {
	good := goodProfile(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(good) }))
	held := &heldListener{Listener: srv.Listener, accepted: make(chan struct{}, 1), release: make(chan struct{})}
	srv.Listener = held
	closed := make(chan struct{}, 1)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			select {
			case closed <- struct{}{}:
			default:
			}
		}
	}
	srv.StartTLS()
	released := false
	defer func() {
		if !released {
			close(held.release)
		}
		srv.Close()
	}()
	before := goleak.IgnoreCurrent()

	cfg := createDefaultConfig().(*Config)
	cfg.Remote.Client.Endpoint = srv.URL + "/debug/pprof/heap"
	cfg.Remote.Client.TLS.InsecureSkipVerify = true
	r, err := newReceiver(receivertest.NewNopSettings(metadata.Type), cfg, new(consumertest.ProfilesSink))
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	select {
	case <-held.accepted: // the first scrape's connection waits for its handshake
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver did not connect to the target")
	}
	require.NoError(t, r.Shutdown(context.Background()))
	close(held.release)
	released = true
	select {
	case <-closed: // the handshake completed and the client closed the connection
	case <-time.After(10 * time.Second):
		t.Fatal("the connection dialed for the aborted scrape was kept open after Shutdown")
	}
	goleak.VerifyNone(t, before)
}
