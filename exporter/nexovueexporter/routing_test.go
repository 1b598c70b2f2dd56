// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter/internal/metadatatest"
	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
)

// The three keys of the routing tests; none may show up in logs, errors or
// telemetry.
const (
	keyPayments = "nxv-SECRET-payments-71aa"
	keySearch   = "nxv-SECRET-search-93bc"
	keyPlatform = "nxv-SECRET-platform-05de"
)

var routeKeys = []string{keyPayments, keySearch, keyPlatform}

// namespaces of the test batches and the key each must reach.
var nsKey = map[string]string{
	"payments":        keyPayments,
	"payments-canary": keyPayments,
	"search-eu":       keySearch,
	"search-us":       keySearch,
	"kube-system":     keyPlatform,
	"":                keyPlatform, // no namespace attribute
}

func routingConfig(url string) *Config {
	cfg := testConfig(url)
	cfg.Key = keyPlatform
	q := exporterhelper.NewDefaultQueueConfig()
	q.NumConsumers = 2
	cfg.QueueConfig = configoptional.Some(q)
	cfg.Routing.Rules = []RouteRule{
		{Name: "payments", Attribute: "k8s.namespace.name", Values: []string{"payments", "payments-canary"}, Key: keyPayments},
		{Name: "search", Attribute: "k8s.namespace.name", Pattern: "^search-.*$", Key: keySearch},
	}
	cfg.Routing.RejectedKeyRetryInterval = 50 * time.Millisecond
	return cfg
}

// nsBatch is a batch of 6 resources, one per namespace of nsKey (the last
// without the attribute), whose samples carry their ordinal (seq).
func nsBatch(samples int, seed uint64) pprofile.Profiles {
	pd := batchN(samples, seed, 6)
	names := []string{"payments", "search-eu", "kube-system", "payments-canary", "search-us", ""}
	for i, rp := range pd.ResourceProfiles().All() {
		if names[i] != "" {
			rp.Resource().Attributes().PutStr("k8s.namespace.name", names[i])
		}
	}
	return pd
}

