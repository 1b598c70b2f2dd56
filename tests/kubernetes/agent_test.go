// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

const (
	agentNamespace = "nexovue-profiling"
	agentName      = "otelcol-nexovue-agent"
	testKey        = "nxv-k8s-test-key"
	// burnerExe is the workload's executable name: every pod runs the same
	// one, so only the pod can tell their profiles apart.
	burnerExe = "nxv-podburner"
	// saDir is where client-go's in-cluster config reads the token and CA.
	saDir = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// installChart installs the chart (charts/otelcol-nexovue) as release
// otelcol-nexovue in the agent's namespace with the named values sets
// (ci/<name>-values.yaml; none: the defaults), as a user would with helm
// install (server-side apply), so the agent's objects are the ones the chart
// renders. The tests give the agent its key themselves: no Secret is made.
func installChart(t testing.TB, c *cluster, sets ...string) {
	t.Helper()
	args := []string{"install", chartRelease, testenv.Chart, "--namespace", agentNamespace, "--create-namespace"}
	for _, s := range sets {
		args = append(args, "-f", filepath.Join(testenv.RepoRoot(t), testenv.Chart, "ci", s+"-values.yaml"))
	}
	c.helm(t, args...)
}

// applyDistributions applies the gateway, least-privilege and
// agent-multi-key bases, then distributions/kubernetes (the agent), each
// with `kubectl apply -k`, server-side with strict field validation.
func applyDistributions(t testing.TB, c *cluster) {
	t.Helper()
	root := filepath.Join(testenv.RepoRoot(t), "distributions", "kubernetes")
	for _, dir := range []string{"gateway", "least-privilege", "agent-multi-key", "."} {
		if _, err := c.kubectlOut("apply", "-k", filepath.Join(root, dir), "--server-side", "--validate=strict", "--field-manager=kubectl"); err != nil {
			t.Fatalf("apply distributions/kubernetes/%s: %v", dir, err)
		}
	}
}

// agentConfig reads the agent's Collector config back from the API server.
func agentConfig(t testing.TB, c *cluster) string {
	t.Helper()
	cfg := c.kubectl(t, "-n", agentNamespace, "get", "configmap", agentName, "-o", `jsonpath={.data.config\.yaml}`)
	if !strings.Contains(cfg, "k8s_attributes") {
		t.Fatalf("the agent's ConfigMap from the API server has no k8s_attributes:\n%s", cfg)
	}
	// The DaemonSet sets K8S_NODE_NAME from the pod's node; the test sets it
	// the same way for its node.
	env := c.kubectl(t, "-n", agentNamespace, "get", "daemonset", agentName, "-o",
		`jsonpath={range .spec.template.spec.containers[0].env[*]}{.name}={.valueFrom.fieldRef.fieldPath}{"\n"}{end}`)
	if !strings.Contains(env, "K8S_NODE_NAME=spec.nodeName") {
		t.Fatalf("the agent DaemonSet does not set K8S_NODE_NAME from spec.nodeName:\n%s", env)
	}
	return cfg
}

// agentRun is the agent started as the DaemonSet's pod would be, and what
// the ingest double received from it.
type agentRun struct {
	proc *testenv.Process
	srv  *ingest.Server
	rec  *recorder
	// metricsURL is the agent's own Prometheus metrics.
	metricsURL string
}

// startAgent runs the built binary with the agent's config from the API
// server as the agent's ServiceAccount: a TokenRequest token and the CA are
// bind-mounted where in-cluster config reads them, in a private mount
// namespace (the host's /var/run/secrets is untouched), and
// KUBERNETES_SERVICE_HOST/PORT point at the API server. So the shipped RBAC
// is what the agent has. NEXOVUE_ENDPOINT points at the ingest double.
func startAgent(t testing.TB, c *cluster, node string, withK8s bool) *agentRun {
	t.Helper()
	return startAgentWith(t, c, node, withK8s, nil, nil, ingest.Config{Keys: []string{testKey}})
}

// startAgentWith is startAgent with the agent's config rewritten (when
// rewrite is not nil: paths of the pod made the test's), further config
// files (merged over the agent's, as more --config flags) and the double's
// config (its OnAccepted is set to the run's recorder); env adds to the
// agent's environment.
func startAgentWith(t testing.TB, c *cluster, node string, withK8s bool, rewrite func(string) string, configs []string, srvCfg ingest.Config, env ...string) *agentRun {
	t.Helper()
	cfg := agentConfig(t, c)
	if rewrite != nil {
		cfg = rewrite(cfg)
	}
	dir := t.TempDir()
	token := c.kubectl(t, "-n", agentNamespace, "create", "token", agentName, "--duration=2h")
	sa := filepath.Join(dir, "serviceaccount")
	mustWrite(t, filepath.Join(sa, "token"), strings.TrimSpace(token))
	caPEM, err := os.ReadFile(c.caFile)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(sa, "ca.crt"), string(caPEM))
	mustWrite(t, filepath.Join(sa, "namespace"), agentNamespace)

	configPath := filepath.Join(dir, "config.yaml")
	mustWrite(t, configPath, cfg)
	// Test-only overlay: profiles reach the double every 2 s rather than 5 s.
	overlay := "receivers:\n  profiling:\n    reporter_interval: 2s\n"
	if !withK8s {
		// The baseline of the cost figures: the same config without
		// k8s_attributes.
		overlay += "service:\n  pipelines:\n    profiles:\n      processors: [memory_limiter, span_links, service_name, symbolize, frame_limit]\n"
	}
	overlayPath := filepath.Join(dir, "overlay.yaml")
	mustWrite(t, overlayPath, overlay)

	rec := newRecorder()
	srvCfg.OnAccepted = rec.record
	srv := ingest.StartForTest(t, srvCfg)
	metricsPort := testenv.FreePort(t)
	env = append([]string{
		"NEXOVUE_ENDPOINT=" + srv.URL(),
		"NEXOVUE_KEY=" + testKey,
		"NEXOVUE_STORAGE_DIR=" + filepath.Join(dir, "storage"),
		"NEXOVUE_HEALTH_ENDPOINT=" + testenv.FreeAddr(t),
		"NEXOVUE_METRICS_HOST=127.0.0.1",
		"NEXOVUE_METRICS_PORT=" + strconv.Itoa(metricsPort),
		"K8S_NODE_NAME=" + node,
		"KUBERNETES_SERVICE_HOST=127.0.0.1",
		"KUBERNETES_SERVICE_PORT=" + strconv.Itoa(c.apiPort),
		"OTEL_SERVICE_NAME=", "OTEL_RESOURCE_ATTRIBUTES=",
	}, env...)
	// A tmpfs over /run (what /var/run links to) in the agent's own mount
	// namespace gives the service-account folder a place to be mounted.
	mountSA := fmt.Sprintf(`set -e
mount -t tmpfs tmpfs /run
mkdir -p %[1]s
mount --bind "$0" %[1]s
exec "$@"`, saDir)
	proc := testenv.StartCollector(t, configPath, testenv.CollectorOptions{
		Env:  env,
		EBPF: true,
		Args: append(configArgs(append(configs, overlayPath)), testenv.FeatureGate),
		Wrap: []string{"unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", mountSA, sa},
	})
	return &agentRun{proc: proc, srv: srv, rec: rec, metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)}
}

