// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumererror/xconsumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter/internal/metadata"
	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
)

// halveFunc splits a request (refused as too large, or over the pacing
// limit) into two halves with compacted dictionaries; ok is false when it
// cannot be split, err names the field of an index outside its dictionary.
type halveFunc func(pprofile.Profiles) (first, second pprofile.Profiles, ok bool, err error)

type nexovueExporter struct {
	cfg       *Config
	set       component.TelemetrySettings
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	// id is the exporter's component ID, on every metric it records (as the
	// exporter helper's metrics carry it): two nexovue exporters in one
	// collector, say nexovue and nexovue/pyroscope, are told apart.
	id attribute.KeyValue
	// route is the routing rule this exporter sends for (DefaultRoute for
	// the rest), on every metric and rejected-key log; empty without routing.
	route string
	// keyFile, when set, holds the key, read at start; keyPath names the
	// setting in errors.
	keyFile, keyPath string
	// hold > 0: requests refused for their key stay queued, tried again
	// every hold (see holdRejected); rejectedLog limits the log to once a minute.
	hold        time.Duration
	rejectedLog rejectedLog
	url         string
	key         string
	userAgent   string
	halve       halveFunc

	// Set by start.
	client *http.Client
	enc    *encoder
	header http.Header
	state  *keyState

	// draining is closed when shutdown begins; stop when requests held back
	// by pacing or Retry-After must give up (see beginShutdown).
	drainOnce   sync.Once
	draining    chan struct{}
	stopOnce    sync.Once
	stop        chan struct{}
	releaseOnce sync.Once
}

func newExporter(cfg *Config, set exporter.Settings, halve halveFunc, opts routeOptions) (*nexovueExporter, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &nexovueExporter{
		cfg:       cfg,
		set:       set.TelemetrySettings,
		logger:    set.Logger,
		telemetry: tb,
		id:        attribute.String("exporter", opts.parent.String()),
		route:     opts.route,
		keyFile:   cfg.KeyFile,
		keyPath:   opts.keyPath,
		hold:      opts.holdRejected,
		url:       cfg.profilesURL(),
		key:       string(cfg.Key),
		userAgent: fmt.Sprintf("%s/%s (%s/%s)", set.BuildInfo.Description, set.BuildInfo.Version, runtime.GOOS, runtime.GOARCH),
		halve:     halve,
		draining:  make(chan struct{}),
		stop:      make(chan struct{}),
	}, nil
}

// start builds the HTTP client and joins the state shared by this endpoint and key.
func (e *nexovueExporter) start(ctx context.Context, host component.Host) error {
	clientCfg := e.cfg.ClientConfig
	// gzip is done by the exporter itself (pooled, faster writer); any other
	// compression is left to confighttp.
	ownGzip := clientCfg.Compression == configcompression.TypeGzip
	if ownGzip {
		clientCfg.Compression = ""
	}
	enc, err := newEncoder(ownGzip, gzipLevel(int(e.cfg.ClientConfig.CompressionParams.Level)))
	if err != nil {
		return err
	}
	enc.literal = e.cfg.AttributeEncoding == AttributeEncodingLiteral
	client, err := clientCfg.ToClient(ctx, host.GetExtensions(), e.set)
	if err != nil {
		return err
	}
	client.CheckRedirect = sameOriginRedirects
	if clearTextToRemoteHost(e.cfg.ClientConfig.Endpoint) {
		e.logger.Warn("the nexovue endpoint is http:// to a host that is not loopback: the ingest key and the profiles travel in clear text; use https://",
			zap.String("endpoint", e.cfg.ClientConfig.Endpoint))
	}
	if e.keyFile != "" {
		key, err := readKeyFile(e.keyPath, e.keyFile)
		if err != nil {
			return err
		}
		e.key = key
	}
	e.state = acquireKeyState(e.url, e.key, e.cfg.RateLimit.SamplesPerSecond)
	client.Transport = &gateTransport{base: client.Transport, state: e.state}
	e.client, e.enc = client, enc
	e.header = keyedHeader(e.userAgent, e.key)
	if ownGzip {
		e.header.Set("Content-Encoding", "gzip")
	}
	return nil
}

