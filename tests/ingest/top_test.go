package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteTop(t *testing.T) {
	w := Window{
		Start:   t0,
		End:     t0.Add(10 * time.Second),
		Samples: 1000,
		Linked:  250,
		Services: map[string]int64{
			"checkout": 600, "cart": 300, "": 60, "dockerd": 40,
		},
		Leaf: map[string]map[string]int64{
			"checkout": {"runtime.mallocgc": 300, "main.handle": 200, "a": 40, "b": 30, "c": 20, "d": 10},
			"cart":     {"cart.total": 300},
			"":         {"libc.so.6 (unsymbolized)": 60},
			"dockerd":  {"x": 40},
		},
		Statuses: map[int]int{200: 12, 429: 1, 401: 2},
		Dropped:  1,
	}
	var sb strings.Builder
	require.NoError(t, WriteTop(&sb, w, 3, 5))
	want := `nexovue-ingest 2026-12-02 12:00:10 UTC  busiest services in the last 10s: 1000 samples (100/s) from 4 services
    #  SERVICE, then its hottest functions (leaf samples)         SAMPLES   SHARE
    1  checkout                                                       600   60.0%
         runtime.mallocgc                                             300   50.0%
         main.handle                                                  200   33.3%
         a                                                             40    6.7%
         b                                                             30    5.0%
         c                                                             20    3.3%
    2  cart                                                           300   30.0%
         cart.total                                                   300  100.0%
    3  (no service.name)                                               60    6.0%
         libc.so.6 (unsymbolized)                                      60  100.0%
       (1 more services)                                               40    4.0%
  SHARE: a service's share of all samples; a function's share of its service's samples
  linked to a span: 250 samples (25.0%)
  answers: 200 x12, 401 x2, 429 x1, dropped x1
`
	assert.Equal(t, want, sb.String())
}

func TestWriteTopEmptyWindow(t *testing.T) {
	var sb strings.Builder
	require.NoError(t, WriteTop(&sb, Window{Start: t0, End: t0.Add(10 * time.Second)}, 10, 5))
	assert.Equal(t, `nexovue-ingest 2026-12-02 12:00:10 UTC  busiest services in the last 10s: 0 samples (0/s) from 0 services
  no samples accepted
  answers: none
`, sb.String())
}

func TestClip(t *testing.T) {
	assert.Equal(t, "abc", clip("abc", 5))
	assert.Equal(t, "ab...", clip("abcdefg", 5))
	assert.Equal(t, "äö...", clip("äöüäöüä", 5))
}

func TestRoundDuration(t *testing.T) {
	assert.Equal(t, 100*time.Millisecond, roundDuration(100*time.Millisecond+300*time.Microsecond))
	assert.Equal(t, 10*time.Second, roundDuration(10*time.Second+2*time.Millisecond))
}
