// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package pprofreceiver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/metadata"
	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/pproftest"
)

// startGoProgram builds testdata/pprofserver, starts it and returns its base
// URL. The program is killed when the test ends.
func startGoProgram(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pprofserver")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, "./testdata/pprofserver")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	cmd := exec.Command(bin)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	require.True(t, ok, "unexpected first line %q", line)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return base
}

// scrapeOnce starts a receiver on endpoint, waits for its first delivery and
// shuts it down. The raw pprof comes back as the original payload.
func scrapeOnce(t *testing.T, endpoint string) pprofile.Profiles {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.Remote.Client.Endpoint = endpoint
	cfg.Remote.CollectionInterval = time.Hour // only the first, immediate scrape
	cfg.Delta = false
	cfg.KeepOriginalPayload = true
	require.NoError(t, cfg.Validate())

	sink := new(consumertest.ProfilesSink)
	r, err := newReceiver(receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, r.Shutdown(context.Background())) }()
	require.Eventually(t, func() bool { return len(sink.AllProfiles()) > 0 }, 30*time.Second, 20*time.Millisecond)
	return sink.AllProfiles()[0]
}

// originalPayload returns the raw pprof kept on the first profile.
func originalPayload(t *testing.T, pd pprofile.Profiles) *profile.Profile {
	t.Helper()
	prof := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0)
	require.Equal(t, "pprof", prof.OriginalPayloadFormat())
	raw := prof.OriginalPayload().AsRaw()
	require.NotEmpty(t, raw)
	p, err := profile.ParseData(raw)
	require.NoError(t, err)
	return p
}

func sampleTypes(t *testing.T, pd pprofile.Profiles) []string {
	t.Helper()
	strs := pd.Dictionary().StringTable()
	var out []string
	for _, prof := range pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().All() {
		out = append(out, strs.At(int(prof.SampleType().TypeStrindex()))+"/"+strs.At(int(prof.SampleType().UnitStrindex())))
	}
	return out
}

func TestGoProgram(t *testing.T) {
	base := startGoProgram(t)
	// Let the workload accumulate some of everything.
	time.Sleep(300 * time.Millisecond)

	for _, tc := range []struct {
		path  string
		types []string
		hot   string // a function that must have a leaf total in the first type
	}{
		{"/debug/pprof/heap", []string{"alloc_objects/count", "alloc_space/bytes", "inuse_objects/count", "inuse_space/bytes"}, "main.allocate"},
		{"/debug/pprof/profile?seconds=2", []string{"samples/count", "cpu/nanoseconds"}, "main.burnCPU"},
		{"/debug/pprof/allocs", []string{"alloc_objects/count", "alloc_space/bytes", "inuse_objects/count", "inuse_space/bytes"}, "main.allocate"},
		{"/debug/pprof/goroutine", []string{"goroutine/count"}, ""},
		{"/debug/pprof/block", []string{"contentions/count", "delay/nanoseconds"}, ""},
		{"/debug/pprof/mutex", []string{"contentions/count", "delay/nanoseconds"}, ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			pd := scrapeOnce(t, base+tc.path)
			assert.Equal(t, tc.types, sampleTypes(t, pd), "one OTLP profile per pprof sample type")

			raw := originalPayload(t, pd)
			want := pproftest.FromPprof(raw)
			got, err := pproftest.FromOTLP(pd)
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for typ, w := range want {
				assert.NotZero(t, w.Sum, "%s: the workload should show in %s", tc.path, typ)
				assert.Equal(t, w, got[typ], "%s: per-function totals of %s", tc.path, typ)
			}
			if tc.hot != "" {
				first := strings.Split(tc.types[0], "/")[0]
				assert.Positive(t, got[first].Inclusive[tc.hot], "%s missing from %s", tc.hot, first)
			}

			res := pd.ResourceProfiles().At(0).Resource().Attributes()
			v, ok := res.Get("process.runtime.name")
			require.True(t, ok)
			assert.Equal(t, "go", v.Str())
			v, ok = res.Get("server.address")
			require.True(t, ok)
			assert.Equal(t, "127.0.0.1", v.Str())
			_, ok = res.Get("service.name")
			assert.False(t, ok, "pprof carries no service name")
		})
	}

	t.Run("cpu hot function", func(t *testing.T) {
		pd := scrapeOnce(t, base+"/debug/pprof/profile?seconds=1")
		got, err := pproftest.FromOTLP(pd)
		require.NoError(t, err)
		cpu := got["cpu"]
		require.NotNil(t, cpu)
		hot, max := "", int64(0)
		for fn, v := range cpu.Inclusive {
			if strings.HasPrefix(fn, "main.") && v > max {
				hot, max = fn, v
			}
		}
		assert.Equal(t, "main.burnCPU", hot)
		prof := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(1)
		strs := pd.Dictionary().StringTable()
		assert.Equal(t, "cpu", strs.At(int(prof.PeriodType().TypeStrindex())))
		assert.Equal(t, "nanoseconds", strs.At(int(prof.PeriodType().UnitStrindex())))
		assert.Positive(t, prof.Period())
		assert.Greater(t, prof.DurationNano(), uint64(time.Second/2), "profile lasts about seconds=1")
	})

	t.Run("allocs delta", func(t *testing.T) {
		testAllocsDelta(t, base)
	})
}

