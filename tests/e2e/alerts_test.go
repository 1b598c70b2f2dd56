package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// Jobs of the test Prometheus.
const (
	jobAgent   = "agent"
	jobGateway = "gateway"
)

// offCPUAvailable is the gauge the NexovueOffCPUUnavailable rule reads.
const offCPUAvailable = "otelcol_receiver_profiling_off_cpu_available"

// TestAlertsFireWithPrometheus runs the built agent (shipped
// agent-to-gateway.yaml, real eBPF profiler, with off-CPU profiles asked
// for) and gateway (shipped gateway.yaml) against the ingest double, and a
// real Prometheus that scrapes both and evaluates the shipped rules with
// short windows (shortRules). While the double is healthy no alert is
// pending or firing, but NexovueOffCPUUnavailable where the kernel cannot
// profile off-CPU (it then must fire); the double answering 429 most of
// the time fires NexovueThrottled; the key revoked (401) fires
// NexovueIngestRefusing, NexovueSamplesDropped and, the gateway failing its
// agent's requests, NexovueGatewayRefusingClients; the double down fires
// NexovueCollectorNotSending for both, then, the agent's queue (bound to
// 1 MiB) full, NexovueQueueFilling and NexovueAgentDroppingBatches. Each
// alert's time from the fault to firing is a figure. Then every metric
// name a rule or a dashboard panel uses must be in a scrape of the
// collectors, and every panel's query must answer.
func TestAlertsFireWithPrometheus(t *testing.T) {
	// Not parallel (E2E_SERIAL): its figures are times.
	start := time.Now()
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	dir := t.TempDir()

	gwMetrics, gwGRPC := testenv.FreeAddr(t), testenv.FreeAddr(t)
	gwTLS, agentTLS := testenv.GatewayTLS(t) // mutual TLS, as shipped
	gateway := testenv.StartCollector(t, filepath.Join(testenv.RepoRoot(t), "distributions", "otelcol-nexovue", "gateway.yaml"),
		testenv.CollectorOptions{Env: append([]string{
			"NEXOVUE_KEY=" + testKey,
			"NEXOVUE_ENDPOINT=" + srv.URL(),
			"NEXOVUE_OTLP_GRPC_ENDPOINT=" + gwGRPC,
			"NEXOVUE_HEALTH_ENDPOINT=" + testenv.FreeAddr(t),
			"NEXOVUE_METRICS_HOST=127.0.0.1",
			"NEXOVUE_METRICS_PORT=" + portOf(gwMetrics),
		}, gwTLS...)})

	// The shipped agent-to-gateway.yaml with its commented off_cpu_threshold
	// line turned on, as its comment says.
	shipped := readRepoFile(t, "distributions", "otelcol-nexovue", "agent-to-gateway.yaml")
	const commented = "    # off_cpu_threshold: 0.01\n"
	require.Equal(t, 1, strings.Count(shipped, commented), "agent-to-gateway.yaml shows the commented off_cpu_threshold line once")
	agentConfig := writeFile(t, dir, "agent.yaml", strings.Replace(shipped, commented, "    off_cpu_threshold: 0.01\n", 1))
	// A batch every 250 ms, and a burner on one CPU for the whole test so
	// that each holds samples: the queue's items each take at least one 4
	// KiB block, so with the ingest down 80% of the 1 MiB bound is about
	// 205 items, about 52 s. With a batch every 2 s and only the quiet
	// host's own samples (a clean-clone make test on 2026-12-06), it was
	// not 80% full after 3 minutes; on a busy host, where batches are
	// larger, it filled in 30 to 45 s.
	overlay := writeFile(t, dir, "overlay.yaml", "receivers:\n  profiling:\n    reporter_interval: 250ms\n")
	burner := testenv.BuildGo(t, filepath.Join(testenv.RepoRoot(t), "tests", "smoke", "testdata", "smokeburner"), "nxv-alerts-burn")
	testenv.Start(t, nil, burner, "1200")
	agentMetrics := testenv.FreeAddr(t)
	agent := startEBPFCollector(t, agentConfig, testenv.CollectorOptions{
		Env: append([]string{
			"NEXOVUE_KEY=",
			"NEXOVUE_GATEWAY_ENDPOINT=" + gwGRPC,
			"NEXOVUE_STORAGE_DIR=" + filepath.Join(dir, "storage"),
			// A queue of 1 MiB on disk, which the agent's batches fill
			// in about a minute once nothing leaves (see the overlay).
			"NEXOVUE_QUEUE_MAX_MIB=1",
			"NEXOVUE_HEALTH_ENDPOINT=" + testenv.FreeAddr(t),
			"NEXOVUE_METRICS_HOST=127.0.0.1",
			"NEXOVUE_METRICS_PORT=" + portOf(agentMetrics),
		}, agentTLS...),
		Args: []string{"--config", overlay, testenv.FeatureGate},
	})
	agentUp := time.Now()

	prom := startRulesPrometheus(t, map[string]string{jobAgent: agentMetrics, jobGateway: gwMetrics})
	t.Cleanup(func() {
		if t.Failed() {
			as, err := prom.alerts()
			t.Logf("Prometheus' alerts at the end: %v (%v)", as, err)
		}
	})

	// Every scrape of the collectors the test makes, for the names check.
	scraped := map[string]bool{}
	scrapeBoth := func() {
		t.Helper()
		for _, addr := range []string{agentMetrics, gwMetrics} {
			text, err := scrapeText(addr)
			require.NoError(t, err)
			metricNames(text, scraped)
		}
	}
	alive := stillRunning(map[string]*testenv.Process{"agent": agent, "gateway": gateway})

	// Where the kernel cannot profile off-CPU (no kprobes), the agent says
	// so with the gauge at 0 and NexovueOffCPUUnavailable must fire; where
	// it can, that alert must not.
	var offCPU []promSample
	testenv.WaitFor(t, time.Minute, "Prometheus to have scraped "+offCPUAvailable, func() (bool, error) {
		var err error
		offCPU, err = prom.query(offCPUAvailable)
		return len(offCPU) == 1, err
	})
	offCPUExpected := offCPU[0].Value == "0"
	allowed := func(a promAlert) bool {
		return offCPUExpected && a.Labels["alertname"] == "NexovueOffCPUUnavailable" && a.Labels["job"] == jobAgent
	}

	// 1. Healthy: both collectors sending, up for longer than the uptime
	// guard; then, for as long as the window and `for` last (counted in
	// Prometheus' own rule evaluations), no alert but the allowed one is
	// pending or firing.
	testenv.WaitFor(t, 3*time.Minute, "both collectors to send samples over a whole window, up longer than the guard", func() (bool, error) {
		if err := alive(); err != nil {
			return false, err
		}
		s, err := prom.query(fmt.Sprintf(`sum by (job) (increase(otelcol_exporter_sent_profile_samples[%s])) > 0 and on (job) (max by (job) (otelcol_process_uptime) > %s)`, rulesWindow, rulesUptime))
		return len(s) == 2, err
	})
	healthyFrom := time.Now()
	// An evaluation of the rules after that first: the query above and the
	// rules' evaluation are not at the same instant, and on a loaded machine
	// (the eBPF agent's start took most of the uptime guard) an evaluation
	// just before had the agent's and the gateway's first sends outside
	// their window, so NexovueCollectorNotSending was pending from it; the
	// next evaluation drops it, and from then on no alert may appear.
	testenv.WaitFor(t, time.Minute, "a rule evaluation after both collectors sent over a window", func() (bool, error) {
		last, err := prom.lastEvaluation()
		return last.After(healthyFrom.Add(promInterval)), err
	})
	healthyFrom = time.Now()
	quiet := mustDuration(t, rulesWindow) + mustDuration(t, rulesFor) + 2*promInterval
	testenv.WaitFor(t, 2*time.Minute, fmt.Sprintf("Prometheus to evaluate the rules for %s of healthy sending", quiet), func() (bool, error) {
		if err := alive(); err != nil {
			return false, err
		}
		as, err := prom.alerts()
		if err != nil {
			return false, err
		}
		for _, a := range as {
			if !allowed(a) {
				return false, fmt.Errorf("alert while healthy: %s: %s", a, a.Annotations["description"])
			}
		}
		last, err := prom.lastEvaluation()
		return last.After(healthyFrom.Add(quiet)), err
	})
	scrapeBoth()
	if offCPUExpected {
		waitFiring(t, prom, "NexovueOffCPUUnavailable", jobAgent, agentUp, "the agent's start with off_cpu_threshold on a kernel without kprobes", alive)
	} else {
		as, err := prom.alerts()
		require.NoError(t, err)
		require.Empty(t, as, "the kernel profiles off-CPU: no alert")
	}
	t.Logf("healthy: no alert for %s of evaluations (off-CPU available: %s)", quiet, offCPU[0].Value)

	// 2. The double answers 429 to 90% of the requests.
	fault := time.Now()
	srv.SetFault(ingest.Fault{ThrottleProbability: 0.9, Seed: 43})
	waitFiring(t, prom, "NexovueThrottled", jobGateway, fault, "the double answering 429 to 90% of the requests", alive)
	scrapeBoth()
	srv.SetFault(ingest.Fault{})
	accepted := srv.SamplesAccepted()
	testenv.WaitFor(t, time.Minute, "samples accepted again once the 429s end", func() (bool, error) {
		return srv.SamplesAccepted() > accepted, alive()
	})

	// 3. The key revoked: 401, without routing the gateway drops.
	fault = time.Now()
	srv.RevokeKey(testKey)
	waitFiring(t, prom, "NexovueIngestRefusing", jobGateway, fault, "the key revoked (401)", alive)
	waitFiring(t, prom, "NexovueSamplesDropped", jobGateway, fault, "the key revoked (401)", alive)
	// The gateway's exporter fails the agent's requests: its OTLP receiver
	// refuses them.
	waitFiring(t, prom, "NexovueGatewayRefusingClients", jobGateway, fault, "the key revoked (401)", alive)
	scrapeBoth()
	srv.RestoreKey(testKey)
	// The gateway sends again before the next fault, so that its figure
	// counts from a collector that was sending.
	accepted = srv.SamplesAccepted()
	testenv.WaitFor(t, time.Minute, "samples accepted again once the key is restored", func() (bool, error) {
		return srv.SamplesAccepted() > accepted, alive()
	})

	// 4. The double down.
	fault = time.Now()
	srv.Close()
	waitFiring(t, prom, "NexovueCollectorNotSending", jobGateway, fault, "the double down", alive)
	waitFiring(t, prom, "NexovueCollectorNotSending", jobAgent, fault, "the double down (behind the gateway)", alive)
	// The agent's queue fills, then refuses the profiler's batches.
	waitFiring(t, prom, "NexovueQueueFilling", jobAgent, fault, "the double down (the agent's queue bound 1 MiB)", alive)
	waitFiring(t, prom, "NexovueAgentDroppingBatches", jobAgent, fault, "the double down (the agent's queue bound 1 MiB)", alive)
	scrapeBoth()

	// Every metric name of a rule or a dashboard panel is served by the
	// built binary, and every panel's query answers.
	checkMetricNames(t, scraped)
	checkDashboardQueries(t, prom)
	t.Logf("figure: alerts test: %s in all (overrides: ranges %s, for %s, uptime guard %s s; scrape and evaluation every %s)",
		time.Since(start).Round(100*time.Millisecond), rulesWindow, rulesFor, rulesUptime, promInterval)
}

