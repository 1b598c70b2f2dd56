package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// offCPUWarning is the start of the receiver's warning where the kernel
// cannot attach what off-CPU profiling needs
// (receiver/profilingreceiver: OffCPUUnavailableMessage).
const offCPUWarning = "off-CPU profiling is off: this kernel cannot attach what it needs"

// offCPUGauge is the receiver's gauge: 1 off-CPU runs, 0 it was asked for
// but the kernel cannot.
const offCPUGauge = "otelcol_receiver_profiling_off_cpu_available"

// kernelHasKprobes says whether this kernel shows kprobe support (the kprobe
// PMU or tracefs' kprobe_events), as the receiver's probe reads it.
func kernelHasKprobes() bool {
	for _, f := range []string{"/sys/bus/event_source/devices/kprobe/type", "/sys/kernel/tracing/kprobe_events", "/sys/kernel/debug/tracing/kprobe_events"} {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

// TestOffCPUAskedWithoutKprobes runs the built binary with the shipped agent
// configuration plus off_cpu_threshold: 1.0 on this machine, whose kernel
// has no kprobes (CONFIG_KPROBES is not set). Upstream alone stops the
// collector ("failed to attach to one of 1 symbols with prefix
// 'finish_task_switch'"); ours starts, logs the warning naming
// CONFIG_KPROBES and the setting exactly once, reports the gauge at 0, and
// a CPU burner's on-CPU profiles arrive at the double as usual.
func TestOffCPUAskedWithoutKprobes(t *testing.T) {
	require.False(t, kernelHasKprobes(), "this test needs a kernel without kprobes (CONFIG_KPROBES not set), as the CI machine's; this one has them: TestOffCPUThroughAgentAndGateway and the receiver's unit tests cover the rest")
	for _, v := range []string{"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
		t.Setenv(v, "")
		require.NoError(t, os.Unsetenv(v))
	}
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "off-cpu-without-kprobes", srv, &sent)
	service := "nxv-offcpu-burn-" + strconv.FormatInt(time.Now().UnixNano()%1_000_000_000, 36)

	dir := t.TempDir()
	overlay := writeFile(t, dir, "overlay.yaml", `
receivers:
  profiling:
    reporter_interval: 2s
    off_cpu_threshold: 1.0
`)
	env := agentEnv(t, srv.URL(), dir)
	agent := filepath.Join(testenv.RepoRoot(t), "distributions", "otelcol-nexovue", "agent.yaml")
	start := time.Now()
	p := testenv.StartCollector(t, agent, testenv.CollectorOptions{
		Env: env, EBPF: true, Args: []string{"--config", overlay, testenv.FeatureGate},
	})
	ready := time.Since(start)

	burner := testenv.BuildGo(t, filepath.Join(testenv.RepoRoot(t), "tests", "smoke", "testdata", "smokeburner"), "nxv-offcpu-burn")
	testenv.Start(t, []string{"OTEL_SERVICE_NAME=" + service}, "nice", "-n", "10", burner)
	testenv.WaitFor(t, 90*time.Second, service+"'s on-CPU samples with "+hotFunction+" at the double", func() (bool, error) {
		if ok, err := p.Exited(); ok {
			return false, fmt.Errorf("the collector exited (%v)", err)
		}
		return hasFunction(srv.TopLeafFunctions(service, 5), hotFunction), nil
	})
	require.Equal(t, []ingest.SampleType{{Type: "samples", Unit: "count"}}, srv.SampleTypes(service), "on-CPU profiles only")

	out := p.Output()
	warnings := countLines(out, offCPUWarning)
	require.Equal(t, 1, warnings, "the warning once:\n%s", out)
	require.Equal(t, 1, countLines(out, offCPUWarning, `"missing": "CONFIG_KPROBES"`, `"setting": "off_cpu_threshold"`), "the warning names the kernel feature and the setting:\n%s", out)
	require.Zero(t, countLines(out, "failed to start off-cpu profiling"))
	require.Equal(t, "0", scrapeGauge(t, env, offCPUGauge), "the gauge says off-CPU is off")

	line := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if strings.Contains(sc.Text(), offCPUWarning) {
			line = sc.Text()
		}
	}
	t.Logf("e2e off-cpu-without-kprobes: ready after %s; warning: %s", ready.Round(10*time.Millisecond), line)
}

// scrapeGauge reads one metric's value from the collector's Prometheus
// endpoint (NEXOVUE_METRICS_HOST/PORT of env).
func scrapeGauge(t *testing.T, env []string, name string) string {
	t.Helper()
	host, port := "127.0.0.1", ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NEXOVUE_METRICS_PORT="); ok {
			port = v
		}
		if v, ok := strings.CutPrefix(kv, "NEXOVUE_METRICS_HOST="); ok {
			host = v
		}
	}
	require.NotEmpty(t, port)
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://%s:%s/metrics", host, port))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			f := strings.Fields(l)
			return f[len(f)-1]
		}
	}
	t.Fatalf("no %s in the collector's metrics:\n%s", name, body)
	return ""
}
