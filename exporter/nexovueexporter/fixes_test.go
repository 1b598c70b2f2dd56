// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumererror/xconsumererror"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap/zapcore"

	"github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter/internal/metadatatest"
	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
)

// TestUnsentPartsMergeIntoOneCompactDictionary: after a split, the parts not
// sent yet are merged for the helper's retry with profilesplit.Merge, whose
// dictionary holds each entry once. pdata's MergeTo appends every part's
// dictionary (and costs time quadratic in the parts: see BenchmarkMergeUnsent).
func TestUnsentPartsMergeIntoOneCompactDictionary(t *testing.T) {
	ing := newFakeIngest(t, func(i int, _ *received) reply {
		if i == 0 {
			return answer(http.StatusOK)
		}
		return answer(http.StatusServiceUnavailable)
	})
	cfg := testConfig(ing.srv.URL)
	cfg.RateLimit.SamplesPerSecond = 40 // 400 samples: split into 16 parts of 25
	h := newHarness(t, cfg)
	pd := batch(400, 61)
	strs := pd.Dictionary().StringTable().Len()

	err := h.inner.push(context.Background(), pd)
	var unsent xconsumererror.Profiles
	require.ErrorAs(t, err, &unsent)
	require.NoError(t, profilesplit.Validate(unsent.Data()))
	assert.Equal(t, 400-ing.requests()[0].samples, unsent.Data().SampleCount())
	dict := unsent.Data().Dictionary()
	assert.LessOrEqual(t, dict.StringTable().Len(), strs, "each string once in the merged dictionary")
}

// TestSplitReportsAnIndexOutsideTheDictionary: a request that must be split
// (over the pacing limit) but holds an index outside its dictionary is a bad
// request: dropped, counted as bad_request, and the error names the field.
func TestSplitReportsAnIndexOutsideTheDictionary(t *testing.T) {
	ing := newFakeIngest(t, nil)
	cfg := testConfig(ing.srv.URL)
	cfg.RateLimit.SamplesPerSecond = 10
	h := newHarness(t, cfg)
	pd := batch(40, 62)
	s := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0).Samples().At(3)
	s.SetStackIndex(9999)

	err := h.exp.ConsumeProfiles(context.Background(), pd)
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err))
	assert.Contains(t, err.Error(), "bad request")
	assert.Contains(t, err.Error(), "stack_index")
	assert.Contains(t, err.Error(), "9999")
	assert.NotContains(t, err.Error(), "cannot be split further")
	assert.Equal(t, int64(40), h.intSum(t, mDropped, attribute.String("reason", "bad_request")))
	assert.Empty(t, ing.requests())
}

// TestRedactionKeepsTheErrorChain: the key is removed from the text, and a
// timeout can still be told from a cancellation.
func TestRedactionKeepsTheErrorChain(t *testing.T) {
	e := &nexovueExporter{key: testKey}
	for _, cause := range []error{context.DeadlineExceeded, context.Canceled} {
		err := e.redactErr(fmt.Errorf("proxy said %s: %w", testKey, cause))
		assert.NotContains(t, err.Error(), testKey)
		assert.Contains(t, err.Error(), "[REDACTED]")
		assert.ErrorIs(t, err, cause)
	}
	assert.False(t, errors.Is(e.redactErr(fmt.Errorf("%s: %w", testKey, context.Canceled)), context.DeadlineExceeded))
}

// TestClearTextEndpointToARemoteHostWarns: http:// sends the key in clear;
// to a host other than loopback the exporter says so when it starts.
func TestClearTextEndpointToARemoteHostWarns(t *testing.T) {
	for endpoint, warn := range map[string]bool{
		"http://ingest.example.com":  true,
		"http://10.1.2.3:4318":       true,
		"http://127.0.0.1:4318":      false,
		"http://localhost:4318":      false,
		"http://[::1]:4318":          false,
		"https://ingest.example.com": false,
	} {
		t.Run(endpoint, func(t *testing.T) {
			h := newHarness(t, testConfig(endpoint))
			lines := h.logs.FilterMessageSnippet("clear text")
			if !warn {
				assert.Zero(t, lines.Len())
				return
			}
			require.Equal(t, 1, lines.Len())
			assert.Equal(t, zapcore.WarnLevel, lines.All()[0].Level)
			assert.Equal(t, endpoint, lines.All()[0].ContextMap()["endpoint"])
		})
	}
}