// wantByKey resolves the samples of pd by the key each must reach.
func wantByKey(pd pprofile.Profiles) map[string][]string {
	out := map[string][]string{}
	for _, rp := range pd.ResourceProfiles().All() {
		one := pprofile.NewProfiles()
		pd.Dictionary().CopyTo(one.Dictionary())
		rp.CopyTo(one.ResourceProfiles().AppendEmpty())
		ns, _ := rp.Resource().Attributes().Get("k8s.namespace.name")
		k := nsKey[ns.Str()]
		out[k] = append(out[k], profilesplit.ResolveSamples(one, 0)...)
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// acceptedByKey is the sorted resolved samples of the 2xx requests by key.
func (f *fakeIngest) acceptedByKey() map[string][]string {
	out := map[string][]string{}
	for _, r := range f.requests() {
		if r.status >= 200 && r.status <= 299 {
			k := r.header.Get(keyHeader)
			out[k] = append(out[k], profilesplit.ResolveSamples(r.pd, 0)...)
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

func newRoutedHarness(t *testing.T, cfg *Config) *harness {
	t.Helper()
	require.NoError(t, confmap.Validate(cfg))
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	core, logs := observer.New(zapcore.DebugLevel)
	set := metadatatest.NewSettings(tel)
	set.Logger = zap.New(core)
	exp, err := NewFactory().(xexporter.Factory).CreateProfiles(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	h := &harness{exp: exp, tel: tel, logs: logs}
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return h
}

// waitFor polls cond (every 10 ms, up to 20 s) and fails with what was seen.
func waitFor(t *testing.T, what string, cond func() bool, seen func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; seen: %s", what, seen())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countsByKey(m map[string][]string) string {
	var parts []string
	for _, k := range []string{keyPayments, keySearch, keyPlatform} {
		parts = append(parts, fmt.Sprintf("%s=%d", keyName(k), len(m[k])))
	}
	return strings.Join(parts, " ")
}

func keyName(k string) string {
	switch k {
	case keyPayments:
		return "payments"
	case keySearch:
		return "search"
	case keyPlatform:
		return "platform"
	}
	return "other"
}

func TestRoutingEachKeyGetsExactlyItsNamespaces(t *testing.T) {
	f := newFakeIngest(t, nil)
	h := newRoutedHarness(t, routingConfig(f.srv.URL))
	want := map[string][]string{}
	for i := range 5 {
		pd := nsBatch(600, uint64(i))
		for k, s := range wantByKey(pd) {
			want[k] = append(want[k], s...)
		}
		require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))
	}
	total := 0
	for k := range want {
		slices.Sort(want[k])
		total += len(want[k])
	}
	require.Equal(t, 3000, total)
	waitFor(t, "every sample", func() bool {
		n := 0
		for _, s := range f.acceptedByKey() {
			n += len(s)
		}
		return n >= total
	}, func() string { return countsByKey(f.acceptedByKey()) })
	got := f.acceptedByKey()
	for _, k := range routeKeys {
		require.Equal(t, want[k], got[k], "key of %s: exactly its namespaces' samples", keyName(k))
	}
	require.Len(t, got, 3, "no request without one of the three keys")
	for _, r := range f.requests() {
		require.Len(t, r.header.Values(keyHeader), 1)
	}
	// The metrics carry the rule's name, never the key.
	for route, k := range map[string]string{"payments": keyPayments, "search": keySearch, DefaultRoute: keyPlatform} {
		assert.Equal(t, int64(len(want[k])), h.intSum(t, "otelcol_exporter_nexovue_samples_sent", attribute.String("route", route)), route)
	}
	text := h.telemetryText(t) + h.logText()
	for _, k := range routeKeys {
		require.NotContains(t, text, k)
	}
}

// A key throttled with Retry-After holds back its own route only: the
// others arrive while it is throttled, and its own samples arrive, once,
// after the throttling ends.
func TestRoutingThrottledKeyDoesNotDelayOthers(t *testing.T) {
	var throttle atomic.Bool
	throttle.Store(true)
	f := newFakeIngest(t, func(_ int, r *received) reply {
		if r.header.Get(keyHeader) == keySearch && throttle.Load() {
			return reply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "1"}}
		}
		return reply{status: http.StatusOK}
	})
	h := newRoutedHarness(t, routingConfig(f.srv.URL))
	want := map[string][]string{}
	for i := range 8 {
		pd := nsBatch(300, uint64(i))
		for k, s := range wantByKey(pd) {
			want[k] = append(want[k], s...)
		}
		require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))
	}
	for k := range want {
		slices.Sort(want[k])
	}
	waitFor(t, "payments and platform while search is throttled", func() bool {
		got := f.acceptedByKey()
		return len(got[keyPayments]) == len(want[keyPayments]) && len(got[keyPlatform]) == len(want[keyPlatform])
	}, func() string { return countsByKey(f.acceptedByKey()) })
	got := f.acceptedByKey()
	require.Empty(t, got[keySearch])
	require.Equal(t, want[keyPayments], got[keyPayments])
	require.Equal(t, want[keyPlatform], got[keyPlatform])
	// Nothing of payments or platform was ever refused or retried.
	for _, r := range f.requests() {
		if r.header.Get(keyHeader) != keySearch {
			require.Equal(t, http.StatusOK, r.status)
		}
	}
	throttle.Store(false)
	waitFor(t, "search after its throttling ends", func() bool {
		return len(f.acceptedByKey()[keySearch]) >= len(want[keySearch])
	}, func() string { return countsByKey(f.acceptedByKey()) })
	require.Equal(t, want[keySearch], f.acceptedByKey()[keySearch], "nothing lost or duplicated")
	assert.Positive(t, h.intSum(t, "otelcol_exporter_nexovue_requests", attribute.String("route", "search"), attribute.Int("status_code", 429)))
	assert.Zero(t, h.intSum(t, "otelcol_exporter_nexovue_requests", attribute.String("route", "payments"), attribute.Int("status_code", 429)))
}

// A refused key (401) keeps its route's profiles queued, logs once naming
// the rule (not the key), and they arrive once the key is accepted again.
func TestRoutingRejectedKeyStaysQueuedAndArrivesAfterRestore(t *testing.T) {
	var revoked atomic.Bool
	revoked.Store(true)
	f := newFakeIngest(t, func(_ int, r *received) reply {
		if r.header.Get(keyHeader) == keyPayments && revoked.Load() {
			return reply{status: http.StatusUnauthorized, body: []byte("unknown key")}
		}
		return reply{status: http.StatusOK}
	})
	h := newRoutedHarness(t, routingConfig(f.srv.URL))
	want := map[string][]string{}
	for i := range 6 {
		pd := nsBatch(300, uint64(100+i))
		for k, s := range wantByKey(pd) {
			want[k] = append(want[k], s...)
		}
		require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))
	}
	for k := range want {
		slices.Sort(want[k])
	}
	refused := func() int {
		n := 0
		for _, r := range f.requests() {
			if r.status == http.StatusUnauthorized {
				n++
			}
		}
		return n
	}
	waitFor(t, "search and platform, and payments refused a few times", func() bool {
		got := f.acceptedByKey()
		return len(got[keySearch]) == len(want[keySearch]) && len(got[keyPlatform]) == len(want[keyPlatform]) && refused() >= 6
	}, func() string { return fmt.Sprintf("%s refused=%d", countsByKey(f.acceptedByKey()), refused()) })
	require.Equal(t, want[keySearch], f.acceptedByKey()[keySearch])
	require.Equal(t, want[keyPlatform], f.acceptedByKey()[keyPlatform])

	logged := h.logs.FilterMessageSnippet("rejected the ingest key").All()
	require.Len(t, logged, 1, "one log per minute per rule, not one per request: %s", h.logText())
	assert.Equal(t, "payments", logged[0].ContextMap()["route"])

	revoked.Store(false)
	waitFor(t, "payments after the key is restored", func() bool {
		return len(f.acceptedByKey()[keyPayments]) >= len(want[keyPayments])
	}, func() string { return countsByKey(f.acceptedByKey()) })
	require.Equal(t, want[keyPayments], f.acceptedByKey()[keyPayments], "nothing lost or duplicated")
	assert.Zero(t, h.intSum(t, "otelcol_exporter_nexovue_samples_dropped"))
	assert.Positive(t, h.floatSum(t, "otelcol_exporter_nexovue_wait_time", attribute.String("route", "payments"), attribute.String("reason", "rejected_key")))
	text := h.telemetryText(t) + h.logText()
	for _, k := range routeKeys {
		require.NotContains(t, text, k)
	}
}

