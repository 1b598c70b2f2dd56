package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// TestPprofDocsConfig runs the docs' pprof config (tests/testdata/pprof-docs.yaml,
// unchanged: otlphttp/nexovue with the x-nexovue-key header) with an overlay
// that points it at a Go program serving net/http/pprof and at the double,
// and adds the docs' second receiver for CPU.
func TestPprofDocsConfig(t *testing.T) {
	t.Parallel() // see main_test.go
	pprofEndToEnd(t, "pprof-docs", filepath.Join("tests", "testdata", "pprof-docs.yaml"), func(target, ingestURL, sink string) (string, []string) {
		return docsReceivers(target) + fmt.Sprintf(`
exporters:
  otlphttp/nexovue:
    endpoint: %[1]s
  file/e2e:
    path: %[2]s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [pprof, pprof/cpu]
      exporters: [otlphttp/nexovue, file/e2e]
`, ingestURL, sink), collectorEnv(testKey)
	})
}

// docsReceivers is the overlay of the docs' pprof receiver for the program
// at target, with short intervals, and the docs' second receiver for CPU.
func docsReceivers(target string) string {
	return fmt.Sprintf(`
receivers:
  pprof:
    remote:
      endpoint: %[1]s/heap
      collection_interval: 2s
  pprof/cpu:
    remote:
      endpoint: %[1]s/profile?seconds=2
      collection_interval: 3s
`, target)
}

// TestPprofShippedConfig runs the shipped distributions/otelcol-nexovue/pprof.yaml
// (nexovue exporter, frame_limit) through its environment variables, with
// an overlay for short intervals and the file exporter.
func TestPprofShippedConfig(t *testing.T) {
	t.Parallel() // see main_test.go
	pprofEndToEnd(t, "pprof-shipped", filepath.Join("distributions", "otelcol-nexovue", "pprof.yaml"), func(target, ingestURL, sink string) (string, []string) {
		return fmt.Sprintf(`
receivers:
  pprof/heap:
    remote:
      collection_interval: 2s
  pprof/cpu:
    remote:
      endpoint: ${env:PPROF_BASE_URL}/profile?seconds=2
      collection_interval: 3s
exporters:
  file/e2e:
    path: %s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      exporters: [nexovue, file/e2e]
`, sink), []string{
				"NEXOVUE_KEY=" + testKey,
				"NEXOVUE_ENDPOINT=" + ingestURL,
				"NEXOVUE_SERVICE_NAME=checkout",
				"PPROF_BASE_URL=" + target,
			}
	})
}

// pprofEndToEnd starts the pprof receiver's test program (named checkout),
// the double, and the collector with config (relative to the repository)
// plus the overlay and environment overlay returns for the program's
// http://ADDR/debug/pprof, the double's URL and a file exporter path. A heap
// profile in bytes must arrive under checkout, and a CPU profile as a
// separate type whose hot function is the program's. It returns the double,
// which keeps the first accepted bodies.
func pprofEndToEnd(t *testing.T, name, config string, overlay func(target, ingestURL, sink string) (string, []string)) *ingest.Server {
	root := testenv.RepoRoot(t)
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}, KeepBodies: keptBodies})
	sent := int64(-1)
	figures(t, name, srv, &sent)

	target := testenv.StartPprofServer(t, "checkout")

	dir := t.TempDir()
	sinkPath := filepath.Join(dir, "profiles.jsonl")
	content, env := overlay(target, srv.URL(), sinkPath)
	overlayPath := writeFile(t, dir, "overlay.yaml", content)
	testenv.StartCollector(t, filepath.Join(root, config), testenv.CollectorOptions{
		Env: env, Args: []string{"--config", overlayPath, testenv.FeatureGate},
	})

	testenv.WaitFor(t, 60*time.Second, "a heap profile in bytes and a CPU profile under checkout at the double", func() (bool, error) {
		var bytes, cpu bool
		for _, st := range srv.SampleTypes("checkout") {
			bytes = bytes || st.Unit == "bytes"
			cpu = cpu || st.Unit == "nanoseconds"
		}
		return bytes && cpu, nil
	})

	// Which type each function came in: only the file exporter keeps that.
	var s sink
	testenv.WaitFor(t, 30*time.Second, "main.burnCPU in a CPU profile in the file exporter's output", func() (bool, error) {
		var err error
		s, err = readSink(sinkPath)
		for _, typ := range s.typesWith("checkout", "main.burnCPU") {
			if strings.HasSuffix(typ, "/nanoseconds") {
				return true, err
			}
		}
		return false, err
	})
	for typ, fns := range s.functions["checkout"] {
		if strings.HasSuffix(typ, "/nanoseconds") {
			require.Equal(t, "main.burnCPU", hottestMain(fns), "the program's hot function in the %s profile", typ)
		}
	}
	var heapTypes []string
	for _, typ := range s.typesWith("checkout", "main.allocate") {
		if strings.HasSuffix(typ, "/bytes") {
			heapTypes = append(heapTypes, typ)
		}
	}
	require.NotEmpty(t, heapTypes, "the program's allocations (main.allocate) in a profile in bytes: %v", s.typesWith("checkout", "main.allocate"))
	return srv
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
