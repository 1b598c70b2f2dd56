// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"errors"
	"net/http"
	"time"
)

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
