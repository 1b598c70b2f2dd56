package ingest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each key has its own limit and statistics (by name, never the key); a
// revoked key is refused like an unknown one until restored.
func TestKeysOwnLimitsRevokeAndStats(t *testing.T) {
	clock := newFakeClock(t0)
	s := startServer(t, Config{
		Keys:             []string{"key-a", "key-b"},
		SamplesPerSecond: 100,
		KeyLimits:        map[string]int64{"key-b": 10},
		KeyNames:         map[string]string{"key-a": "a", "key-b": "b"},
		Now:              clock.Now,
	})
	post := func(key string, n int) answer {
		body, err := nSamples("svc", n).MarshalProto()
		require.NoError(t, err)
		return send(t, s, key, ContentTypeProto, "", body)
	}
	require.Equal(t, http.StatusOK, post("key-a", 100).status, "a has the server-wide limit")
	require.Equal(t, http.StatusOK, post("key-b", 10).status)
	require.Equal(t, http.StatusTooManyRequests, post("key-b", 1).status, "b has a limit of its own")

	s.RevokeKey("key-a")
	clock.Advance(2 * rateWindow)
	a := post("key-a", 1)
	require.Equal(t, http.StatusUnauthorized, a.status)
	assert.Contains(t, a.message(t), "unknown "+KeyHeader)
	s.RestoreKey("key-a")
	require.Equal(t, http.StatusOK, post("key-a", 1).status)

	s.SetKeyLimit("key-b", 0) // back to the server-wide limit
	require.Equal(t, http.StatusOK, post("key-b", 50).status)

	st := s.Stats()
	require.Equal(t, map[int]int{200: 2, 401: 1}, st.Keys["a"].RequestsByStatus)
	require.Equal(t, int64(101), st.Keys["a"].SamplesAccepted)
	require.Equal(t, map[int]int{200: 2, 429: 1}, st.Keys["b"].RequestsByStatus)
	require.Equal(t, int64(60), st.Keys["b"].SamplesAccepted)
	require.Equal(t, clock.Now(), st.Keys["b"].LastAccepted)
	require.Equal(t, map[string]int64{"svc": 60}, st.Keys["b"].Services)
	raw, err := json.Marshal(st)
	require.NoError(t, err)
	require.False(t, strings.Contains(string(raw), "key-a") || strings.Contains(string(raw), "key-b"), "stats never hold a key")
}
