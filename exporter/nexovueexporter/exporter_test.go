// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumererror/xconsumererror"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap/zapcore"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
)

const (
	mRequests = "otelcol_exporter_nexovue_requests"
	mSent     = "otelcol_exporter_nexovue_samples_sent"
	mDropped  = "otelcol_exporter_nexovue_samples_dropped"
	mSplit    = "otelcol_exporter_nexovue_samples_split"
	mWait     = "otelcol_exporter_nexovue_wait_time"
)

func answer(code int) reply { return reply{status: code} }

func TestSendsProtobufGzipWithKey(t *testing.T) {
	ing := newFakeIngest(t, nil)
	h := newHarness(t, testConfig(ing.srv.URL))

	pd := batch(300, 1)
	want := profilesplit.SortedSamples(pd, 0)
	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))

	reqs := ing.requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, "/v1development/profiles", r.path)
	assert.Equal(t, testKey, r.header.Get("x-nexovue-key"))
	assert.Equal(t, "gzip", r.header.Get("Content-Encoding"))
	assert.Equal(t, "application/x-protobuf", r.header.Get("Content-Type"))
	assert.Equal(t, want, ing.accepted())

	assert.Equal(t, int64(300), h.intSum(t, mSent))
	assert.Equal(t, int64(1), h.intSum(t, mRequests, attribute.Int("status_code", 200)))
	assert.Zero(t, h.intSum(t, mDropped))
}

// TestRequestWithoutSamplesIsNotSent: an empty request (the persistent
// queue hands one out for each write its storage refused) sends nothing;
// the next one with samples is sent as usual.
func TestRequestWithoutSamplesIsNotSent(t *testing.T) {
	ing := newFakeIngest(t, nil)
	h := newHarness(t, testConfig(ing.srv.URL))

	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pprofile.NewProfiles()))
	empty := batch(10, 1)
	for _, rp := range empty.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				p.Samples().RemoveIf(func(pprofile.Sample) bool { return true })
			}
		}
	}
	require.Zero(t, empty.SampleCount())
	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), empty))
	assert.Equal(t, 0, len(ing.requests()), "requests sent") // not Empty: it would print the requests, key included

	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), batch(10, 2)))
	assert.Equal(t, 1, len(ing.requests()), "requests sent")
	assert.Equal(t, int64(10), h.intSum(t, mSent))
}

func TestCompressionNoneSendsPlainProtobuf(t *testing.T) {
	ing := newFakeIngest(t, nil)
	cfg := testConfig(ing.srv.URL + "/") // a trailing slash is not doubled
	cfg.ClientConfig.Compression = "none"
	h := newHarness(t, cfg)

	pd := batch(50, 2)
	want := profilesplit.SortedSamples(pd, 0)
	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))
	reqs := ing.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v1development/profiles", reqs[0].path)
	assert.Empty(t, reqs[0].header.Get("Content-Encoding"))
	assert.Equal(t, want, ing.accepted())
}

func TestPartialSuccessIsLoggedWithCounts(t *testing.T) {
	resp := pprofileotlp.NewExportResponse()
	resp.PartialSuccess().SetRejectedProfiles(3)
	resp.PartialSuccess().SetErrorMessage("3 profiles had no sample type")
	body, err := resp.MarshalProto()
	require.NoError(t, err)
	ing := newFakeIngest(t, func(int, *received) reply {
		return reply{status: http.StatusOK, ctype: "application/x-protobuf", body: body}
	})
	h := newHarness(t, testConfig(ing.srv.URL))

	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), batch(40, 3)))
	entries := h.logs.FilterMessageSnippet("partially").All()
	require.Len(t, entries, 1)
	assert.Equal(t, zapcore.WarnLevel, entries[0].Level)
	fields := entries[0].ContextMap()
	assert.Equal(t, int64(3), fields["rejected_profiles"])
	assert.Equal(t, "3 profiles had no sample type", fields["message"])
	assert.Equal(t, int64(40), h.intSum(t, mSent))
}

func TestFullSuccessBodyLogsNothing(t *testing.T) {
	body, err := pprofileotlp.NewExportResponse().MarshalProto()
	require.NoError(t, err)
	ing := newFakeIngest(t, func(int, *received) reply {
		return reply{status: http.StatusOK, ctype: "application/x-protobuf", body: body}
	})
	h := newHarness(t, testConfig(ing.srv.URL))
	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), batch(10, 4)))
	assert.Zero(t, h.logs.FilterMessageSnippet("partially").Len())
}