// waitFiring waits until Prometheus reports alert firing for job, and logs
// the time from fault to then as a figure.
func waitFiring(t *testing.T, prom *prometheus, alert, job string, fault time.Time, what string, alive func() error) {
	t.Helper()
	var firing promAlert
	testenv.WaitFor(t, 3*time.Minute, alert+" firing for the "+job, func() (bool, error) {
		if err := alive(); err != nil {
			return false, err
		}
		seen, err := prom.alerts()
		for _, a := range seen {
			if a.Labels["alertname"] == alert && a.Labels["job"] == job && a.State == "firing" {
				firing = a
				return true, nil
			}
		}
		return false, err
	})
	observed := time.Since(fault)
	require.NotEmpty(t, firing.Annotations["summary"], "%s has a summary", alert)
	require.NotEmpty(t, firing.Annotations["description"], "%s has a description", alert)
	require.Contains(t, firing.Annotations["runbook_url"], "docs/runbook.md#"+strings.ToLower(alert))
	// Prometheus fires an alert `for` after it became pending (activeAt),
	// at an evaluation: the figure is that, and when the test saw it.
	fired := firing.ActiveAt.Add(mustDuration(t, rulesFor)).Sub(fault)
	t.Logf("figure: %s fired for the %s %s after %s (pending from %s; the test saw it firing at %s; overrides: ranges %s, for %s)",
		alert, job, fired.Round(100*time.Millisecond), what, firing.ActiveAt.Sub(fault).Round(100*time.Millisecond),
		observed.Round(100*time.Millisecond), rulesWindow, rulesFor)
}

