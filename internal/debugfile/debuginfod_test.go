// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// testConfig is a debuginfod section for a test server.
func testConfig(t *testing.T, urls ...string) DebuginfodConfig {
	cfg := DefaultDebuginfodConfig()
	cfg.URLs = urls
	cfg.CacheDir = t.TempDir()
	cfg.MaxFileSizeMiB = 1
	cfg.CacheSizeMiB = 2
	return cfg
}

func newTestClient(t *testing.T, cfg DebuginfodConfig) (*Debuginfod, *observer.ObservedLogs, chan error) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	d, err := NewDebuginfod(cfg, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	if d == nil {
		t.Fatal("no client for a configured URL")
	}
	t.Cleanup(d.Close)
	results := make(chan error, 64)
	d.done = func(_ string, err error) { results <- err }
	return d, logs, results
}

func TestDebuginfodOffByDefault(t *testing.T) {
	t.Setenv(DebuginfodEnv, "")
	d, err := NewDebuginfod(DefaultDebuginfodConfig(), zap.NewNop())
	if err != nil || d != nil {
		t.Fatalf("default config: client %v, %v", d, err)
	}
	if _, ok := d.Lookup(strings.Repeat("ab", 20)); ok {
		t.Fatal("a nil client found a file")
	}
	t.Setenv(DebuginfodEnv, "http://127.0.0.1:1 http://127.0.0.1:2")
	if !DefaultDebuginfodConfig().Enabled() {
		t.Fatal("DEBUGINFOD_URLS does not turn it on")
	}
}

func TestDebuginfodConfigValidate(t *testing.T) {
	cfg := DefaultDebuginfodConfig()
	cfg.URLs = []string{"ftp://x", "http://user:hunter2@[::1"}
	cfg.Timeout = 0
	cfg.MaxFileSizeMiB = 0
	cfg.MaxConcurrent = 100
	cfg.CacheDir = ""
	cfg.NegativeCacheTTL = -time.Second
	err := cfg.Validate("debuginfod::")
	for _, want := range []string{
		`debuginfod::urls[0]: scheme must be http or https, got "ftp"`,
		"debuginfod::urls[1]: not a URL",
		"debuginfod::timeout: must be positive",
		"debuginfod::max_file_size_mib: must be between 1 and 65536, got 0",
		"debuginfod::max_concurrent: must be between 1 and 64, got 100",
		"debuginfod::cache_dir: must be set",
		"debuginfod::negative_cache_ttl: must not be negative",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("the error shows a password: %v", err)
	}
	if err := DefaultDebuginfodConfig().Validate(""); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// served builds hotC and returns a debug file for it (only-keep-debug) and
// its build ID.
func served(t *testing.T) ([]byte, string) {
	t.Helper()
	need(t, "objcopy")
	dir := t.TempDir()
	bin, _ := buildHot(t, dir)
	dbg := filepath.Join(dir, "hot.debug")
	run(t, "objcopy", "--only-keep-debug", bin, dbg)
	data, err := os.ReadFile(dbg)
	if err != nil {
		t.Fatal(err)
	}
	return data, buildIDOf(t, bin)
}

func TestDebuginfodFetchesVerifiesAndCaches(t *testing.T) {
	data, id := served(t)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/buildid/" + id + "/debuginfo":
			_, _ = w.Write(data)
		case "/buildid/" + strings.Repeat("ee", 20) + "/debuginfo":
			_, _ = w.Write(data) // the file of another build ID
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	d, _, results := newTestClient(t, testConfig(t, srv.URL))
	if _, ok := d.Lookup(id); ok {
		t.Fatal("found before any fetch")
	}
	if err := <-results; err != nil {
		t.Fatal(err)
	}
	p, ok := d.Lookup(id)
	if !ok || p != filepath.Join(d.cfg.CacheDir, ".build-id", id[:2], id[2:]+".debug") {
		t.Fatalf("after the fetch: %q %v", p, ok)
	}
	if got := buildIDOf(t, p); got != id {
		t.Fatalf("cached file's build ID %s", got)
	}
	// A miss is cached: asked once within the TTL.
	missing := strings.Repeat("cd", 20)
	d.Lookup(missing)
	if err := <-results; err == nil {
		t.Fatal("a missing build ID was found")
	}
	before := requests.Load()
	d.Lookup(missing)
	d.Lookup(missing)
	if _, err := d.Fetch(context.Background(), id); err != nil { // a request that surely ends after any queued one started
		t.Fatal(err)
	}
	if n := requests.Load() - before; n != 1 {
		t.Fatalf("%d requests after a miss within its TTL, want only the fetch", n)
	}
	if d.Stats.Misses.Load() != 1 {
		t.Fatalf("misses %d", d.Stats.Misses.Load())
	}
	// A file that is not the build ID's is refused and not cached.
	other := strings.Repeat("ee", 20)
	if _, err := d.Fetch(context.Background(), other); err == nil || !strings.Contains(err.Error(), "build ID") {
		t.Fatalf("another build ID's file: %v", err)
	}
	if _, err := os.Stat(d.CachePath(other)); !os.IsNotExist(err) {
		t.Fatalf("another build ID's file was cached: %v", err)
	}
}

func TestDebuginfodHugeBodyStopsAtTheCap(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// No Content-Length: 1 GiB streamed until the client stops reading.
		buf := make([]byte, 64<<10)
		for i := 0; i < 1<<14; i++ {
			n, err := w.Write(buf)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	cfg := testConfig(t, srv.URL)
	d, _, _ := newTestClient(t, cfg)
	id := strings.Repeat("ab", 20)
	var err error
	n := allocated(func() { _, err = d.Fetch(context.Background(), id) })
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if d.Stats.TooLarge.Load() != 1 || d.Stats.Failed.Load() != 1 {
		t.Fatalf("stats: too large %d, failed %d", d.Stats.TooLarge.Load(), d.Stats.Failed.Load())
	}
	// Memory: streamed to disk, not held; disk: nothing left behind.
	if n > 2<<20 {
		t.Fatalf("fetching a huge body allocated %d bytes", n)
	}
	if size := dirSize(t, cfg.CacheDir); size != 0 {
		t.Fatalf("%d bytes left in the cache", size)
	}
	t.Logf("huge body: the client read past its 1 MiB cap and stopped; %d bytes allocated, the server wrote %d", n, sent.Load())

	// With a Content-Length over the cap, the body is not read at all.
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1073741824")
		_, _ = w.Write([]byte("\x7fELF"))
	}))
	defer big.Close()
	d2, _, _ := newTestClient(t, testConfig(t, big.URL))
	if _, err := d2.Fetch(context.Background(), id); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Content-Length over the cap: %v", err)
	}
}