// TestRejectedKeyIsDroppedAndLoggedOnceAMinute: a rejected key drops the
// data (counted), is not retried, and the explanation (check NEXOVUE_KEY)
// is logged by the exporter at most once a minute. The export fails
// permanently, so the helper counts the samples as failed, not as sent.
func TestRejectedKeyIsDroppedAndLoggedOnceAMinute(t *testing.T) {
	for _, code := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			ing := newFakeIngest(t, func(int, *received) reply { return answer(code) })
			h := newHarness(t, testConfig(ing.srv.URL))
			clock := time.Now()
			h.inner.state.now = func() time.Time { return clock }

			for range 3 {
				err := h.exp.ConsumeProfiles(context.Background(), batch(20, 5))
				require.Error(t, err)
				assert.True(t, consumererror.IsPermanent(err))
				assert.NotContains(t, err.Error(), "NEXOVUE_KEY", "the explanation is logged once a minute, not with every error")
			}
			assert.Zero(t, h.intSum(t, "otelcol_exporter_sent_profile_samples"), "the helper must not count refused samples as sent")
			assert.Equal(t, int64(60), h.intSum(t, "otelcol_exporter_send_failed_profile_samples"))
			// The helper logs each failed export itself; the explanation once.
			assert.Len(t, ing.requests(), 3, "permanent: no retries")
			rejected := h.logs.FilterMessageSnippet("rejected the ingest key")
			require.Equal(t, 1, rejected.Len())
			e := rejected.All()[0]
			assert.Equal(t, zapcore.ErrorLevel, e.Level)
			assert.Contains(t, e.Message, "check NEXOVUE_KEY")
			assert.Equal(t, int64(60), h.intSum(t, mDropped, attribute.String("reason", "rejected_key")))
			assert.Equal(t, int64(3), h.intSum(t, mRequests, attribute.Int("status_code", code)))

			clock = clock.Add(61 * time.Second)
			require.Error(t, h.exp.ConsumeProfiles(context.Background(), batch(20, 5)))
			assert.Equal(t, 2, h.logs.FilterMessageSnippet("rejected the ingest key").Len())
		})
	}
}

func TestBadRequestLogsMessageFormatAndHint(t *testing.T) {
	st, err := proto.Marshal(&status.Status{Code: 3, Message: "stack_table[7]: location index 912 out of range"})
	require.NoError(t, err)
	ing := newFakeIngest(t, func(int, *received) reply {
		return reply{status: http.StatusBadRequest, ctype: "application/x-protobuf", body: st}
	})
	h := newHarness(t, testConfig(ing.srv.URL))

	err = h.exp.ConsumeProfiles(context.Background(), batch(25, 6))
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err))
	assert.Contains(t, err.Error(), "stack_table[7]")
	assert.Len(t, ing.requests(), 1)

	entries := h.logs.FilterMessageSnippet("HTTP 400").All()
	require.Len(t, entries, 1)
	assert.Equal(t, zapcore.ErrorLevel, entries[0].Level)
	f := entries[0].ContextMap()
	assert.Equal(t, "stack_table[7]: location index 912 out of range", f["message"])
	assert.Equal(t, profilesFormat(), f["profiles_format"]) // the version: tests/e2e TestBadFormatLogged
	assert.Contains(t, f["hint"], "table index")
	assert.Equal(t, int64(25), h.intSum(t, mDropped, attribute.String("reason", "bad_request")))
}

func TestOtherClientErrorsArePermanent(t *testing.T) {
	ing := newFakeIngest(t, func(int, *received) reply {
		return reply{status: http.StatusNotFound, ctype: "text/plain", body: []byte("no such path")}
	})
	h := newHarness(t, testConfig(ing.srv.URL))
	err := h.exp.ConsumeProfiles(context.Background(), batch(5, 7))
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err))
	assert.Contains(t, err.Error(), "no such path")
	assert.Equal(t, int64(5), h.intSum(t, mDropped, attribute.String("reason", "rejected")))
}

func TestServerErrorsAreRetriedWithBackoff(t *testing.T) {
	for _, code := range []int{500, 502, 504, 507} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			ing := newFakeIngest(t, func(i int, _ *received) reply {
				if i < 2 {
					return answer(code)
				}
				return answer(http.StatusOK)
			})
			h := newHarness(t, testConfig(ing.srv.URL))
			pd := batch(30, 8)
			want := profilesplit.SortedSamples(pd, 0)
			require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))
			assert.Len(t, ing.requests(), 3)
			assert.Equal(t, want, ing.accepted())
			assert.Equal(t, int64(2), h.intSum(t, mRequests, attribute.Int("status_code", code)))
			assert.Equal(t, int64(30), h.intSum(t, mSent))
		})
	}
}

