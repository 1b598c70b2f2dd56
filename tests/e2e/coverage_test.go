package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// coverageGauge is the service_name processor's coverage of the node.
const coverageGauge = "otelcol_processor_service_name_processes"

// coverageWindow is the agent's coverage_window in the coverage test.
const coverageWindow = "10s"

// TestCoverageCountsNamedProcesses runs the shipped agent config (real eBPF
// profiler) while four copies of a CPU burner run on the host: two named by
// OTEL_SERVICE_NAME, one by OTEL_RESOURCE_ATTRIBUTES and one unnamed. A
// filter in front of service_name keeps only these four (the host runs
// other tests' processes too), so that the coverage gauge the agent serves
// must read exactly 2 otel_service_name, 1 otel_resource_attributes, 1
// unknown_service and 0 for every other source, once all four were
// profiled (which their names at the double show). Then the four stop:
// past the agent's coverage_window (10 s here) every source reads 0, and a
// real Prometheus with the shipped rules (shortened, as in
// TestAlertsFireWithPrometheus) fires NexovueAgentProfilesNoProcess.
func TestCoverageCountsNamedProcesses(t *testing.T) {
	t.Parallel() // see main_test.go
	root := testenv.RepoRoot(t)
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "coverage", srv, &sent)

	// Executable names no other test uses.
	prefix := "nxv-cov-" + strconv.FormatInt(time.Now().UnixNano()%1_000_000, 36) + "-"
	burner := testenv.BuildGo(t, filepath.Join(root, "tests", "smoke", "testdata", "smokeburner"), prefix+"checkout")
	processes := []struct {
		exe, service string
		env          []string
	}{
		{prefix + "checkout", "checkout-cov", []string{"OTEL_SERVICE_NAME=checkout-cov"}},
		{prefix + "billing", "billing-cov", []string{"OTEL_SERVICE_NAME=billing-cov"}},
		{prefix + "cart", "cart-cov", []string{"OTEL_RESOURCE_ATTRIBUTES=service.name=cart-cov"}},
		{prefix + "anon", "unknown_service:" + prefix + "anon", nil},
	}
	var burners []*testenv.Process
	for _, p := range processes {
		exe := burner
		if filepath.Base(burner) != p.exe {
			exe = copyExecutable(t, burner, p.exe)
		}
		// nice: four burners on a shared machine, until the test stops
		// them (at most 15 min: the agent may wait for other tests' agents
		// to start).
		burners = append(burners, testenv.Start(t, p.env, "nice", "-n", "10", exe, "900"))
	}

	dir := t.TempDir()
	overlay := writeFile(t, dir, "overlay.yaml", fmt.Sprintf(`
receivers:
  profiling:
    reporter_interval: 2s
processors:
  service_name:
    coverage_window: %s
  filter/coverage:
    error_mode: ignore
    profile_conditions:
      - not IsMatch(resource.attributes["process.executable.name"], "^%s")
service:
  pipelines:
    profiles:
      processors: [memory_limiter, filter/coverage, span_links, service_name, symbolize, frame_limit]
`, coverageWindow, prefix))
	env := agentEnv(t, srv.URL(), dir)
	agent := startEBPFCollector(t, filepath.Join(root, "distributions", "otelcol-nexovue", "agent.yaml"), testenv.CollectorOptions{
		Env: env, Args: []string{"--config", overlay, testenv.FeatureGate},
	})
	host, port := metricsEndpoint(env)
	agentMetrics := host + ":" + port
	prom := startRulesPrometheus(t, map[string]string{jobAgent: agentMetrics})
	alive := stillRunning(map[string]*testenv.Process{"agent": agent})

	want := map[string]string{
		"existing": "0", "otel_service_name": "2", "otel_resource_attributes": "1",
		"k8s_annotation": "0", "k8s_label": "0", "k8s_workload": "0", "k8s_pod": "0",
		"unknown_service": "1",
	}
	var got map[string]string
	var seen string
	testenv.LastSeen(t, &seen)
	testenv.WaitFor(t, 3*time.Minute, "the four burners at the double and the coverage gauge counting them", func() (bool, error) {
		if err := alive(); err != nil {
			return false, err
		}
		byService := srv.ServiceSamples()
		text, err := scrapeText(agentMetrics)
		if err != nil {
			return false, err
		}
		got = gaugeBySource(text)
		seen = fmt.Sprintf("samples per service %v; %s by source %v", byService, coverageGauge, got)
		for _, p := range processes {
			if byService[p.service] == 0 {
				return false, nil
			}
		}
		for s, v := range want {
			if got[s] != v {
				return false, nil
			}
		}
		return len(got) == len(want), nil
	})
	t.Logf("e2e coverage: %s by source %v", coverageGauge, got)

	// The four stopped, the agent profiles no process of the test's (the
	// filter keeps no other): once coverage_window has passed, every source
	// reads 0 and NexovueAgentProfilesNoProcess fires.
	for _, b := range burners {
		b.Stop(10 * time.Second)
	}
	stopped := time.Now()
	waitFiring(t, prom, "NexovueAgentProfilesNoProcess", jobAgent, stopped,
		"the last of its processes stopped (coverage_window "+coverageWindow+")", alive)
	text, err := scrapeText(agentMetrics)
	require.NoError(t, err)
	for s, v := range gaugeBySource(text) {
		require.Equal(t, "0", v, "%s{source=%q} once the processes stopped", coverageGauge, s)
	}
}

// gaugeBySource returns the coverage gauge's values by source from a
// Prometheus text exposition.
func gaugeBySource(text string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(l, coverageGauge+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(labels, ",") {
			if v, ok := strings.CutPrefix(kv, `source="`); ok {
				out[strings.TrimSuffix(v, `"`)] = strings.TrimSpace(value)
			}
		}
	}
	return out
}
