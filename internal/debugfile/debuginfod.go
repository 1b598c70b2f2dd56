// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile // import "github.com/nexovue/otelcol-nexovue/internal/debugfile"

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// DebuginfodEnv is the environment variable that lists debuginfod servers
// (space-separated URLs), as elfutils' client reads it.
const DebuginfodEnv = "DEBUGINFOD_URLS"

// DebuginfodConfig is the `debuginfod` section of the symbolize processor's
// configuration. With no URL (and no DEBUGINFOD_URLS) it is off.
type DebuginfodConfig struct {
	// URLs of debuginfod servers, tried in order. Empty: DEBUGINFOD_URLS's.
	URLs []string `mapstructure:"urls"`
	// Timeout of one request, headers and body.
	Timeout time.Duration `mapstructure:"timeout"`
	// MaxFileSizeMiB caps one debug file: a larger answer is dropped.
	MaxFileSizeMiB int `mapstructure:"max_file_size_mib"`
	// MaxConcurrent caps the fetches at one time.
	MaxConcurrent int `mapstructure:"max_concurrent"`
	// CacheDir holds the fetched files, in the .build-id layout.
	CacheDir string `mapstructure:"cache_dir"`
	// CacheSizeMiB caps the files kept in CacheDir (least recently used go
	// first).
	CacheSizeMiB int `mapstructure:"cache_size_mib"`
	// NegativeCacheTTL is how long a build ID that no server had (or that
	// failed) is not asked for again.
	NegativeCacheTTL time.Duration `mapstructure:"negative_cache_ttl"`
}

// DefaultDebuginfodConfig is the section's defaults (off: no URL).
func DefaultDebuginfodConfig() DebuginfodConfig {
	return DebuginfodConfig{
		Timeout:          30 * time.Second,
		MaxFileSizeMiB:   512,
		MaxConcurrent:    2,
		CacheDir:         "/var/cache/otelcol-nexovue/debuginfod",
		CacheSizeMiB:     2048,
		NegativeCacheTTL: 10 * time.Minute,
	}
}

// Validate checks the section; prefix is its key's path
// ("debuginfod::").
func (c DebuginfodConfig) Validate(prefix string) error {
	var errs []error
	for i, u := range c.URLs {
		if _, err := parseServerURL(u); err != nil {
			errs = append(errs, fmt.Errorf("%surls[%d]: %w", prefix, i, err))
		}
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("%stimeout: must be positive, got %s", prefix, c.Timeout))
	}
	if c.MaxFileSizeMiB < 1 || c.MaxFileSizeMiB > 65536 {
		errs = append(errs, fmt.Errorf("%smax_file_size_mib: must be between 1 and 65536, got %d", prefix, c.MaxFileSizeMiB))
	}
	if c.MaxConcurrent < 1 || c.MaxConcurrent > 64 {
		errs = append(errs, fmt.Errorf("%smax_concurrent: must be between 1 and 64, got %d", prefix, c.MaxConcurrent))
	}
	if c.CacheDir == "" {
		errs = append(errs, fmt.Errorf("%scache_dir: must be set", prefix))
	}
	if c.CacheSizeMiB < c.MaxFileSizeMiB || c.CacheSizeMiB > 1<<20 {
		errs = append(errs, fmt.Errorf("%scache_size_mib: must be between max_file_size_mib (%d) and 1048576, got %d", prefix, c.MaxFileSizeMiB, c.CacheSizeMiB))
	}
	if c.NegativeCacheTTL < 0 {
		errs = append(errs, fmt.Errorf("%snegative_cache_ttl: must not be negative, got %s", prefix, c.NegativeCacheTTL))
	}
	return errors.Join(errs...)
}

// servers returns the configured URLs, else DEBUGINFOD_URLS's.
func (c DebuginfodConfig) servers() []string {
	if len(c.URLs) > 0 {
		return c.URLs
	}
	return strings.Fields(os.Getenv(DebuginfodEnv))
}

// Enabled reports whether debuginfod is on: URLs configured, or
// DEBUGINFOD_URLS set.
func (c DebuginfodConfig) Enabled() bool { return len(c.servers()) > 0 }

func parseServerURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		// url.Parse's error quotes the whole URL, credentials included.
		return nil, errors.New("not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("scheme must be http or https, got %q", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("no host")
	}
	return u, nil
}