func TestNetworkErrorIsRetryable(t *testing.T) {
	ing := newFakeIngest(t, nil)
	url := ing.srv.URL
	ing.srv.Close() // nothing listens any more
	cfg := testConfig(url)
	cfg.RetryConfig.Enabled = false
	h := newHarness(t, cfg)

	err := h.exp.ConsumeProfiles(context.Background(), batch(5, 9))
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err))
	assert.Equal(t, int64(1), h.intSum(t, mRequests, attribute.Int("status_code", 0)))
	assert.Zero(t, h.intSum(t, mDropped))
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"3", now.Add(3 * time.Second), true},
		{" 0 ", now, true},
		{"Wed, 02 Dec 2026 10:00:07 GMT", now.Add(7 * time.Second), true},
		{"Wednesday, 02-Dec-26 10:00:07 GMT", now.Add(7 * time.Second), true}, // RFC 850
		{"Wed Dec  2 10:00:07 2026", now.Add(7 * time.Second), true},          // ANSI C
		{"99999999999999999999", now.Add(maxRetryAfter), true},
		{"", time.Time{}, false},
		{"soon", time.Time{}, false},
		{"-5", time.Time{}, false},
		{"1.5", time.Time{}, false},
		{"2026-12-02T10:00:07Z", time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		assert.Equal(t, tt.ok, ok, tt.in)
		if tt.ok {
			assert.True(t, tt.want.Equal(got), "%q: got %v want %v", tt.in, got, tt.want)
		}
	}
}

// retryAfterCase is one form of the Retry-After header: it returns the
// header value and the time before which nothing may arrive.
type retryAfterCase struct {
	name  string
	value func(now time.Time) (string, time.Time)
}

var retryAfterForms = []retryAfterCase{
	{"delay-seconds", func(now time.Time) (string, time.Time) {
		return "1", now.Add(time.Second)
	}},
	{"HTTP-date", func(now time.Time) (string, time.Time) {
		at := now.Add(2 * time.Second).Truncate(time.Second)
		return at.UTC().Format(http.TimeFormat), at
	}},
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel() // waits on the clock (or simulates one): beside the others
	for _, code := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		for _, form := range retryAfterForms {
			t.Run(http.StatusText(code)+"/"+form.name, func(t *testing.T) {
				var notBefore time.Time
				ing := newFakeIngest(t, func(i int, r *received) reply {
					if i == 0 {
						v, nb := form.value(r.at)
						notBefore = nb
						return reply{status: code, header: map[string]string{"Retry-After": v}}
					}
					return answer(http.StatusOK)
				})
				h := newHarness(t, testConfig(ing.srv.URL))
				pd := batch(30, 10)
				want := profilesplit.SortedSamples(pd, 0)
				require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))

				reqs := ing.requests()
				require.Len(t, reqs, 2)
				assert.False(t, reqs[1].at.Before(notBefore), "retry arrived %v before the Retry-After time", notBefore.Sub(reqs[1].at))
				assert.Equal(t, want, ing.accepted())
				assert.Positive(t, h.floatSum(t, mWait, attribute.String("reason", "retry_after")))
			})
		}
	}
}

func TestUnparseableRetryAfterFallsBackToBackoff(t *testing.T) {
	for _, v := range []string{"soon", "", "Thu, 99 Foo 2026"} {
		t.Run(v, func(t *testing.T) {
			ing := newFakeIngest(t, func(i int, _ *received) reply {
				if i == 0 {
					return reply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": v}}
				}
				return answer(http.StatusOK)
			})
			cfg := testConfig(ing.srv.URL)
			cfg.RetryConfig.Enabled = false
			h := newHarness(t, cfg)

			err := h.exp.ConsumeProfiles(context.Background(), batch(10, 11))
			require.Error(t, err)
			assert.False(t, consumererror.IsPermanent(err), "a 429 is retryable")
			assert.False(t, strings.HasPrefix(err.Error(), "Throttle"), "no throttle delay: the helper's backoff applies")
			assert.LessOrEqual(t, h.inner.state.gateWait(), time.Duration(0), "the gate stays open")
			assert.Zero(t, h.floatSum(t, mWait, attribute.String("reason", "retry_after")))

			// The gate did not close, so the next request leaves at once and is accepted.
			require.NoError(t, h.exp.ConsumeProfiles(context.Background(), batch(10, 11)))
		})
	}
}