// k8sCounters returns the agent's k8s_attributes metrics (what its informers
// saw: pods added, updated, deleted; pod associations), one per line, or
// why they could not be read.
func (run *agentRun) k8sCounters() string {
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(run.metricsURL)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "k8s") && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}

// coverageBySource returns the agent's coverage gauge,
// otelcol_processor_service_name_processes, by source.
func (run *agentRun) coverageBySource() (map[string]string, error) {
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(run.metricsURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	const prefix = `otelcol_processor_service_name_processes{source="`
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			if source, value, ok := strings.Cut(rest, `"} `); ok {
				out[source] = value
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no otelcol_processor_service_name_processes in the agent's metrics")
	}
	return out, nil
}

// configArgs is a --config flag per file.
func configArgs(files []string) []string {
	var args []string
	for _, f := range files {
		args = append(args, "--config", f)
	}
	return args
}

func mustWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// observation is one resource of the burner's that the double accepted.
type observation struct {
	at time.Time // when the double accepted it
	// sampled is when the profiler took the resource's earliest sample
	// (its samples' timestamps, or the profile's start where a sample has
	// none): the profile went through the processors after that.
	sampled time.Time
	attrs   map[string]string
	samples int
}

// recorder keeps the resources of the burner's processes the double
// accepted, by process.pid.
type recorder struct {
	mu    sync.Mutex
	byPID map[string][]observation
}

func newRecorder() *recorder { return &recorder{byPID: map[string][]observation{}} }

func (r *recorder) record(pd pprofile.Profiles) {
	now := time.Now()
	rps := pd.ResourceProfiles()
	for i := 0; i < rps.Len(); i++ {
		rp := rps.At(i)
		attrs := rp.Resource().Attributes()
		if exe, ok := attrs.Get("process.executable.name"); !ok || exe.AsString() != burnerExe {
			continue
		}
		o := observation{at: now, attrs: map[string]string{}}
		for k, v := range attrs.All() {
			o.attrs[k] = v.AsString()
		}
		for j := 0; j < rp.ScopeProfiles().Len(); j++ {
			ps := rp.ScopeProfiles().At(j).Profiles()
			for k := 0; k < ps.Len(); k++ {
				p := ps.At(k)
				o.samples += p.Samples().Len()
				var earliest time.Time
				for si := 0; si < p.Samples().Len(); si++ {
					ts := p.Samples().At(si).TimestampsUnixNano()
					for ti := 0; ti < ts.Len(); ti++ {
						if at := time.Unix(0, int64(ts.At(ti))); earliest.IsZero() || at.Before(earliest) {
							earliest = at
						}
					}
				}
				if earliest.IsZero() {
					earliest = p.Time().AsTime()
				}
				if o.sampled.IsZero() || earliest.Before(o.sampled) {
					o.sampled = earliest
				}
			}
		}
		r.mu.Lock()
		r.byPID[o.attrs["process.pid"]] = append(r.byPID[o.attrs["process.pid"]], o)
		r.mu.Unlock()
	}
}

// of returns the observations of pid so far.
func (r *recorder) of(pid int) []observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]observation(nil), r.byPID[strconv.Itoa(pid)]...)
}

// last returns the latest observation of pid.
func (r *recorder) last(pid int) (observation, bool) {
	obs := r.of(pid)
	if len(obs) == 0 {
		return observation{}, false
	}
	return obs[len(obs)-1], true
}
