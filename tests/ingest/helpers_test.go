package ingest

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

const testKey = "test-key-123"

// fakeClock is a settable clock for the rate limit.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Keys == nil {
		cfg.Keys = []string{testKey}
	}
	s := New(cfg)
	require.NoError(t, s.Start())
	t.Cleanup(s.Close)
	return s
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

// message decodes the error message of an answer.
func (a answer) message(t *testing.T) string {
	t.Helper()
	msg, err := StatusMessage(a.header.Get("Content-Type"), a.body)
	require.NoError(t, err)
	return msg
}

// send posts body to the server's profiles endpoint.
func send(t *testing.T, s *Server, key, contentType, encoding string, body []byte) answer {
	t.Helper()
	a, err := trySend(s, key, contentType, encoding, body)
	require.NoError(t, err)
	return a
}

func trySend(s *Server, key, contentType, encoding string, body []byte) (answer, error) {
	req, err := http.NewRequest(http.MethodPost, s.Endpoint(), bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if key != "" {
		req.Header.Set(KeyHeader, key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, err
}

func marshalProto(t *testing.T, pd pprofile.Profiles) []byte {
	t.Helper()
	b, err := pprofileotlp.NewExportRequestFromProfiles(pd).MarshalProto()
	require.NoError(t, err)
	return b
}

func marshalJSON(t *testing.T, pd pprofile.Profiles) []byte {
	t.Helper()
	b, err := pprofileotlp.NewExportRequestFromProfiles(pd).MarshalJSON()
	require.NoError(t, err)
	return b
}

// sendBuilder posts the builder's request as protobuf with the test key.
func sendBuilder(t *testing.T, s *Server, b *RequestBuilder) answer {
	t.Helper()
	body, err := b.MarshalProto()
	require.NoError(t, err)
	return send(t, s, testKey, ContentTypeProto, "", body)
}

func nSamples(service string, n int) *RequestBuilder {
	return NewRequestBuilder().Samples(service, n, "leaf", "root")
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