// beginShutdown is called before the helper drains its queue. With a
// persistent queue, requests held back by pacing or Retry-After give up at
// once and stay queued (the helper keeps a request whose export was
// interrupted by shutdown). With the in-memory queue they keep waiting, and
// are sent, until ctx ends; then they give up and are counted as dropped.
func (e *nexovueExporter) beginShutdown(ctx context.Context) {
	e.drainOnce.Do(func() { close(e.draining) })
	if e.persistentQueue() {
		e.stopWaiting()
		return
	}
	go func() {
		select {
		case <-ctx.Done():
			e.stopWaiting()
		case <-e.stop:
		}
	}()
}

func (e *nexovueExporter) persistentQueue() bool {
	return e.cfg.QueueConfig.HasValue() && e.cfg.QueueConfig.Get().StorageID != nil
}

// shuttingDown reports whether the in-memory queue is draining: the helper's
// retries are stopped, so the exporter retries throttled requests itself.
func (e *nexovueExporter) drainingInMemory() bool {
	select {
	case <-e.draining:
		return !e.persistentQueue()
	default:
		return false
	}
}

// stopWaiting makes requests held back by pacing or Retry-After give up.
func (e *nexovueExporter) stopWaiting() {
	e.stopOnce.Do(func() { close(e.stop) })
}

func (e *nexovueExporter) shutdown(context.Context) error {
	e.stopWaiting()
	e.releaseOnce.Do(func() {
		// e.state stays set: a call still in flight keeps a usable state.
		if e.state != nil {
			e.state.release()
		}
	})
	if e.client != nil {
		e.client.CloseIdleConnections()
	}
	e.telemetry.Shutdown()
	return nil
}

// outcome classifies one HTTP attempt.
type outcome int

const (
	sent outcome = iota
	tooLarge
	permanent
	retryable
	// rejectedKey: the ingest refused the key (401, 403). The data is
	// dropped and counted, and the exporter logs it itself at most once a
	// minute; it returns no error, because the exporterhelper would log every
	// one of them.
	rejectedKey
)

// push sends pd. A request the ingest refuses as too large (413), or with
// more samples than the pacing limit lets through in one window (the ingest
// could never accept it), is halved, recursively, down to a single sample.
// Halves are sent inside this call, so the exporterhelper sees one request.
// When a part fails retryably after others were accepted (or dropped), the
// error carries only what was not sent yet (xconsumererror.Profiles), so a
// retry never duplicates an accepted half.
//
// A request without samples is not sent: the ingest has nothing to take from
// it, and the persistent queue hands out one for each write its storage
// refused (a full disk: queue_storage), an index it skipped that holds
// nothing.
func (e *nexovueExporter) push(ctx context.Context, pd pprofile.Profiles) error {
	if pd.SampleCount() == 0 {
		return nil
	}
	pending := []pprofile.Profiles{pd} // a stack: the first half is sent first
	done := false                      // some part was accepted or dropped
	var permErrs []error
	// halved splits p onto pending; a malformed p is dropped (permanent).
	halved := func(p pprofile.Profiles) bool {
		first, second, ok, err := e.split(ctx, p)
		if err != nil {
			done = true
			permErrs = append(permErrs, err)
			return true
		}
		if ok {
			pending = append(pending, second, first)
		}
		return ok
	}
	for len(pending) > 0 {
		p := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if limit := e.state.maxSamples(); limit > 0 && p.SampleCount() > limit && halved(p) {
			continue
		}
		out, err := e.sendDraining(ctx, p)
		switch out {
		case sent:
			done = true
		case permanent:
			done = true
			permErrs = append(permErrs, err)
		case rejectedKey:
			done = true
			permErrs = append(permErrs, err)
		case tooLarge:
			if halved(p) {
				continue
			}
			done = true
			n := p.SampleCount()
			e.drop(ctx, n, "too_large")
			e.logger.Error("nexovue ingest refused a request as too large (HTTP 413) and it cannot be split further; its samples are dropped",
				zap.Int("dropped_samples", n), zap.String("url", e.url))
			permErrs = append(permErrs, err)
		case retryable:
			if !done {
				// Nothing of pd left the exporter: retry pd as it is.
				return err
			}
			unsent, mergeErr := profilesplit.Merge(append(pending, p)...)
			if mergeErr != nil {
				n := unsent.SampleCount()
				e.drop(ctx, n, "encoding")
				return consumererror.NewPermanent(fmt.Errorf("cannot keep the unsent part of a split request for retry: %w (after: %w)", mergeErr, err))
			}
			return xconsumererror.NewProfiles(err, unsent)
		}
	}
	if len(permErrs) > 0 {
		return consumererror.NewPermanent(errors.Join(permErrs...))
	}
	return nil
}