// metricNameRE matches the collector's metric names in rules and panels.
var metricNameRE = regexp.MustCompile(`\botelcol_[a-z0-9_]+`)

// monitoringNames returns the metric names the shipped rules and dashboard
// use, each with the file that uses it.
func monitoringNames(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	dir := filepath.Join(testenv.RepoRoot(t), "distributions", "monitoring")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") && !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		for _, n := range metricNameRE.FindAllString(string(b), -1) {
			out[n] = e.Name()
		}
	}
	require.NotEmpty(t, out)
	return out
}

// checkMetricNames fails for a name of the rules or the dashboard that no
// scrape of the test served.
func checkMetricNames(t *testing.T, scraped map[string]bool) {
	t.Helper()
	names := monitoringNames(t)
	var notServed []string
	for n, file := range names {
		if !scraped[n] {
			notServed = append(notServed, fmt.Sprintf("%s (%s)", n, file))
		}
	}
	sort.Strings(notServed)
	require.Empty(t, notServed, "metric names of the rules or the dashboard that the built agent and gateway did not serve")
	t.Logf("the %d metric names of the rules and the dashboard were served", len(names))
}

// checkDashboardQueries runs every query of the shipped dashboard's panels
// in the test Prometheus (its variables for every job and instance, the
// rate interval the rules' window): each must answer with a series.
func checkDashboardQueries(t *testing.T, prom *prometheus) {
	t.Helper()
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal([]byte(readRepoFile(t, "distributions", "monitoring", "otelcol-nexovue-dashboard.json")), &dash))
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			expr := strings.NewReplacer("$__rate_interval", rulesWindow, "$job", ".*", "$instance", ".*").Replace(tg.Expr)
			got, err := prom.query(expr)
			require.NoError(t, err, "panel %q: %s", p.Title, tg.Expr)
			require.NotEmpty(t, got, "panel %q: no series for %s", p.Title, expr)
			queries++
		}
	}
	require.NotZero(t, queries, "no panel query in the dashboard")
}

