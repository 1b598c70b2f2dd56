package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// TestPprofDocsConfig runs the docs' pprof config (tests/testdata/pprof-docs.yaml,
// unchanged) with an overlay that points it at a Go program serving
// net/http/pprof and at the double, and adds the docs' second receiver for
// CPU: a heap profile in bytes arrives under checkout, and a CPU profile as
// a separate type whose hot function is the program's.
func TestPprofDocsConfig(t *testing.T) {
	root := testenv.RepoRoot(t)
	srv := startDouble(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "pprof", srv, &sent)

	prog := testenv.BuildGo(t, filepath.Join(root, "receiver", "pprofreceiver", "testdata", "pprofserver"), "checkout")
	p := testenv.Start(t, nil, prog)
	listening := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	var target string
	testenv.WaitFor(t, 30*time.Second, "the pprof server", func() (bool, error) {
		if m := listening.FindStringSubmatch(p.Output()); m != nil {
			target = m[1]
			return true, nil
		}
		if done, err := p.Exited(); done {
			return false, fmt.Errorf("pprofserver exited: %v", err)
		}
		return false, nil
	})

	dir := t.TempDir()
	sinkPath := filepath.Join(dir, "profiles.jsonl")
	overlay := writeFile(t, dir, "overlay.yaml", fmt.Sprintf(`
receivers:
  pprof:
    remote:
      endpoint: %[1]s/debug/pprof/heap
      collection_interval: 2s
  pprof/cpu:
    remote:
      endpoint: %[1]s/debug/pprof/profile?seconds=2
      collection_interval: 3s
exporters:
  otlphttp/nexovue:
    endpoint: %[2]s
  file/e2e:
    path: %[3]s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [pprof, pprof/cpu]
      exporters: [otlphttp/nexovue, file/e2e]
`, target, srv.URL(), sinkPath))
	docs := filepath.Join(root, "tests", "testdata", "pprof-docs.yaml")
	testenv.StartCollector(t, docs, testenv.CollectorOptions{
		Env: collectorEnv(testKey), Args: []string{"--config", overlay, testenv.FeatureGate},
	})

	isCPU := func(st ingest.SampleType) bool { return st.Unit == "nanoseconds" || st.Type == "cpu" }
	testenv.WaitFor(t, 60*time.Second, "a heap profile in bytes and a CPU profile under checkout at the double", func() (bool, error) {
		var bytes, cpu bool
		for _, st := range srv.SampleTypes("checkout") {
			bytes = bytes || st.Unit == "bytes"
			cpu = cpu || isCPU(st)
		}
		return bytes && cpu, nil
	})

	// Which type each function came in: only the file exporter keeps that.
	var s sink
	testenv.WaitFor(t, 30*time.Second, "main.burnCPU in a CPU profile in the file exporter's output", func() (bool, error) {
		var err error
		s, err = readSink(sinkPath)
		for _, typ := range s.typesWith("checkout", "main.burnCPU") {
			if strings.HasSuffix(typ, "/nanoseconds") || strings.HasPrefix(typ, "cpu/") {
				return true, err
			}
		}
		return false, err
	})
	for typ, fns := range s.functions["checkout"] {
		if !strings.HasSuffix(typ, "/nanoseconds") {
			continue
		}
		require.Equal(t, "main.burnCPU", hottestMain(fns), "the program's hot function in the %s profile", typ)
	}
	var heapTypes []string
	for _, typ := range s.typesWith("checkout", "main.allocate") {
		if strings.HasSuffix(typ, "/bytes") {
			heapTypes = append(heapTypes, typ)
		}
	}
	require.NotEmpty(t, heapTypes, "the program's allocations (main.allocate) in a profile in bytes: %v", s.typesWith("checkout", "main.allocate"))
}

// hottestMain returns the main.* function most samples went through.
func hottestMain(fns map[string]int) string {
	best, n := "", 0
	for name, c := range fns {
		if strings.HasPrefix(name, "main.") && (c > n || c == n && name < best) {
			best, n = name, c
		}
	}
	return best
}
