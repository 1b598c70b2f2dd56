// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package pprofreceiver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

// TestRedirectToAnotherHostCarriesNoSecret: confighttp adds the configured
// headers in its transport, to every request, so a redirect to another origin
// would hand them to that host. It is not followed; a same-origin redirect
// is, with the headers.
func TestRedirectToAnotherHostCarriesNoSecret(t *testing.T) {
	good := goodProfile(t)
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		assert.Empty(t, r.Header.Get("Authorization"), "the configured header reached another host")
		_, _ = w.Write(good)
	}))
	t.Cleanup(other.Close)

	var sameOriginAuth atomic.Value
	h := startHarness(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/pprof/heap":
			http.Redirect(w, r, other.URL+"/debug/pprof/heap", http.StatusTemporaryRedirect)
		case "/moved/heap":
			sameOriginAuth.Store(r.Header.Get("Authorization"))
			_, _ = w.Write(good)
		case "/debug/pprof/same":
			http.Redirect(w, r, "/moved/heap", http.StatusFound)
		}
	}, func(c *Config) {
		c.Remote.Client.Headers = configopaque.MapList{{Name: "Authorization", Value: "Bearer s3cret"}}
	})
	require.Eventually(t, func() bool { return len(h.failures()) >= 2 }, 10*time.Second, 5*time.Millisecond)
	assert.Zero(t, elsewhere.Load(), "a redirect to another origin is not followed")
	assert.Contains(t, h.failures()[0].ContextMap()["error"], "307 Temporary Redirect: redirects are followed only to the same scheme, host and port")
	assert.Empty(t, h.sink.AllProfiles())

	// Same origin: followed, headers included.
	same := strings.Replace(h.url, "/debug/pprof/heap", "/debug/pprof/same", 1)
	cfg := *h.r.cfg
	cfg.Remote.Client.Endpoint = same
	cfg.Remote.Client.Headers = configopaque.MapList{{Name: "Authorization", Value: "Bearer s3cret"}}
	sink := new(consumertest.ProfilesSink)
	startObserved(t, &cfg, sink)
	require.Eventually(t, func() bool { return len(sink.AllProfiles()) > 0 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, "Bearer s3cret", sameOriginAuth.Load())
}