func portOf(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

func mustDuration(t testing.TB, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	require.NoError(t, err)
	return d
}

// TestMemoryLimiterAlertFires runs the shipped agent.yaml (real eBPF
// profiler) with its memory_limiter's limit at 16 MiB, far below what the
// agent holds: the real memory_limiter refuses the profiler's batches, the
// profiling receiver counts them as reason memory_limit (it matches the
// memory_limiter's error by its text), and a real Prometheus with the
// shipped rules (shortened) fires NexovueMemoryLimiterRefusing.
func TestMemoryLimiterAlertFires(t *testing.T) {
	t.Parallel() // see main_test.go
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	dir := t.TempDir()
	overlay := writeFile(t, dir, "overlay.yaml", `
receivers:
  profiling:
    reporter_interval: 2s
processors:
  memory_limiter:
    check_interval: 1s
    limit_mib: 16
    spike_limit_mib: 4
`)
	env := agentEnv(t, srv.URL(), dir)
	agent := startEBPFCollector(t, filepath.Join(testenv.RepoRoot(t), "distributions", "otelcol-nexovue", "agent.yaml"),
		testenv.CollectorOptions{Env: env, Args: []string{"--config", overlay, testenv.FeatureGate}})
	started := time.Now()
	host, port := metricsEndpoint(env)
	agentMetrics := host + ":" + port
	prom := startRulesPrometheus(t, map[string]string{jobAgent: agentMetrics})
	alive := stillRunning(map[string]*testenv.Process{"agent": agent})
	waitFiring(t, prom, "NexovueMemoryLimiterRefusing", jobAgent, started,
		"the start of an agent whose memory_limiter allows 16 MiB", alive)

	text, err := scrapeText(agentMetrics)
	require.NoError(t, err)
	var dropped []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "otelcol_receiver_profiling_samples_dropped{") {
			dropped = append(dropped, l)
		}
	}
	require.NotEmpty(t, dropped)
	for _, l := range dropped {
		require.Contains(t, l, `reason="memory_limit"`, "every refused batch is the memory limiter's: %v", dropped)
	}
	t.Logf("the agent's drops: %v", dropped)
}
