package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumererror/xconsumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter/internal/metadata"
)

const (
	maxResponseBytes   = 64 * 1024
	maxLoggedMessage   = 1024
	maxRetryAfter      = 24 * time.Hour
	protobufType       = "application/x-protobuf"
	jsonType           = "application/json"
	pprofileModulePath = "go.opentelemetry.io/collector/pdata/pprofile"
	// collectorVersion is the profiles format this build speaks when the build
	// information does not name the pprofile module (it tracks Collector releases).
	collectorVersion = "0.161.0"
)

// halveFunc splits a request (refused as too large, or over the pacing
// limit) into two halves with compacted dictionaries; ok is false when it
// cannot be split.
type halveFunc func(pprofile.Profiles) (first, second pprofile.Profiles, ok bool)

type nexovueExporter struct {
	cfg       *Config
	set       component.TelemetrySettings
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	url       string
	key       string
	userAgent string
	halve     halveFunc

	// Set by start.
	client *http.Client
	enc    *encoder
	header http.Header
	state  *keyState

	stopOnce    sync.Once
	stop        chan struct{}
	releaseOnce sync.Once
}

func newExporter(cfg *Config, set exporter.Settings, halve halveFunc) (*nexovueExporter, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &nexovueExporter{
		cfg:       cfg,
		set:       set.TelemetrySettings,
		logger:    set.Logger,
		telemetry: tb,
		url:       cfg.profilesURL(),
		key:       string(cfg.Key),
		userAgent: fmt.Sprintf("%s/%s (%s/%s)", set.BuildInfo.Description, set.BuildInfo.Version, runtime.GOOS, runtime.GOARCH),
		halve:     halve,
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
	e.state = acquireKeyState(e.url, e.key, e.cfg.RateLimit.SamplesPerSecond)
	client.Transport = &gateTransport{base: client.Transport, state: e.state}
	e.client, e.enc = client, enc
	e.header = e.cfg.header(e.userAgent)
	if ownGzip {
		e.header.Set("Content-Encoding", "gzip")
	}
	return nil
}

// sameOriginRedirects follows a redirect only to the same scheme and host:
// Go's client would forward the key header to any host it is sent to. A
// redirect elsewhere comes back as the answer (and is refused as a 3xx).
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return http.ErrUseLastResponse
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

var errGateClosed = errors.New("the Retry-After gate closed before the request left")

// gateTransport is the outermost layer of the exporter's HTTP client. It
// checks the Retry-After gate at the last moment before a request leaves,
// and closes it as soon as an answer with a Retry-After comes back, before
// its body is read: the window in which another consumer could still send
// after the exporter has the answer is as short as it can be.
type gateTransport struct {
	base  http.RoundTripper
	state *keyState
}

func (g *gateTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if g.state.gateWait() > 0 {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, errGateClosed
	}
	resp, err := g.base.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		now := time.Now()
		if until, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now); ok && until.After(now) {
			g.state.closeGate(until)
		}
	}
	return resp, err
}

func gzipLevel(level int) int {
	if level == 0 {
		return -1 // gzip's default
	}
	return level
}