// Keys from files are read at start; a missing or empty file fails start
// naming the setting, never the content.
func TestRoutingKeyFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "payments")
	require.NoError(t, os.WriteFile(good, []byte(keyPayments+"\n"), 0o600))
	f := newFakeIngest(t, nil)
	cfg := routingConfig(f.srv.URL)
	cfg.Routing.Rules[0].Key, cfg.Routing.Rules[0].KeyFile = "", good
	h := newRoutedHarness(t, cfg)
	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), nsBatch(60, 1)))
	waitFor(t, "payments' samples", func() bool { return len(f.acceptedByKey()[keyPayments]) > 0 },
		func() string { return countsByKey(f.acceptedByKey()) })

	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	for file, want := range map[string]string{
		filepath.Join(dir, "missing"): "routing::rules::1::key_file: cannot read the ingest key",
		empty:                         "routing::rules::1::key_file: " + empty + " is empty",
	} {
		cfg := routingConfig(f.srv.URL)
		cfg.Routing.Rules[1].Key, cfg.Routing.Rules[1].KeyFile = "", file
		exp, err := NewFactory().(xexporter.Factory).CreateProfiles(context.Background(), metadatatest.NewSettings(componenttest.NewTelemetry()), cfg)
		require.NoError(t, err)
		err = exp.Start(context.Background(), componenttest.NewNopHost())
		require.ErrorContains(t, err, want)
		require.NoError(t, exp.Shutdown(context.Background()))
	}
}

func TestRoutingValidate(t *testing.T) {
	for name, want := range map[string]string{
		"routing_noname":     "routing::rules::0::name: every rule needs a name",
		"routing_nokey":      "routing::rules::1::key: the rule's ingest key is empty",
		"routing_badpattern": "routing::rules::0::pattern: not a valid regular expression",
		"routing_dupname":    `routing::rules::1::name: "team" is also the name of routing::rules::0`,
		"routing_both":       "routing::rules::0: set either values or pattern, not both",
		"routing_nomatch":    "routing::rules::0: set values (exact matches) or pattern",
		"routing_default":    `routing::rules::0::name: "default" is the name of the resources no rule matches`,
		"routing_noattr":     "routing::rules::0::attribute: must name a resource attribute",
		"routing_noqueue":    "sending_queue: routing needs the sending queue enabled",
		"routing_twokeys":    "routing::rules::0::key_file: set either key or key_file, not both",
	} {
		t.Run(name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, name))
			require.ErrorContains(t, err, want)
			require.NotContains(t, err.Error(), "SECRET")
		})
	}
	cfg := loadConfig(t, "routing")
	require.NoError(t, confmap.Validate(cfg))
	require.Len(t, cfg.Routing.Rules, 2)
	assert.Equal(t, []string{"payments", "payments-canary"}, cfg.Routing.Rules[0].Values)
	assert.Equal(t, "/etc/nexovue/keys/search", cfg.Routing.Rules[1].KeyFile)
	assert.Equal(t, DefaultRejectedKeyRetryInterval, cfg.Routing.RejectedKeyRetryInterval)
}

func TestRouteIDs(t *testing.T) {
	typ := component.MustNewType("nexovue")
	assert.Equal(t, "nexovue/route.payments", routeID(component.NewID(typ), "payments").String())
	assert.Equal(t, "nexovue/eu.route.payments", routeID(component.NewIDWithName(typ, "eu"), "payments").String())
}

// batchN is batch with n resources.
func batchN(samples int, seed uint64, n int) pprofile.Profiles {
	return profilegen.Generate(profilegen.Config{Samples: samples, Seq: true, Seed: seed, Resources: n, Stacks: 40, Depth: 24})
}