// Redact returns a server URL as it may be logged: scheme, host and path,
// never the user info or the query (where credentials go).
func Redact(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// DebuginfodStats counts the client's work (read with Load).
type DebuginfodStats struct {
	// Fetched files, verified and cached.
	Fetched atomic.Int64
	// Misses: no server had the build ID.
	Misses atomic.Int64
	// Failed fetches: a server down or slow, a file too large or not the
	// build ID's.
	Failed atomic.Int64
	// TooLarge is the part of Failed over max_file_size_mib.
	TooLarge atomic.Int64
	// Dropped lookups: the queue of fetches was full.
	Dropped atomic.Int64
	// Evicted cached files, for cache_size_mib.
	Evicted atomic.Int64
}

// maxQueued bounds the build IDs waiting for a fetch; maxNegative the
// negative cache's entries.
const (
	maxQueued   = 1024
	maxNegative = 1 << 16
)

// Debuginfod fetches debug files by build ID from debuginfod servers into
// a bounded on-disk cache, off the caller's path: Lookup never waits for
// the network.
type Debuginfod struct {
	cfg      DebuginfodConfig
	servers  []*url.URL
	client   *http.Client
	log      *zap.Logger
	maxFile  int64
	maxCache int64

	queue  chan string
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	pending  map[string]bool
	negative map[string]time.Time
	now      func() time.Time
	// done, when set, is called after each fetch ends (tests, metrics).
	done func(buildID string, err error)

	evictMu sync.Mutex

	Stats DebuginfodStats
}

// NewDebuginfod returns a client, or nil when cfg has no server (off).
// Its workers run until Close.
func NewDebuginfod(cfg DebuginfodConfig, log *zap.Logger) (*Debuginfod, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if err := cfg.Validate("debuginfod::"); err != nil {
		return nil, err
	}
	var servers []*url.URL
	for i, s := range cfg.servers() {
		u, err := parseServerURL(s)
		if err != nil {
			return nil, fmt.Errorf("debuginfod server %d: %w", i, err)
		}
		servers = append(servers, u)
	}
	if err := os.MkdirAll(filepath.Join(cfg.CacheDir, ".build-id"), 0o700); err != nil {
		return nil, fmt.Errorf("debuginfod::cache_dir: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Debuginfod{
		cfg:      cfg,
		servers:  servers,
		client:   &http.Client{Timeout: cfg.Timeout},
		log:      log,
		maxFile:  int64(cfg.MaxFileSizeMiB) << 20,
		maxCache: int64(cfg.CacheSizeMiB) << 20,
		queue:    make(chan string, maxQueued),
		ctx:      ctx,
		cancel:   cancel,
		pending:  map[string]bool{},
		negative: map[string]time.Time{},
		now:      time.Now,
	}
	names := make([]string, len(servers))
	for i, u := range servers {
		names[i] = Redact(u)
	}
	log.Info("debuginfod on: build IDs of this host's binaries are sent to these servers", zap.Strings("servers", names))
	for range cfg.MaxConcurrent {
		d.wg.Add(1)
		go d.worker()
	}
	return d, nil
}

// Close stops the workers, ending fetches under way.
func (d *Debuginfod) Close() {
	if d == nil {
		return
	}
	d.cancel()
	d.wg.Wait()
}

// CachePath is where the debug file of a build ID is kept.
func (d *Debuginfod) CachePath(buildID string) string {
	return BuildIDPath(d.cfg.CacheDir, buildID)
}

// Lookup returns the cached debug file of a build ID when there is one.
// Otherwise it queues a fetch (unless one is under way, the build ID
// missed within negative_cache_ttl, or the queue is full) and returns
// false at once: a later lookup finds the file.
func (d *Debuginfod) Lookup(buildID string) (string, bool) {
	if d == nil || !ValidBuildID(buildID) {
		return "", false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// A fetch under way or a recent miss: no file, and no system call (a
	// mapping waiting for its file asks at every batch).
	if d.pending[buildID] {
		return "", false
	}
	if until, ok := d.negative[buildID]; ok {
		if d.now().Before(until) {
			return "", false
		}
		delete(d.negative, buildID)
	}
	p := d.CachePath(buildID)
	if _, err := os.Stat(p); err == nil {
		now := d.now()
		_ = os.Chtimes(p, now, now) // least recently used goes first
		return p, true
	}
	select {
	case d.queue <- buildID:
		d.pending[buildID] = true
	default:
		d.Stats.Dropped.Add(1)
	}
	return "", false
}

func (d *Debuginfod) worker() {
	defer d.wg.Done()
	for {
		select {
		case <-d.ctx.Done():
			return
		case id := <-d.queue:
			_, err := d.Fetch(d.ctx, id)
			d.mu.Lock()
			delete(d.pending, id)
			if err != nil && d.ctx.Err() == nil {
				d.addNegative(id)
			}
			done := d.done
			d.mu.Unlock()
			if done != nil {
				done(id, err)
			}
		}
	}
}

// addNegative remembers a miss; d.mu is held.
func (d *Debuginfod) addNegative(id string) {
	now := d.now()
	if len(d.negative) >= maxNegative {
		for k, until := range d.negative {
			if !now.Before(until) {
				delete(d.negative, k)
			}
		}
		for k := range d.negative {
			if len(d.negative) < maxNegative {
				break
			}
			delete(d.negative, k)
		}
	}
	d.negative[id] = now.Add(d.cfg.NegativeCacheTTL)
}

// errMiss is a server's 404.
var errMiss = errors.New("not on the server")

// Fetch fetches the debug file of a build ID from the servers in order, on
// the caller's goroutine, and returns its cached path. Workers call it;
// callers on a batch path use Lookup.
func (d *Debuginfod) Fetch(ctx context.Context, buildID string) (string, error) {
	if !ValidBuildID(buildID) {
		return "", fmt.Errorf("not a build ID: %q", buildID)
	}
	var errs []error
	for _, u := range d.servers {
		p, err := d.fetchFrom(ctx, u, buildID)
		if err == nil {
			d.Stats.Fetched.Add(1)
			d.log.Debug("debuginfod: fetched", zap.String("build_id", buildID), zap.String("server", Redact(u)))
			return p, nil
		}
		if !errors.Is(err, errMiss) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		d.Stats.Misses.Add(1)
		return "", fmt.Errorf("debuginfod: build ID %s: %w", buildID, errMiss)
	}
	d.Stats.Failed.Add(1)
	err := errors.Join(errs...)
	if errors.Is(err, ErrTooLarge) {
		d.Stats.TooLarge.Add(1)
	}
	d.log.Debug("debuginfod: fetch failed", zap.String("build_id", buildID), zap.Error(err))
	return "", err
}

func (d *Debuginfod) fetchFrom(ctx context.Context, server *url.URL, buildID string) (string, error) {
	u := *server
	u.Path = strings.TrimSuffix(u.Path, "/") + "/buildid/" + buildID + "/debuginfo"
	shown := Redact(&u)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), http.NoBody)
	if err != nil {
		return "", fmt.Errorf("%s: bad request", shown)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		var ue *url.Error // quotes the full URL: keep only its cause
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("%s: %w", shown, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return "", errMiss
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("%s: status %d", shown, resp.StatusCode)
	case resp.ContentLength > d.maxFile:
		return "", fmt.Errorf("%s: %d bytes: %w", shown, resp.ContentLength, ErrTooLarge)
	}
	dir := filepath.Dir(d.CachePath(buildID))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".fetch-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	defer tmp.Close()
	n, err := io.Copy(tmp, io.LimitReader(resp.Body, d.maxFile+1))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("%s: %w", shown, err)
	}
	if n > d.maxFile {
		return "", fmt.Errorf("%s: over %d bytes: %w", shown, d.maxFile, ErrTooLarge)
	}
	ef, err := elf.NewFile(tmp)
	if err != nil {
		return "", fmt.Errorf("%s: not an ELF file: %w", shown, err)
	}
	got, err := BuildID(ef)
	if err != nil || got != buildID {
		return "", fmt.Errorf("%s: the file's build ID is %q, not %s", shown, got, buildID)
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	d.makeRoom(n)
	p := d.CachePath(buildID)
	if err := os.Rename(tmp.Name(), p); err != nil {
		return "", err
	}
	return p, nil
}

// makeRoom evicts the least recently used cached files until n more bytes
// fit in cache_size_mib.
func (d *Debuginfod) makeRoom(n int64) {
	d.evictMu.Lock()
	defer d.evictMu.Unlock()
	type cached struct {
		path string
		size int64
		used time.Time
	}
	var files []cached
	var total int64
	root := filepath.Join(d.cfg.CacheDir, ".build-id")
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".debug") {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		files = append(files, cached{p, info.Size(), info.ModTime()})
		total += info.Size()
		return nil
	})
	slices.SortFunc(files, func(a, b cached) int { return a.used.Compare(b.used) })
	for _, f := range files {
		if total+n <= d.maxCache {
			break
		}
		if os.Remove(f.path) == nil {
			total -= f.size
			d.Stats.Evicted.Add(1)
		}
	}
}

// Cached reports whether the debug file of a build ID is in the cache,
// without asking for it.
func (d *Debuginfod) Cached(buildID string) bool {
	if d == nil || !ValidBuildID(buildID) {
		return false
	}
	_, err := os.Stat(d.CachePath(buildID))
	return err == nil
}