// split halves p with the shared splitting code and counts its samples as
// split. A request with an index outside its dictionary cannot be halved: it
// is dropped as a bad request, and the error names the field.
func (e *nexovueExporter) split(ctx context.Context, p pprofile.Profiles) (first, second pprofile.Profiles, ok bool, err error) {
	n := p.SampleCount()
	if n < 2 || e.halve == nil {
		return first, second, false, nil
	}
	first, second, ok, err = e.halve(p)
	if err != nil {
		e.drop(ctx, n, "bad_request")
		e.logger.Error("a request to the nexovue ingest is malformed and cannot be split; its samples are dropped",
			zap.Error(err), zap.Int("dropped_samples", n), zap.String("url", e.url))
		return first, second, false, fmt.Errorf("bad request: cannot split it for %s: %w", e.url, err)
	}
	if ok {
		e.telemetry.ExporterNexovueSamplesSplit.Add(ctx, int64(n), e.with())
	}
	return first, second, ok, nil
}

// sendDraining is send, except while the in-memory queue drains at
// shutdown: the helper's retries are stopped then, so a request throttled
// with a Retry-After is tried again here once the gate opens, until the
// shutdown context ends (or max_elapsed_time has passed); then it is counted
// as dropped. Other retryable failures are left to the helper, as before.
func (e *nexovueExporter) sendDraining(ctx context.Context, p pprofile.Profiles) (outcome, error) {
	start := time.Now()
	for {
		out, err := e.send(ctx, p)
		if out == rejectedKey && e.hold > 0 {
			werr := e.holdRejected(ctx)
			if werr == nil {
				continue // try the key again
			}
			out, err = retryable, fmt.Errorf("%w; %w", err, werr)
		}
		if out == retryable && errors.Is(err, errStopped) && !e.persistentQueue() {
			e.drop(ctx, p.SampleCount(), "shutdown")
			return out, err
		}
		if out != retryable || !e.drainingInMemory() || e.state.gateWait() <= 0 {
			return out, err
		}
		if limit := e.maxGateWait(); limit > 0 && time.Since(start)+e.state.gateWait() > limit {
			e.drop(ctx, p.SampleCount(), "shutdown")
			return out, err
		}
		// send waits for the gate before the next attempt.
	}
}

func (e *nexovueExporter) drop(ctx context.Context, n int, reason string) {
	e.telemetry.ExporterNexovueSamplesDropped.Add(ctx, int64(n), e.with(attribute.String("reason", reason)))
}