// testAllocsDelta scrapes allocs twice around a burst of known allocations:
// the second scrape's alloc_* profiles must equal the difference of the two
// raw profiles, and show the burst exactly.
func testAllocsDelta(t *testing.T, base string) {
	const n, size = 100, 64 << 10
	cfg := createDefaultConfig().(*Config)
	cfg.Remote.Client.Endpoint = base + "/debug/pprof/allocs"
	cfg.Remote.CollectionInterval = time.Hour
	cfg.KeepOriginalPayload = true
	require.True(t, cfg.Delta, "deltas are on by default")
	sink := new(consumertest.ProfilesSink)
	r, err := newReceiver(receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, r.Shutdown(context.Background())) }()

	// The first scrape (at start) sets the baseline: only the snapshot types.
	require.Eventually(t, func() bool { return len(sink.AllProfiles()) == 1 }, 30*time.Second, 20*time.Millisecond)
	first := sink.AllProfiles()[0]
	assert.Equal(t, []string{"inuse_objects/count", "inuse_space/bytes"}, sampleTypes(t, first))

	resp, err := http.Get(fmt.Sprintf("%s/burst?n=%d&size=%d", base, n, size))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	_, err = r.scrape(context.Background())
	require.NoError(t, err)
	require.Len(t, sink.AllProfiles(), 2)
	second := sink.AllProfiles()[1]
	assert.Equal(t, []string{"inuse_objects/count", "inuse_space/bytes", "alloc_objects/count", "alloc_space/bytes"}, sampleTypes(t, second))

	raw1, raw2 := pproftest.FromPprof(originalPayload(t, first)), pproftest.FromPprof(originalPayload(t, second))
	got, err := pproftest.FromOTLP(second)
	require.NoError(t, err)
	for _, typ := range []string{"alloc_objects", "alloc_space"} {
		assert.Equal(t, raw2[typ].Sub(raw1[typ]), got[typ], "%s delta", typ)
	}
	assert.Equal(t, int64(n), got["alloc_objects"].Leaf["main.knownBurst"])
	assert.Equal(t, int64(n*size), got["alloc_space"].Leaf["main.knownBurst"])
	// Snapshot types are sent as they are.
	assert.Equal(t, raw2["inuse_space"], got["inuse_space"])

	// The delta profile covers the window between the two scrapes.
	strs := second.Dictionary().StringTable()
	for _, prof := range second.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().All() {
		if strs.At(int(prof.SampleType().TypeStrindex())) == "alloc_space" {
			assert.Positive(t, prof.DurationNano())
		}
	}
}