// stopWaiting makes requests held back by pacing or Retry-After give up, so
// that shutdown does not wait for them.
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
func (e *nexovueExporter) push(ctx context.Context, pd pprofile.Profiles) error {
	pending := []pprofile.Profiles{pd} // a stack: the first half is sent first
	done := false                      // some part was accepted or dropped
	var permErrs []error
	for len(pending) > 0 {
		p := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if limit := e.state.maxSamples(); limit > 0 && p.SampleCount() > limit {
			if first, second, ok := e.split(ctx, p); ok {
				pending = append(pending, second, first)
				continue
			}
		}
		out, err := e.send(ctx, p)
		switch out {
		case sent:
			done = true
		case permanent:
			done = true
			permErrs = append(permErrs, err)
		case rejectedKey:
			done = true
		case tooLarge:
			if first, second, ok := e.split(ctx, p); ok {
				pending = append(pending, second, first)
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
			unsent, mergeErr := merge(append(pending, p))
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

// split halves p with the shared splitting code and counts its samples as split.
func (e *nexovueExporter) split(ctx context.Context, p pprofile.Profiles) (first, second pprofile.Profiles, ok bool) {
	n := p.SampleCount()
	if n < 2 || e.halve == nil {
		return first, second, false
	}
	if first, second, ok = e.halve(p); ok {
		e.telemetry.ExporterNexovueSamplesSplit.Add(ctx, int64(n))
	}
	return first, second, ok
}

// merge joins the parts into the first one, whose dictionary keeps the zero
// entries the data model requires at index 0.
func merge(parts []pprofile.Profiles) (pprofile.Profiles, error) {
	out := parts[0]
	for _, p := range parts[1:] {
		if err := p.MergeTo(out); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (e *nexovueExporter) drop(ctx context.Context, n int, reason string) {
	e.telemetry.ExporterNexovueSamplesDropped.Add(ctx, int64(n), metric.WithAttributes(attribute.String("reason", reason)))
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
	)
	for {
		w, err = e.state.admit(ctx, e.stop, n)
		e.recordWaits(ctx, w)
		if err != nil {
			return retryable, fmt.Errorf("request to %s held back by pacing or Retry-After: %w", e.url, err)
		}
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
		e.telemetry.ExporterNexovueSamplesSent.Add(ctx, int64(n))
		if partial != nil {
			e.logger.Warn("nexovue ingest accepted the request partially",
				zap.Int64("rejected_profiles", partial.RejectedProfiles()),
				zap.String("message", e.redact(partial.ErrorMessage())),
				zap.Int("samples", n))
		}
		return sent, nil
	case code == http.StatusRequestEntityTooLarge:
		return tooLarge, fmt.Errorf("request to %s refused as too large (HTTP 413): %s", e.url, msg)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		e.drop(ctx, n, "rejected_key")
		if e.state.shouldLogRejectedKey() {
			e.logger.Error("nexovue ingest rejected the ingest key: check NEXOVUE_KEY (the exporter's `key` setting); profiles are dropped until it is fixed",
				zap.Int("status_code", code), zap.String("url", e.url), zap.String("message", msg), zap.Int("dropped_samples", n))
		}
		return rejectedKey, nil
	case code == http.StatusBadRequest:
		e.drop(ctx, n, "bad_request")
		e.logger.Error("nexovue ingest refused the request (HTTP 400)",
			zap.String("message", msg),
			zap.String("profiles_format", profilesFormat()),
			zap.String("hint", "a 400 naming a table index means the ingest expects a different profiles format than this build's; use a Collector version the ingest supports"),
			zap.Int("dropped_samples", n))
		return permanent, fmt.Errorf("request to %s refused (HTTP 400): %s (this build sends %s)", e.url, msg, profilesFormat())
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		err := fmt.Errorf("request to %s throttled (HTTP %d): %s", e.url, code, msg)
		now := time.Now()
		until, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now)
		if !ok || !until.After(now) {
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

func (e *nexovueExporter) countRequest(ctx context.Context, code int) {
	e.telemetry.ExporterNexovueRequests.Add(ctx, 1, metric.WithAttributes(attribute.Int("status_code", code)))
}

func (e *nexovueExporter) recordWaits(ctx context.Context, w waits) {
	e.recordWait(ctx, w.pacing, "pacing")
	e.recordWait(ctx, w.retryAfter, "retry_after")
}

func (e *nexovueExporter) recordWait(ctx context.Context, d time.Duration, reason string) {
	if d > 0 {
		e.telemetry.ExporterNexovueWaitTime.Add(ctx, d.Seconds(), metric.WithAttributes(attribute.String("reason", reason)))
	}
}

// parseRetryAfter reads a Retry-After value in either of its forms
// (delay-seconds or HTTP-date) and returns the time before which no request
// may leave.
func parseRetryAfter(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > int64(maxRetryAfter/time.Second) {
			secs = int64(maxRetryAfter / time.Second)
		}
		return now.Add(time.Duration(secs) * time.Second), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return time.Time{}, false
	}
	return minTime(t, now.Add(maxRetryAfter)), true
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// readResponse reads at most maxResponseBytes of the body and closes it. It
// returns the ingest's message (from a google.rpc.Status, JSON or text body),
// with the key redacted, and for 2xx answers the partial success, if any.
func (e *nexovueExporter) readResponse(resp *http.Response) (string, *pprofileotlp.ExportPartialSuccess) {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	_, _ = io.CopyN(io.Discard, resp.Body, maxResponseBytes) // let the connection be reused
	ctype := resp.Header.Get("Content-Type")
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if len(body) == 0 {
			return "", nil
		}
		r := pprofileotlp.NewExportResponse()
		var err error
		switch {
		case strings.HasPrefix(ctype, protobufType):
			err = r.UnmarshalProto(body)
		case strings.HasPrefix(ctype, jsonType):
			err = r.UnmarshalJSON(body)
		default:
			return "", nil
		}
		if err != nil {
			return "", nil
		}
		ps := r.PartialSuccess()
		if ps.RejectedProfiles() == 0 && ps.ErrorMessage() == "" {
			return "", nil
		}
		return "", &ps
	}
	return truncate(e.redact(responseMessage(ctype, body))), nil
}

func responseMessage(ctype string, body []byte) string {
	switch {
	case strings.HasPrefix(ctype, protobufType):
		st := &status.Status{}
		if err := proto.Unmarshal(body, st); err == nil && st.GetMessage() != "" {
			return st.GetMessage()
		}
	case strings.HasPrefix(ctype, jsonType):
		var st struct {
			Message string `json:"message"`
			Error   string `json:"error"`
		}
		if err := json.Unmarshal(body, &st); err == nil && (st.Message != "" || st.Error != "") {
			return strings.TrimSpace(st.Message + " " + st.Error)
		}
	}
	msg := strings.TrimSpace(string(body))
	if msg == "" {
		return "(no message)"
	}
	return msg
}

// truncate keeps a logged message short and valid UTF-8.
func truncate(msg string) string {
	if len(msg) > maxLoggedMessage {
		msg = msg[:maxLoggedMessage] + "…"
	}
	return strings.ToValidUTF8(msg, "?")
}

// redact removes the key from anything the ingest or the network sends back.
func (e *nexovueExporter) redact(s string) string {
	if e.key == "" {
		return s
	}
	return strings.ReplaceAll(s, e.key, "[REDACTED]")
}

func (e *nexovueExporter) redactErr(err error) error {
	if e.key == "" || !strings.Contains(err.Error(), e.key) {
		return err
	}
	return errors.New(e.redact(err.Error()))
}

var profilesFormat = sync.OnceValue(func() string {
	v := collectorVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == pprofileModulePath {
				v = strings.TrimPrefix(dep.Version, "v")
				if dep.Replace != nil && dep.Replace.Version != "" {
					v = strings.TrimPrefix(dep.Replace.Version, "v")
				}
				break
			}
		}
	}
	return "OTLP profiles v1development of OpenTelemetry Collector " + v
})
