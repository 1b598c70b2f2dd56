package ingest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

func TestAcceptsProtoAndJSONWithEveryEncoding(t *testing.T) {
	s := startServer(t, Config{})
	b := NewRequestBuilder().SeqRange("checkout", 0, 3, "leaf", "mid", "root")
	total := 0
	for _, ct := range []string{ContentTypeProto, ContentTypeJSON, ContentTypeProto + "; charset=utf-8"} {
		for _, enc := range []string{"", "identity", "gzip", "zstd"} {
			t.Run(ct+"/"+enc, func(t *testing.T) {
				var body []byte
				var err error
				if strings.HasPrefix(ct, ContentTypeJSON) {
					body, err = b.MarshalJSON()
				} else {
					body, err = b.MarshalProto()
				}
				require.NoError(t, err)
				zbody, err := Compress(body, enc)
				require.NoError(t, err)
				if enc == "gzip" || enc == "zstd" {
					require.NotEqual(t, body, zbody)
				}
				a := send(t, s, testKey, ct, enc, zbody)
				require.Equal(t, http.StatusOK, a.status, string(a.body))
				total++

				// The answer is an empty ExportProfilesServiceResponse
				// encoded like the request.
				resp := pprofileotlp.NewExportResponse()
				if strings.HasPrefix(ct, ContentTypeJSON) {
					assert.Equal(t, ContentTypeJSON, a.header.Get("Content-Type"))
					require.NoError(t, resp.UnmarshalJSON(a.body))
				} else {
					assert.Equal(t, ContentTypeProto, a.header.Get("Content-Type"))
					require.NoError(t, resp.UnmarshalProto(a.body))
				}
				assert.Zero(t, resp.PartialSuccess().RejectedProfiles())
				assert.Empty(t, resp.PartialSuccess().ErrorMessage())
			})
		}
	}
	assert.Equal(t, int64(3*total), s.SamplesAccepted())
	assert.Equal(t, int64(9*total), s.FramesAccepted())
	assert.Equal(t, total, s.Requests(http.StatusOK))
	assert.Equal(t, int64(3*(total-1)), s.Seq().Duplicates, "each request after the first repeats seq 0..2")
	assert.Equal(t, 3, s.Seq().Distinct)
}

func TestKeyIsCheckedFirst(t *testing.T) {
	s := startServer(t, Config{Keys: []string{"k1", "k2"}})
	good, err := nSamples("a", 1).MarshalProto()
	require.NoError(t, err)
	for _, tc := range []struct {
		name, key, ct string
		body          []byte
		want          string
	}{
		{"missing key", "", ContentTypeProto, good, "missing x-nexovue-key"},
		{"unknown key", "nope", ContentTypeProto, good, "unknown x-nexovue-key"},
		{"unknown key and bad body", "nope", ContentTypeProto, []byte("garbage"), "unknown x-nexovue-key"},
		{"missing key JSON", "", ContentTypeJSON, []byte("{}"), "missing x-nexovue-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := send(t, s, tc.key, tc.ct, "", tc.body)
			require.Equal(t, http.StatusUnauthorized, a.status)
			msg := a.message(t)
			assert.Contains(t, msg, tc.want)
			assert.NotContains(t, msg, "k1")
			assert.NotContains(t, string(a.body), "nope", "a key never reaches an answer")
		})
	}
	for _, key := range []string{"k1", "k2"} {
		assert.Equal(t, http.StatusOK, send(t, s, key, ContentTypeProto, "", good).status)
	}
	assert.Equal(t, 4, s.Requests(http.StatusUnauthorized))
	for _, r := range s.RecentRequests() {
		assert.NotContains(t, r.Reason, "nope")
	}
}

func TestEmptyKeyListAcceptsAnyNonEmptyKey(t *testing.T) {
	s := New(Config{})
	require.NoError(t, s.Start())
	defer s.Close()
	body, err := nSamples("a", 1).MarshalProto()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, send(t, s, "anything", ContentTypeProto, "", body).status)
	assert.Equal(t, http.StatusUnauthorized, send(t, s, "", ContentTypeProto, "", body).status)
}

func TestUndecodableBodies(t *testing.T) {
	s := startServer(t, Config{MaxBodyBytes: 1 << 20})
	good, err := nSamples("a", 1).MarshalProto()
	require.NoError(t, err)
	big := make([]byte, 2<<20)
	zbig, err := Compress(big, "gzip")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, ct, enc string
		body          []byte
		status        int
		want          string
	}{
		{"garbage proto", ContentTypeProto, "", []byte{0xff, 0xff, 0xff}, 400, "cannot decode ExportProfilesServiceRequest"},
		{"garbage JSON", ContentTypeJSON, "", []byte("{not json"), 400, "cannot decode ExportProfilesServiceRequest"},
		{"proto sent as JSON", ContentTypeJSON, "", good, 400, "cannot decode"},
		{"not gzip", ContentTypeProto, "gzip", good, 400, "cannot read gzip body"},
		{"not zstd", ContentTypeProto, "zstd", good, 400, "zstd"},
		{"unknown encoding", ContentTypeProto, "br", good, 400, `unsupported Content-Encoding "br"`},
		{"unknown content type", "text/plain", "", good, 415, "unsupported Content-Type"},
		{"no content type", "", "", good, 415, "unsupported Content-Type"},
		{"body too large", ContentTypeProto, "", big, 413, "more than 1048576 bytes"},
		{"decompressed body too large", ContentTypeProto, "gzip", zbig, 413, "more than 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := send(t, s, testKey, tc.ct, tc.enc, tc.body)
			require.Equal(t, tc.status, a.status)
			assert.Contains(t, a.message(t), tc.want)
		})
	}
	assert.Zero(t, s.SamplesAccepted())
}

