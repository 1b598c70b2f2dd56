package e2e

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// hotFunction is the CPU burner's (tests/smoke/testdata/smokeburner).
const hotFunction = "main.nexovueSmokeHotLoop"

// TestNamingWithEBPF runs the shipped agent config (real eBPF profiler)
// against the double while the same CPU burner runs three times under
// different executable names: with OTEL_SERVICE_NAME, with nothing, and with
// only OTEL_RESOURCE_ATTRIBUTES. The file exporter next to the nexovue one
// (startAgent) shows the resource attributes the double does not keep.
func TestNamingWithEBPF(t *testing.T) {
	t.Parallel() // see main_test.go
	root := testenv.RepoRoot(t)
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "naming", srv, &sent)

	checkout := testenv.BuildGo(t, filepath.Join(root, "tests", "smoke", "testdata", "smokeburner"), "nxv-checkout")
	anon := copyExecutable(t, checkout, "nxv-anon")
	billing := copyExecutable(t, checkout, "nxv-billing")
	// nice: three CPU burners on a shared machine, until the test ends (at
	// most 15 min, not their default 2: the agent may wait for other tests'
	// agents to start, startEBPFCollector).
	testenv.Start(t, []string{"OTEL_SERVICE_NAME=checkout"}, "nice", "-n", "10", checkout, "900")
	testenv.Start(t, nil, "nice", "-n", "10", anon, "900")
	testenv.Start(t, []string{"OTEL_RESOURCE_ATTRIBUTES=service.name=billing,service.namespace=shop"}, "nice", "-n", "10", billing, "900")

	sinkPath, _ := startAgent(t, srv)

	const anonService = "unknown_service:nxv-anon"
	// The anonymous burner's service holds the burner's samples: its hot
	// function, once the niced program had the CPU for it (its first
	// sample may be in the kernel).
	var seen string
	testenv.LastSeen(t, &seen)
	testenv.WaitFor(t, 3*time.Minute, "checkout and "+anonService+" (with "+hotFunction+") and billing at the double", func() (bool, error) {
		byService := srv.ServiceSamples()
		seen = fmt.Sprintf("samples per service %v; top leaf functions of %s: %v", byService, anonService, srv.TopLeafFunctions(anonService, 5))
		return hasFunction(srv.TopLeafFunctions("checkout", 5), hotFunction) &&
			hasFunction(srv.TopLeafFunctions(anonService, 5), hotFunction) && byService["billing"] > 0, nil
	})

	var s sink
	testenv.WaitFor(t, 30*time.Second, "billing in the file exporter's output", func() (bool, error) {
		var err error
		s, err = readSink(sinkPath)
		return s.attrs["billing"] != nil && s.attrs["checkout"] != nil, err
	})
	require.Equal(t, "shop", s.attrs["billing"]["service.namespace"], "billing's resource: %v", s.attrs["billing"])
	for service, attrs := range s.attrs {
		for k := range attrs {
			require.False(t, strings.HasPrefix(k, "process.environment_variable."), "service %q still carries %s", service, k)
		}
	}
}

// agentEnv is the environment of the shipped agent.yaml sending to the
// double at url, with its queue in dir and its ports free loopback ones.
func agentEnv(t testing.TB, url, dir string) []string {
	return []string{
		"NEXOVUE_ENDPOINT=" + url,
		"NEXOVUE_KEY=" + testKey,
		"NEXOVUE_STORAGE_DIR=" + filepath.Join(dir, "storage"),
		fmt.Sprintf("NEXOVUE_HEALTH_ENDPOINT=127.0.0.1:%d", testenv.FreePort(t)),
		"NEXOVUE_METRICS_HOST=127.0.0.1",
		fmt.Sprintf("NEXOVUE_METRICS_PORT=%d", testenv.FreePort(t)),
	}
}

func hasFunction(top []ingest.FunctionCount, fn string) bool {
	for _, f := range top {
		if strings.Contains(f.Function, fn) {
			return true
		}
	}
	return false
}

// copyExecutable copies the program at src to a file called name next to it.
func copyExecutable(t *testing.T, src, name string) string {
	t.Helper()
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	dst := filepath.Join(filepath.Dir(src), name)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, out.Close())
	require.NoError(t, err)
	return dst
}