func TestRetryAfterHoldsBackConcurrentConsumers(t *testing.T) {
	t.Parallel() // waits on the clock (or simulates one): beside the others
	for _, form := range retryAfterForms {
		t.Run(form.name, func(t *testing.T) {
			var (
				mu        sync.Mutex
				notBefore time.Time
			)
			ing := newFakeIngest(t, func(i int, r *received) reply {
				if i == 0 {
					v, nb := form.value(r.at)
					mu.Lock()
					notBefore = nb
					mu.Unlock()
					return reply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": v}}
				}
				return answer(http.StatusOK)
			})
			cfg := testConfig(ing.srv.URL)
			h := newHarness(t, cfg)
			// A second exporter with the same endpoint and key shares the gate.
			h2 := newHarness(t, testConfig(ing.srv.URL))

			first := batch(10, 100)
			firstDone := make(chan error, 1)
			go func() { firstDone <- h.exp.ConsumeProfiles(context.Background(), first) }()
			require.Eventually(t, func() bool { return h.inner.state.gateWait() > 0 }, 5*time.Second, time.Millisecond)

			// Eight more consumers, on both exporters, while the gate is closed.
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for i := range 8 {
				exp := h.exp
				if i%2 == 1 {
					exp = h2.exp
				}
				wg.Go(func() { errs <- exp.ConsumeProfiles(context.Background(), batch(10, uint64(200+i))) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.NoError(t, <-firstDone)

			reqs := ing.requests()
			require.Len(t, reqs, 10)
			mu.Lock()
			nb := notBefore
			mu.Unlock()
			for _, r := range reqs[1:] {
				assert.False(t, r.at.Before(nb), "a request arrived %v before the Retry-After time", nb.Sub(r.at))
			}
			waited := h.floatSum(t, mWait, attribute.String("reason", "retry_after")) +
				h2.floatSum(t, mWait, attribute.String("reason", "retry_after"))
			assert.Positive(t, waited)
		})
	}
}

func TestRequestTooLargeIsHalvedUntilAccepted(t *testing.T) {
	const maxFrames = 2000 // batch(200) writes out 200*24 = 4800 frames
	ing := newFakeIngest(t, func(_ int, r *received) reply {
		if profilesplit.Frames(r.pd) > maxFrames {
			return answer(http.StatusRequestEntityTooLarge)
		}
		return answer(http.StatusOK)
	})
	h := newHarness(t, testConfig(ing.srv.URL))
	pd := batch(200, 12)
	want := profilesplit.SortedSamples(pd, 0)
	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))

	assert.Equal(t, want, ing.accepted(), "every sample accepted exactly once")
	for _, r := range ing.requests() {
		if r.status == http.StatusOK {
			assert.LessOrEqual(t, profilesplit.Frames(r.pd), maxFrames)
			require.NoError(t, profilesplit.Validate(r.pd))
		}
	}
	assert.Equal(t, int64(200), h.intSum(t, mSent))
	// 200 -> 2x100 -> 4x50: 200 + 2*100 samples went through a halving.
	assert.Equal(t, int64(400), h.intSum(t, mSplit))
	assert.Zero(t, h.intSum(t, mDropped))
}

func TestSingleSampleTooLargeIsDroppedAndCounted(t *testing.T) {
	ing := newFakeIngest(t, func(int, *received) reply { return answer(http.StatusRequestEntityTooLarge) })
	h := newHarness(t, testConfig(ing.srv.URL))
	err := h.exp.ConsumeProfiles(context.Background(), batch(4, 13))
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err))
	assert.Len(t, ing.requests(), 7, "4 -> 2+2 -> 1+1+1+1: 1+2+4 requests")
	assert.Equal(t, int64(4), h.intSum(t, mDropped, attribute.String("reason", "too_large")))
	assert.Equal(t, 4, h.logs.FilterMessageSnippet("cannot be split further").Len())
}