// send makes one HTTP attempt with p, after the pacing and the Retry-After gate allow it.
func (e *nexovueExporter) send(ctx context.Context, p pprofile.Profiles) (outcome, error) {
	n := p.SampleCount()
	body, _, err := e.enc.encode(p)
	if err != nil {
		e.drop(ctx, n, "encoding")
		return permanent, fmt.Errorf("encoding profiles: %w", err)
	}

	var (
		resp *http.Response
		w    waits
		left time.Time // when the request left
	)
	for {
		w, err = e.state.admit(ctx, e.stop, n, e.maxGateWait())
		e.recordWaits(ctx, w)
		var tooLong gateTooLongError
		if errors.As(err, &tooLong) {
			// The helper would give up at once on a delay past max_elapsed_time
			// without this exporter counting it: drop and count it here.
			reason := "retry_after"
			if e.drainingInMemory() {
				reason = "shutdown"
			}
			e.drop(ctx, n, reason)
			e.logger.Error("a request to the nexovue ingest is dropped: the ingest's Retry-After holds it back longer than retry_on_failure::max_elapsed_time",
				zap.Duration("retry_after", tooLong.wait.Round(time.Millisecond)), zap.Duration("max_elapsed_time", tooLong.maxWait),
				zap.Int("dropped_samples", n), zap.String("url", e.url))
			return permanent, consumererror.NewPermanent(fmt.Errorf("request to %s held back: %w", e.url, err))
		}
		if err != nil {
			return retryable, fmt.Errorf("request to %s held back by pacing or Retry-After: %w", e.url, err)
		}
		left = e.state.now()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
		if err != nil {
			return permanent, fmt.Errorf("building the request to %s: %w", e.url, err)
		}
		req.Header = e.header.Clone()
		resp, err = e.client.Do(req)
		if errors.Is(err, errGateClosed) {
			// Another consumer got a Retry-After since admit: wait for it.
			e.state.cancel(w.booking)
			continue
		}
		// The ingest counted the request, if at all, before it answered:
		// its samples stay in the pacing window until a window after now.
		e.state.answered(w.booking)
		if err != nil {
			e.countRequest(ctx, 0)
			return retryable, fmt.Errorf("sending to %s: %w", e.url, e.redactErr(err))
		}
		break
	}
	msg, partial := e.readResponse(resp)
	e.countRequest(ctx, resp.StatusCode)
	code := resp.StatusCode
	if code < 200 || code > 299 {
		// The ingest counts only the samples it accepts against the limit.
		e.state.cancel(w.booking)
	}

	switch {
	case code >= 200 && code <= 299:
		e.state.acceptedAt(left, n)
		e.telemetry.ExporterNexovueSamplesSent.Add(ctx, int64(n), e.with())
		if partial != nil {
			e.logger.Warn("nexovue ingest accepted the request partially",
				zap.Int64("rejected_profiles", partial.RejectedProfiles()),
				zap.String("message", e.redact(partial.ErrorMessage())),
				zap.Int("samples", n))
		}
		return sent, nil
	case code == http.StatusRequestEntityTooLarge:
		return tooLarge, fmt.Errorf("request to %s refused as too large (HTTP 413): %s", e.url, msg)
	case (code == http.StatusUnauthorized || code == http.StatusForbidden) && e.hold > 0:
		if e.rejectedLog.should(e.state.now()) {
			e.logger.Error("nexovue ingest rejected the ingest key of this routing rule: its profiles stay queued and are tried again; check the rule's key",
				zap.Int("status_code", code), zap.Duration("retry_interval", e.hold),
				zap.String("url", e.url), zap.String("message", msg))
		}
		return rejectedKey, fmt.Errorf("request to %s refused: the ingest rejected the key of route %q (HTTP %d)", e.url, e.route, code)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		e.drop(ctx, n, "rejected_key")
		if e.state.shouldLogRejectedKey() {
			e.logger.Error("nexovue ingest rejected the ingest key: check NEXOVUE_KEY (the exporter's `key` setting); profiles are dropped until it is fixed",
				zap.Int("status_code", code), zap.String("url", e.url), zap.String("message", msg), zap.Int("dropped_samples", n))
		}
		// A permanent error, so that the helper counts the samples as
		// failed; the explanation above is logged once a minute.
		return rejectedKey, fmt.Errorf("request to %s refused: the ingest rejected the key (HTTP %d)", e.url, code)
	case code == http.StatusBadRequest:
		e.drop(ctx, n, "bad_request")
		e.logger.Error("the endpoint refused the request (HTTP 400)",
			zap.String("url", e.url),
			zap.String("message", msg),
			zap.String("profiles_format", profilesFormat()),
			zap.String("hint", "a 400 naming a table index means the ingest expects a different profiles format than this build's; use a Collector version the ingest supports"),
			zap.Int("dropped_samples", n))
		return permanent, fmt.Errorf("request to %s refused (HTTP 400): %s (this build sends %s)", e.url, msg, profilesFormat())
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		err := fmt.Errorf("request to %s throttled (HTTP %d): %s", e.url, code, msg)
		if code == http.StatusTooManyRequests {
			if rate := e.state.throttled(left); rate > 0 {
				e.logger.Info("nexovue ingest throttled the key (HTTP 429): pacing lowered to the rate the ingest accepted, less 3%; it holds for a minute, then climbs back without 429s",
					zap.Int("samples_per_second", int(rate)), zap.Int("rate_limit", e.cfg.RateLimit.SamplesPerSecond), zap.String("url", e.url))
			}
		}
		now := time.Now()
		until, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now)
		if !ok || !until.After(now) {
			if code == http.StatusTooManyRequests {
				e.state.throttledWithoutRetryAfter()
			}
			return retryable, err // exponential backoff
		}
		// No request with this key leaves before until: the gate holds back
		// every consumer, and the retry helper waits at least as long.
		e.state.closeGate(until)
		delay := until.Sub(now)
		if e.cfg.RetryConfig.Enabled {
			e.recordWait(ctx, delay, "retry_after")
		}
		return retryable, exporterhelper.NewThrottleRetry(err, delay)
	case code >= 500:
		return retryable, fmt.Errorf("request to %s failed (HTTP %d): %s", e.url, code, msg)
	default:
		e.drop(ctx, n, "rejected")
		return permanent, fmt.Errorf("request to %s refused (HTTP %d): %s", e.url, code, msg)
	}
}