func TestFrameLimit(t *testing.T) {
	// The documented limit: 1,000 samples of 1,000 frames is exactly
	// 1,000,000 frames and accepted; one frame more is refused.
	stack := make([]string, 1000)
	for i := range stack {
		stack[i] = fmt.Sprintf("fn%d", i)
	}
	s := startServer(t, Config{})
	at := NewRequestBuilder().Samples("big", 1000, stack...)
	require.Equal(t, int64(DefaultMaxFrames), at.FrameCount())
	a := sendBuilder(t, s, at)
	require.Equal(t, http.StatusOK, a.status, string(a.body))

	above := NewRequestBuilder().Samples("big", 1000, stack...).Sample("big", "one more")
	a = sendBuilder(t, s, above)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	assert.Contains(t, a.message(t), "1000001 frames, more than the limit of 1000000")

	assert.Equal(t, int64(DefaultMaxFrames), s.FramesAccepted())
	assert.Equal(t, int64(1000), s.SamplesAccepted())
	recent := s.RecentRequests()
	require.Len(t, recent, 2)
	assert.Equal(t, int64(1000001), recent[1].Frames)
	assert.Equal(t, int64(1001), recent[1].Samples)
}

func TestFrameLimitConfiguredAndChangedAtRunTime(t *testing.T) {
	s := startServer(t, Config{MaxFrames: 10})
	assert.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 5)).status) // 10 frames
	assert.Equal(t, http.StatusRequestEntityTooLarge, sendBuilder(t, s, nSamples("a", 6)).status)
	s.SetLimits(0, 12)
	assert.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", 6)).status)
	assert.Equal(t, http.StatusRequestEntityTooLarge, sendBuilder(t, s, nSamples("a", 7)).status)
}

func TestIndexErrorComesBeforeFrameLimit(t *testing.T) {
	s := startServer(t, Config{MaxFrames: 1})
	pd := nSamples("a", 5).Profiles()
	firstSample(pd).SetStackIndex(12)
	a := send(t, s, testKey, ContentTypeProto, "", marshalProto(t, pd))
	assert.Equal(t, http.StatusBadRequest, a.status)
}

func TestStatsEndpoint(t *testing.T) {
	s := startServer(t, Config{})
	require.Equal(t, http.StatusOK, sendBuilder(t, s, NewRequestBuilder().SeqRange("checkout", 0, 4, "a", "b").SeqSample("cart", 2, "c")).status)
	resp, err := http.Get(s.URL() + StatsPath + "?missing_below=6")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var st Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	assert.Equal(t, int64(5), st.SamplesAccepted)
	assert.Equal(t, int64(9), st.FramesAccepted)
	assert.Equal(t, 1, st.RequestsByStatus[200])
	assert.Equal(t, int64(4), st.Services["checkout"].Samples)
	assert.Equal(t, []FunctionCount{{"a", 4}}, st.Services["checkout"].TopLeaf)
	assert.Equal(t, []FunctionCount{{"a", 4}, {"b", 4}}, st.Services["checkout"].TopInclusive)
	assert.Equal(t, []SampleType{{"cpu", "nanoseconds"}}, st.Services["cart"].SampleTypes)
	assert.Equal(t, SeqStats{Distinct: 4, Duplicates: 1, Min: 0, Max: 3}, st.Seq)
	assert.Equal(t, []int64{4, 5}, st.MissingSeq)
	require.Len(t, st.Recent, 1)
	assert.Equal(t, int64(5), st.Recent[0].Samples)

	resp2, err := http.Get(s.URL() + StatsPath + "?missing_below=x")
	require.NoError(t, err)
	resp2.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp2.StatusCode)
}

func TestWrongMethodAndPath(t *testing.T) {
	s := startServer(t, Config{})
	resp, err := http.Get(s.Endpoint())
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	resp, err = http.Post(s.URL()+"/v1/profiles", ContentTypeProto, nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestConcurrentRequests(t *testing.T) {
	s := startServer(t, Config{SamplesPerSecond: 1_000_000})
	const workers, perWorker, samplesPer = 8, 10, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				first := int64((w*perWorker + i) * samplesPer)
				b := NewRequestBuilder().SeqRange(fmt.Sprintf("svc%d", w%3), first, first+samplesPer, "leaf", "root")
				body, err := b.MarshalProto()
				if err != nil {
					errs <- err
					return
				}
				a, err := trySend(s, testKey, ContentTypeProto, "zstd", mustCompress(body, "zstd"))
				if err == nil && a.status != http.StatusOK {
					err = fmt.Errorf("status %d: %s", a.status, a.body)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	const total = workers * perWorker * samplesPer
	assert.Equal(t, int64(total), s.SamplesAccepted())
	assert.Equal(t, SeqStats{Distinct: total, Duplicates: 0, Min: 0, Max: total - 1}, s.Seq())
	assert.Empty(t, s.MissingSeq(total))
	var sum int64
	for _, n := range s.ServiceSamples() {
		sum += n
	}
	assert.Equal(t, int64(total), sum)
}

func mustCompress(b []byte, enc string) []byte {
	out, err := Compress(b, enc)
	if err != nil {
		panic(err)
	}
	return out
}
