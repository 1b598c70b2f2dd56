// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// TestKeyNeverLeaks goes through every answer the ingest documents, with
// answers that echo the key back, and checks that the key shows up in no
// log (at debug level, the helper's included), no error and no metric or span.
func TestKeyNeverLeaks(t *testing.T) {
	partial := pprofileotlp.NewExportResponse()
	partial.PartialSuccess().SetRejectedProfiles(1)
	partial.PartialSuccess().SetErrorMessage("rejected for key " + testKey)
	partialBody, err := partial.MarshalProto()
	require.NoError(t, err)
	echo := []byte("bad key " + testKey)

	answers := []reply{
		{status: http.StatusOK, ctype: "application/x-protobuf", body: partialBody},
		{status: http.StatusUnauthorized, ctype: "text/plain", body: echo},
		{status: http.StatusForbidden, ctype: "application/json", body: []byte(`{"message":"key ` + testKey + ` is revoked"}`)},
		{status: http.StatusBadRequest, ctype: "text/plain", body: echo},
		{status: http.StatusNotFound, ctype: "text/plain", body: echo},
		{status: http.StatusRequestEntityTooLarge, ctype: "text/plain", body: echo},
		{status: http.StatusTooManyRequests, ctype: "text/plain", body: echo, header: map[string]string{"Retry-After": "0"}},
		{status: http.StatusServiceUnavailable, ctype: "text/plain", body: echo, header: map[string]string{"Retry-After": "bogus " + testKey}},
		{status: http.StatusInternalServerError, ctype: "text/plain", body: echo},
	}
	ing := newFakeIngest(t, func(i int, _ *received) reply { return answers[i%len(answers)] })
	cfg := testConfig(ing.srv.URL)
	cfg.RetryConfig.Enabled = false
	h := newHarness(t, cfg)

	var errs []error
	for range answers {
		// One sample, so that a 413 is final and each answer is one request.
		errs = append(errs, h.exp.ConsumeProfiles(context.Background(), batch(1, 41)))
	}
	require.Len(t, ing.requests(), len(answers))
	assert.Equal(t, testKey, ing.requests()[0].header.Get(keyHeader), "the key was sent")

	// A network error too (nothing listens any more).
	closed := newFakeIngest(t, nil)
	closed.srv.Close()
	cfg2 := testConfig(closed.srv.URL)
	cfg2.RetryConfig.Enabled = false
	h2 := newHarness(t, cfg2)
	errs = append(errs, h2.exp.ConsumeProfiles(context.Background(), batch(1, 42)))

	for i, err := range errs[1:] {
		if code := answers[(i+1)%len(answers)].status; code == http.StatusUnauthorized || code == http.StatusForbidden {
			require.True(t, consumererror.IsPermanent(err), "a rejected key is dropped, counted and failed permanently: %v", err)
			continue
		}
		require.Error(t, err, "answer %d", i+1)
		assert.NotContains(t, err.Error(), testKey)
	}
	for _, hh := range []*harness{h, h2} {
		logs := hh.logText()
		require.NotEmpty(t, logs)
		assert.NotContains(t, logs, testKey)
		tel := hh.telemetryText(t)
		require.Contains(t, tel, "otelcol_exporter_nexovue_requests")
		assert.NotContains(t, tel, testKey)
	}
	// The messages were kept, with the key redacted.
	assert.Contains(t, h.logText(), "bad key [REDACTED]")
}

func TestKeyIsRedactedWhenTheConfigIsPrinted(t *testing.T) {
	cfg := testConfig("https://ingest.nexovue.com")
	conf := confmap.New()
	require.NoError(t, conf.Marshal(cfg))
	printed := fmt.Sprint(conf.ToStringMap())
	assert.Contains(t, printed, "key:[REDACTED]")
	assert.NotContains(t, printed, testKey)
	assert.NotContains(t, fmt.Sprintf("%v %+v", cfg, *cfg), testKey)
}