func dirSize(t *testing.T, dir string) int64 {
	var total int64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			total += info.Size()
		}
		return nil
	})
	return total
}

func TestDebuginfodSlowServerDoesNotHoldLookups(t *testing.T) {
	release := make(chan struct{})
	var inflight, maxInflight atomic.Int64
	arrived := make(chan struct{}, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		for {
			m := maxInflight.Load()
			if n <= m || maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		inflight.Add(-1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cfg := testConfig(t, srv.URL)
	cfg.Timeout = time.Hour // the server is held by the test, not by a timer
	cfg.MaxConcurrent = 2
	d, _, results := newTestClient(t, cfg)
	// Lookups return while the server holds every request: none waits for
	// the network (were one to, this would hang).
	const ids = 10
	for i := range ids {
		if _, ok := d.Lookup(strings.Repeat(string("0123456789"[i])+"a", 20)); ok {
			t.Fatal("found")
		}
	}
	<-arrived
	<-arrived // max_concurrent requests are held by the server
	select {
	case <-arrived:
		t.Fatal("a third request while two were held: max_concurrent 2 not kept")
	default:
	}
	close(release)
	for range ids {
		<-results
	}
	if m := maxInflight.Load(); m != 2 {
		t.Fatalf("at most %d requests at once, want 2", m)
	}
	// The queue is bounded: lookups past it are dropped, not queued.
	d2, _, _ := newTestClient(t, testConfig(t, "http://127.0.0.1:1"))
	d2.cancel() // no worker takes from the queue
	d2.wg.Wait()
	for i := range maxQueued + 10 {
		d2.Lookup(strings.Repeat("ab", 18) + string("0123456789abcdef"[i%16]) + string("0123456789abcdef"[i/16%16]) + string("0123456789abcdef"[i/256%16]) + "0")
	}
	if len(d2.queue) != maxQueued || d2.Stats.Dropped.Load() != 10 {
		t.Fatalf("queue %d, dropped %d", len(d2.queue), d2.Stats.Dropped.Load())
	}
}

func TestDebuginfodTimeoutAndDownServerAreCachedMisses(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	var requests atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	// A port with nothing listening.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	cfg := testConfig(t, down, slow.URL)
	cfg.Timeout = 50 * time.Millisecond
	d, _, results := newTestClient(t, cfg)
	id := strings.Repeat("ab", 20)
	d.Lookup(id)
	err = <-results
	if err == nil || !strings.Contains(err.Error(), "Timeout") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("want a refused connection and a timeout: %v", err)
	}
	d.Lookup(id)
	d.Lookup(id)
	if requests.Load() != 1 || len(d.queue) != 0 || d.Stats.Failed.Load() != 1 {
		t.Fatalf("after a failure within the TTL: %d requests, %d queued, %d failed", requests.Load(), len(d.queue), d.Stats.Failed.Load())
	}
}

func TestDebuginfodNeverShowsCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		if user != "agent" || pass != "hunter2" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://agent:hunter2@", 1) + "/?token=s3cr3t"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downURL := "http://agent:hunter2@" + l.Addr().String() + "/?token=s3cr3t"
	l.Close()
	d, logs, _ := newTestClient(t, testConfig(t, u, downURL))
	_, err = d.Fetch(context.Background(), strings.Repeat("ab", 20))
	if err == nil || !strings.Contains(err.Error(), "status 500") {
		t.Fatalf("want the server's 500 (it checked the credentials): %v", err)
	}
	var all strings.Builder
	all.WriteString(err.Error())
	for _, e := range logs.All() {
		fmt.Fprintf(&all, "%s %v\n", e.Message, e.ContextMap())
	}
	for _, secret := range []string{"hunter2", "s3cr3t"} {
		if strings.Contains(all.String(), secret) {
			t.Fatalf("%q shown: %s", secret, all.String())
		}
	}
	if !strings.Contains(all.String(), "127.0.0.1") {
		t.Fatalf("the server is not named at all: %s", all.String())
	}
}

// paddedDebugFiles makes n debug files of hotC with distinct build IDs,
// each padded to about pad bytes, and returns them by build ID, in order.
func paddedDebugFiles(t *testing.T, n, pad int) ([]string, map[string][]byte) {
	t.Helper()
	need(t, "gcc", "objcopy")
	dir := t.TempDir()
	src := filepath.Join(dir, "hot.c")
	padFile := filepath.Join(dir, "pad")
	if err := os.WriteFile(src, []byte(hotC), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(padFile, make([]byte, pad), 0o600); err != nil {
		t.Fatal(err)
	}
	var ids []string
	files := map[string][]byte{}
	obj := filepath.Join(dir, "hot.o")
	run(t, "gcc", "-g", "-O2", "-c", "-o", obj, src)
	for i := range n {
		bin := filepath.Join(dir, fmt.Sprintf("hot%d", i))
		run(t, "gcc", fmt.Sprintf("-Wl,--build-id=0x%040x", i+1), "-o", bin, obj)
		run(t, "objcopy", "--only-keep-debug", "--add-section", ".nxv_pad="+padFile, bin, bin+".debug")
		data, err := os.ReadFile(bin + ".debug")
		if err != nil {
			t.Fatal(err)
		}
		id := buildIDOf(t, bin)
		ids = append(ids, id)
		files[id] = data
	}
	return ids, files
}

func TestDebuginfodCacheStaysWithinItsSize(t *testing.T) {
	ids, files := paddedDebugFiles(t, 4, 256<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/buildid/"), "/debuginfo")
		if data, ok := files[id]; ok {
			_, _ = w.Write(data)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cfg := testConfig(t, srv.URL)
	cfg.CacheSizeMiB = 1 // three files fit, not four
	d, _, _ := newTestClient(t, cfg)
	for _, id := range ids[:3] {
		if _, err := d.Fetch(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	// The first one used again: the second is now the least recently used.
	later := time.Now().Add(time.Hour)
	d.now = func() time.Time { return later }
	if _, ok := d.Lookup(ids[0]); !ok {
		t.Fatal("the first file is not cached")
	}
	if _, err := d.Fetch(context.Background(), ids[3]); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, true, true} {
		if got := d.Cached(ids[i]); got != want {
			t.Errorf("file %d cached: %v, want %v", i, got, want)
		}
	}
	if size := dirSize(t, cfg.CacheDir); size > int64(cfg.CacheSizeMiB)<<20 {
		t.Fatalf("cache holds %d bytes, over %d MiB", size, cfg.CacheSizeMiB)
	}
	if d.Stats.Evicted.Load() != 1 {
		t.Fatalf("evicted %d", d.Stats.Evicted.Load())
	}
}
