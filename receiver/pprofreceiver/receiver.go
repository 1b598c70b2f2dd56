// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package pprofreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"

	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/convert"
	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/delta"
	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/metadata"
)

// Resource attribute keys (OpenTelemetry semantic conventions).
const (
	attrServiceName        = "service.name"
	attrProcessRuntimeName = "process.runtime.name"
	attrServerAddress      = "server.address"
	attrServerPort         = "server.port"
)

type pprofReceiver struct {
	set       receiver.Settings
	cfg       *Config
	next      xconsumer.Profiles
	endpoint  *url.URL
	redacted  string
	telemetry *metadata.TelemetryBuilder

	// tracker is nil when cumulative types are sent as they are: deltas
	// turned off, or a "seconds" URL for which the Go server computes them.
	tracker *delta.Tracker

	client *http.Client
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex // serializes scrapes, also those started by tests
}

func newReceiver(set receiver.Settings, cfg *Config, next xconsumer.Profiles) (*pprofReceiver, error) {
	u, err := parseEndpoint(cfg.Remote.Client.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("remote::endpoint: %w", err)
	}
	_, hasSecs, err := profileSeconds(u)
	if err != nil {
		return nil, fmt.Errorf("remote::endpoint: %w", err)
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	r := &pprofReceiver{
		set:       set,
		cfg:       cfg,
		next:      next,
		endpoint:  u,
		redacted:  redactedURL(u),
		telemetry: tb,
	}
	if cfg.Delta && !hasSecs && !isGodeltaprof(u) {
		r.tracker = delta.NewTracker()
	}
	return r, nil
}

// Start builds the HTTP client and starts the scrape loop.
func (r *pprofReceiver) Start(ctx context.Context, host component.Host) error {
	if err := r.buildClient(ctx, host.GetExtensions()); err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = make(chan struct{})
	go r.run(runCtx)
	return nil
}

// buildClient makes the confighttp client of the scrapes, with the scrape
// timeout and the same-origin redirect policy.
func (r *pprofReceiver) buildClient(ctx context.Context, extensions map[component.ID]component.Component) error {
	// No connection is kept alive: one request per interval gains little
	// from it, and confighttp's wrapped transport cannot be told to close
	// idle connections at shutdown. Closing each request's connection
	// (req.Close) is not enough: a dial that a Shutdown's abort overtakes
	// goes on (net/http detaches it from the request), and the transport
	// keeps the connection it yields idle, with its goroutines, for
	// idle_conn_timeout; with keep-alives off it closes it.
	cc := r.cfg.Remote.Client
	cc.DisableKeepAlives = true
	client, err := cc.ToClient(ctx, extensions, r.set.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	client.Timeout = r.cfg.Remote.effectiveTimeout()
	client.CheckRedirect = sameOriginOnly
	r.client = client
	return nil
}

// Shutdown stops the scrape loop, aborting a scrape in flight, and waits for it.
func (r *pprofReceiver) Shutdown(ctx context.Context) error {
	var err error
	if r.cancel != nil {
		r.cancel()
		select {
		case <-r.done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	r.telemetry.Shutdown()
	return err
}

// run scrapes at once, then on every tick. One goroutine does all scrapes,
// so they never overlap; a tick that comes during a long scrape is taken as
// soon as it ends.
func (r *pprofReceiver) run(ctx context.Context) {
	defer close(r.done)
	ticker := time.NewTicker(r.cfg.Remote.CollectionInterval)
	defer ticker.Stop()
	for {
		r.scrapeAndReport(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (r *pprofReceiver) scrapeAndReport(ctx context.Context) {
	samples, err := r.scrape(ctx)
	if ctx.Err() != nil {
		return // shutting down: not a failure of the target
	}
	if err != nil {
		r.telemetry.ReceiverPprofScrapeErrors.Add(ctx, 1)
		r.set.Logger.Warn("pprof scrape failed", zap.String("url", r.redacted), zap.Error(err))
		return
	}
	r.telemetry.ReceiverPprofScrapes.Add(ctx, 1)
	r.telemetry.ReceiverPprofSamples.Add(ctx, int64(samples))
}

// scrape fetches, converts and delivers one profile; it returns the number of
// samples delivered.
func (r *pprofReceiver) scrape(ctx context.Context) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	body, err := r.fetch(ctx)
	if err != nil {
		return 0, err
	}
	pd, commit, err := r.convert(body, start)
	if err != nil {
		return 0, err
	}
	n := pd.SampleCount()
	if pd.ProfileCount() == 0 {
		commit() // first scrape of a cumulative-only profile: baseline set
		return 0, nil
	}
	if err := r.next.ConsumeProfiles(ctx, pd); err != nil {
		return 0, fmt.Errorf("pipeline refused the profiles: %w", err)
	}
	commit()
	return n, nil
}

// sameOriginOnly follows a redirect only to the scheme, host and port of the
// first request. confighttp adds the configured headers and auth in its
// transport, to every request the client sends, so Go's own stripping of
// sensitive headers on a redirect to another host does not apply: a redirect
// to another origin is not followed, and its 3xx is the scrape's answer.
func sameOriginOnly(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if origin(req.URL) != origin(via[0].URL) {
		return http.ErrUseLastResponse
	}
	return nil
}

// origin is scheme://host:port with the scheme's default port made explicit.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

func defaultPort(scheme string) string {
	if strings.EqualFold(scheme, "https") {
		return "443"
	}
	return "80"
}

// fetch GETs the endpoint and returns its body, enforcing max_body_size.
func (r *pprofReceiver) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.endpoint.String(), http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		// url.Error repeats the URL, possibly with its user name: keep the cause only.
		var ue *url.Error
		if errors.As(err, &ue) {
			if ue.Timeout() && ctx.Err() == nil {
				return nil, fmt.Errorf("request timed out after %s (remote::timeout)", r.client.Timeout)
			}
			err = ue.Err
		}
		return nil, fmt.Errorf("request failed: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 && loc != "" {
			return nil, fmt.Errorf("unexpected HTTP status %s: redirects are followed only to the same scheme, host and port (the configured headers and auth must not reach another host); set remote::endpoint to the final URL", resp.Status)
		}
		return nil, fmt.Errorf("unexpected HTTP status %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		if mt, _, perr := mime.ParseMediaType(ct); perr == nil && mt == "text/html" {
			return nil, fmt.Errorf("answer is an HTML page (Content-Type %q), not a pprof profile", ct)
		}
	}
	limit := r.cfg.Remote.MaxBodySize
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("body larger than remote::max_body_size (%d bytes)", limit)
	}
	return body, nil
}

// convert parses a scraped body and builds the OTLP profiles to send, and
// the function that commits the delta baselines once they are delivered.
func (r *pprofReceiver) convert(body []byte, scrapeTime time.Time) (pprofile.Profiles, func(), error) {
	p, err := convert.Parse(body, r.cfg.Remote.MaxBodySize)
	if err != nil {
		if errors.Is(err, convert.ErrTooLarge) {
			return pprofile.Profiles{}, nil, fmt.Errorf("decompressed body larger than remote::max_body_size (%d bytes)", r.cfg.Remote.MaxBodySize)
		}
		if errors.Is(err, convert.ErrNestedGzip) {
			return pprofile.Profiles{}, nil, fmt.Errorf("body refused: %w", err)
		}
		return pprofile.Profiles{}, nil, fmt.Errorf("not a valid pprof profile: %w", err)
	}
	if p.TimeNanos <= 0 {
		p.TimeNanos = scrapeTime.UnixNano()
	}

	parts := []*profile.Profile{p}
	commit := func() {}
	if r.tracker != nil {
		res := r.tracker.Next(p)
		parts = parts[:0]
		for _, q := range []*profile.Profile{res.Snapshot, res.Delta} {
			if q != nil {
				parts = append(parts, q)
			}
		}
		if len(res.Reset) > 0 {
			r.set.Logger.Info("pprof counters went down (target restarted?): new baseline",
				zap.String("url", r.redacted), zap.Strings("sample_types", res.Reset))
		}
		commit = func() { r.tracker.Commit(res) }
	}

	pd := pprofile.NewProfiles()
	rp := pd.ResourceProfiles().AppendEmpty()
	r.setResource(rp, p)
	sp := rp.ScopeProfiles().AppendEmpty()
	sp.Scope().SetName(metadata.ScopeName)
	sp.Scope().SetVersion(r.set.BuildInfo.Version)
	convert.SetScopeAttributes(sp.Scope(), p)
	b := convert.NewBuilder(pd.Dictionary())
	for i, q := range parts {
		opts := convert.Options{}
		if i == 0 && r.cfg.KeepOriginalPayload {
			opts.OriginalPayload = body
		}
		if err := b.Append(q, sp.Profiles(), opts); err != nil {
			return pprofile.Profiles{}, nil, fmt.Errorf("converting profile: %w", err)
		}
	}
	if sp.Profiles().Len() == 0 {
		pd = pprofile.NewProfiles()
	}
	return pd, commit, nil
}

func (r *pprofReceiver) setResource(rp pprofile.ResourceProfiles, p *profile.Profile) {
	attrs := rp.Resource().Attributes()
	if r.cfg.ServiceName != "" {
		attrs.PutStr(attrServiceName, r.cfg.ServiceName)
	}
	if convert.IsGo(p) {
		attrs.PutStr(attrProcessRuntimeName, "go")
	}
	attrs.PutStr(attrServerAddress, r.endpoint.Hostname())
	port := r.endpoint.Port()
	if port == "" {
		port = defaultPort(r.endpoint.Scheme)
	}
	if n, err := strconv.Atoi(port); err == nil {
		attrs.PutInt(attrServerPort, int64(n))
	}
}