// TestGateWaitIsBoundedByMaxElapsedTime: a request that meets a Retry-After
// gate closed for longer than retry_on_failure::max_elapsed_time gives up at
// once instead of waiting (up to a day).
func TestGateWaitIsBoundedByMaxElapsedTime(t *testing.T) {
	ing := newFakeIngest(t, nil)
	cfg := testConfig(ing.srv.URL)
	cfg.RetryConfig.MaxElapsedTime = 2 * time.Second
	h := newHarness(t, cfg)
	h.inner.state.closeGate(time.Now().Add(time.Hour))

	done := make(chan error, 1)
	go func() { done <- h.exp.ConsumeProfiles(context.Background(), batch(10, 63)) }()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "max_elapsed_time")
		assert.True(t, consumererror.IsPermanent(err), "the exporter drops it itself: %v", err)
	case <-time.After(30 * time.Second):
		h.inner.stopWaiting()
		t.Fatal("the request waited for the gate past max_elapsed_time")
	}
	assert.Empty(t, ing.requests())
	assert.Equal(t, int64(10), metricSum[int64](t, h.tel, mDropped, []attribute.KeyValue{attribute.String("reason", "retry_after")}),
		"the dropped samples are counted")
	assert.Contains(t, h.logText(), "max_elapsed_time")
}

// queuedHarness is an exporter with the in-memory sending queue.
func queuedHarness(t *testing.T, url string) (xexporter.Profiles, *nexovueExporter, *componenttest.Telemetry) {
	t.Helper()
	cfg := testConfig(url)
	cfg.QueueConfig = NewFactory().CreateDefaultConfig().(*Config).QueueConfig
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	exp, err := NewFactory().(xexporter.Factory).CreateProfiles(context.Background(), metadatatest.NewSettings(tel), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	return exp, exp.(*profilesExporter).exp, tel
}

// TestShutdownSendsRequestsHeldBackByTheGate: with the in-memory queue, a
// request held back by a Retry-After at shutdown waits for it and is sent
// before the shutdown context ends.
func TestShutdownSendsRequestsHeldBackByTheGate(t *testing.T) {
	ing := newFakeIngest(t, nil)
	exp, inner, _ := queuedHarness(t, ing.srv.URL)
	until := time.Now().Add(time.Second)
	inner.state.closeGate(until)
	require.NoError(t, exp.ConsumeProfiles(context.Background(), batch(10, 64)))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, exp.Shutdown(ctx))
	reqs := ing.requests()
	require.Len(t, reqs, 1, "the held-back request is sent during shutdown")
	assert.False(t, reqs[0].at.Before(until), "not before the Retry-After")
	assert.Equal(t, http.StatusOK, reqs[0].status)
}

// TestShutdownSendsRequestsThrottledDuringShutdown: a request answered 429
// with Retry-After while the in-memory queue drains is sent again after it,
// although the helper's retries are already stopped.
func TestShutdownSendsRequestsThrottledDuringShutdown(t *testing.T) {
	ing := newFakeIngest(t, func(i int, _ *received) reply {
		if i == 0 {
			return reply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "1"}}
		}
		return answer(http.StatusOK)
	})
	exp, inner, _ := queuedHarness(t, ing.srv.URL)
	inner.state.closeGate(time.Now().Add(300 * time.Millisecond)) // held until shutdown began
	require.NoError(t, exp.ConsumeProfiles(context.Background(), batch(10, 65)))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, exp.Shutdown(ctx))
	reqs := ing.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, http.StatusOK, reqs[1].status)
	assert.GreaterOrEqual(t, reqs[1].at.Sub(reqs[0].at), 900*time.Millisecond, "the retry honoured the Retry-After")
}

// TestShutdownCountsWhatItCannotSend: when the shutdown context ends before
// the gate opens, the held-back request is counted as dropped (shutdown).
func TestShutdownCountsWhatItCannotSend(t *testing.T) {
	ing := newFakeIngest(t, nil)
	exp, inner, tel := queuedHarness(t, ing.srv.URL)
	// Closed for less than max_elapsed_time (20 s), longer than the shutdown context.
	inner.state.closeGate(time.Now().Add(10 * time.Second))
	require.NoError(t, exp.ConsumeProfiles(context.Background(), batch(10, 66)))

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	require.NoError(t, exp.Shutdown(ctx))
	assert.Empty(t, ing.requests())
	assert.Equal(t, int64(10), metricSum[int64](t, tel, mDropped, []attribute.KeyValue{attribute.String("reason", "shutdown")}))
}