func TestHalfFailingRetryablyCarriesOnlyUnsentData(t *testing.T) {
	// The whole batch is too large; its first half is accepted, its second
	// half gets a 503 once, then is accepted.
	ing := newFakeIngest(t, func(i int, _ *received) reply {
		switch i {
		case 0:
			return answer(http.StatusRequestEntityTooLarge)
		case 2:
			return answer(http.StatusServiceUnavailable)
		}
		return answer(http.StatusOK)
	})
	cfg := testConfig(ing.srv.URL)
	h := newHarness(t, cfg)
	pd := batch(100, 14)
	want := profilesplit.SortedSamples(pd, 0)
	_, second, ok := profilesplit.Halve(pd)
	require.True(t, ok)
	wantSecond := profilesplit.SortedSamples(second, 0)

	// At the push level: the error carries the second half only.
	err := h.inner.push(context.Background(), pd)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err))
	var unsent xconsumererror.Profiles
	require.ErrorAs(t, err, &unsent)
	require.NoError(t, profilesplit.Validate(unsent.Data()))
	assert.Equal(t, wantSecond, profilesplit.SortedSamples(unsent.Data(), 0))

	// Through the helper's retry: every sample accepted exactly once.
	ing2 := newFakeIngest(t, ing.answer)
	h2 := newHarness(t, testConfig(ing2.srv.URL))
	require.NoError(t, h2.exp.ConsumeProfiles(context.Background(), batch(100, 14)))
	assert.Equal(t, want, ing2.accepted())
	assert.Len(t, ing2.requests(), 4)
}

func TestRetryableFailureBeforeAnythingLeftRetriesTheWholeRequest(t *testing.T) {
	ing := newFakeIngest(t, func(int, *received) reply { return answer(http.StatusBadGateway) })
	h := newHarness(t, testConfig(ing.srv.URL))
	err := h.inner.push(context.Background(), batch(10, 15))
	require.Error(t, err)
	var unsent xconsumererror.Profiles
	assert.False(t, errors.As(err, &unsent), "nothing was sent: the request is retried as it is")
}

func TestRedirectElsewhereIsNotFollowedWithTheKey(t *testing.T) {
	elsewhere := newFakeIngest(t, nil)
	ing := newFakeIngest(t, func(i int, _ *received) reply {
		return reply{status: http.StatusTemporaryRedirect, header: map[string]string{"Location": elsewhere.srv.URL + "/v1development/profiles"}}
	})
	h := newHarness(t, testConfig(ing.srv.URL))
	err := h.exp.ConsumeProfiles(context.Background(), batch(5, 16))
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err))
	assert.Contains(t, err.Error(), "307")
	assert.Empty(t, elsewhere.requests(), "the key never went to another host")
}

func TestRedirectToTheSameHostIsFollowed(t *testing.T) {
	var ing *fakeIngest
	ing = newFakeIngest(t, func(i int, _ *received) reply {
		if i == 0 {
			return reply{status: http.StatusPermanentRedirect, header: map[string]string{"Location": ing.srv.URL + "/v1development/profiles?moved=1"}}
		}
		return answer(http.StatusOK)
	})
	h := newHarness(t, testConfig(ing.srv.URL))
	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), batch(5, 17)))
	reqs := ing.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, testKey, reqs[1].header.Get(keyHeader))
	assert.Equal(t, int64(5), h.intSum(t, mSent))
}

// Two nexovue exporters in one collector (the Pyroscope recipe's nexovue and
// nexovue/pyroscope) record their requests and samples apart.
func TestMetricsNameTheExporter(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	ok := newFakeIngest(t, nil)
	refusing := newFakeIngest(t, func(int, *received) reply { return answer(http.StatusBadRequest) })
	nexovue := newHarnessWith(t, testConfig(ok.srv.URL), tel, "")
	pyroscope := newHarnessWith(t, testConfig(refusing.srv.URL), tel, "pyroscope")

	require.NoError(t, nexovue.exp.ConsumeProfiles(context.Background(), batch(300, 1)))
	require.Error(t, pyroscope.exp.ConsumeProfiles(context.Background(), batch(200, 1)))

	id := func(s string) attribute.KeyValue { return attribute.String("exporter", s) }
	assert.Equal(t, int64(1), nexovue.intSum(t, mRequests, id("nexovue"), attribute.Int("status_code", 200)))
	assert.Zero(t, nexovue.intSum(t, mRequests, id("nexovue"), attribute.Int("status_code", 400)))
	assert.Equal(t, int64(1), nexovue.intSum(t, mRequests, id("nexovue/pyroscope"), attribute.Int("status_code", 400)))
	assert.Zero(t, nexovue.intSum(t, mRequests, id("nexovue/pyroscope"), attribute.Int("status_code", 200)))
	assert.Equal(t, int64(300), nexovue.intSum(t, mSent, id("nexovue")))
	assert.Zero(t, nexovue.intSum(t, mSent, id("nexovue/pyroscope")))
	assert.Equal(t, int64(200), nexovue.intSum(t, mDropped, id("nexovue/pyroscope")))
}