// maxGateWait bounds how long a request waits for the Retry-After gate: the
// helper's max_elapsed_time, past which it would drop the request anyway (0:
// no bound, when retries are off or have no time limit).
func (e *nexovueExporter) maxGateWait() time.Duration {
	if !e.cfg.RetryConfig.Enabled {
		return 0
	}
	return e.cfg.RetryConfig.MaxElapsedTime
}

func (e *nexovueExporter) countRequest(ctx context.Context, code int) {
	e.telemetry.ExporterNexovueRequests.Add(ctx, 1, e.with(attribute.Int("status_code", code)))
}

func (e *nexovueExporter) recordWaits(ctx context.Context, w waits) {
	e.recordWait(ctx, w.pacing, "pacing")
	e.recordWait(ctx, w.retryAfter, "retry_after")
}

func (e *nexovueExporter) recordWait(ctx context.Context, d time.Duration, reason string) {
	if d > 0 {
		e.telemetry.ExporterNexovueWaitTime.Add(ctx, d.Seconds(), e.with(attribute.String("reason", reason)))
	}
}

// with returns the attributes of a metric: the exporter, the route when
// routing is configured, then kv.
func (e *nexovueExporter) with(kv ...attribute.KeyValue) metric.MeasurementOption {
	attrs := make([]attribute.KeyValue, 0, len(kv)+2)
	attrs = append(attrs, e.id)
	if e.route != "" {
		attrs = append(attrs, attribute.String("route", e.route))
	}
	return metric.WithAttributes(append(attrs, kv...)...)
}

// holdRejected waits, for a route whose key the ingest refused, until the
// key is tried again; the wait is counted with reason rejected_key. It
// returns errStopped when shutdown stops waiting, or ctx's error.
func (e *nexovueExporter) holdRejected(ctx context.Context) error {
	start := time.Now()
	t := time.NewTimer(e.hold)
	defer t.Stop()
	defer func() { e.recordWait(ctx, time.Since(start), "rejected_key") }()
	select {
	case <-t.C:
		return nil
	case <-e.stop:
		return errStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rejectedLog lets the rejected-key error of one route be logged at most
// once a minute.
type rejectedLog struct {
	mu   sync.Mutex
	last time.Time
}

func (l *rejectedLog) should(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < time.Minute {
		return false
	}
	l.last = now
	return true
}
