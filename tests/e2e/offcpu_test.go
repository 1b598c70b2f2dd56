package e2e

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
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
// configuration, its commented off_cpu_threshold line turned on, on this
// machine, whose kernel has no kprobes (CONFIG_KPROBES is not set). Upstream alone stops the
// collector ("failed to attach to one of 1 symbols with prefix
// 'finish_task_switch'"); ours starts, logs the warning naming
// CONFIG_KPROBES and the setting exactly once, reports the gauge at 0, and
// a CPU burner's on-CPU profiles arrive at the double as usual.
func TestOffCPUAskedWithoutKprobes(t *testing.T) {
	t.Parallel() // see main_test.go
	require.False(t, kernelHasKprobes(), "this test needs a kernel without kprobes (CONFIG_KPROBES not set), as the CI machine's; this one has them: TestOffCPUThroughAgentAndGateway and the receiver's unit tests cover the rest")
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "off-cpu-without-kprobes", srv, &sent)
	service := "nxv-offcpu-burn-" + strconv.FormatInt(time.Now().UnixNano()%1_000_000_000, 36)

	dir := t.TempDir()
	// The shipped agent config with its commented off_cpu_threshold line
	// turned on as its comment says.
	shipped, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "distributions", "otelcol-nexovue", "agent.yaml"))
	require.NoError(t, err)
	const commented = "    # off_cpu_threshold: 0.01\n"
	require.Equal(t, 1, strings.Count(string(shipped), commented), "agent.yaml shows the commented off_cpu_threshold line once")
	agent := writeFile(t, dir, "agent.yaml", strings.Replace(string(shipped), commented, "    off_cpu_threshold: 0.01\n", 1))
	overlay := writeFile(t, dir, "overlay.yaml", `
receivers:
  profiling:
    reporter_interval: 2s
`)
	env := agentEnv(t, srv.URL(), dir)
	p, ready := startEBPFCollectorTimed(t, agent, testenv.CollectorOptions{
		Env: env, Args: []string{"--config", overlay, testenv.FeatureGate},
	})

	burner := testenv.BuildGo(t, filepath.Join(testenv.RepoRoot(t), "tests", "smoke", "testdata", "smokeburner"), "nxv-offcpu-burn")
	testenv.Start(t, []string{"OTEL_SERVICE_NAME=" + service}, "nice", "-n", "10", burner)
	testenv.WaitFor(t, 3*time.Minute, service+"'s on-CPU samples with "+hotFunction+" at the double", func() (bool, error) {
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

// metricsEndpoint is the host and port of the collector's Prometheus
// endpoint in env (NEXOVUE_METRICS_HOST, default 127.0.0.1, and
// NEXOVUE_METRICS_PORT, "" when unset).
func metricsEndpoint(env []string) (host, port string) {
	host = "127.0.0.1"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NEXOVUE_METRICS_PORT="); ok {
			port = v
		}
		if v, ok := strings.CutPrefix(kv, "NEXOVUE_METRICS_HOST="); ok {
			host = v
		}
	}
	return host, port
}

// scrapeGauge reads one metric's value from the collector's Prometheus
// endpoint (NEXOVUE_METRICS_HOST/PORT of env).
func scrapeGauge(t *testing.T, env []string, name string) string {
	t.Helper()
	host, port := metricsEndpoint(env)
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

// TestOffCPUThroughAgentAndGateway sends off-CPU batches built to the eBPF
// profiler's shape (internal/profilesplit/profilegen, OffCPUSamples: the
// upstream reporter's source is cited there) over OTLP into the built
// binary running the shipped agent-to-gateway.yaml (its profiling receiver
// swapped for an OTLP one: service_name and symbolize as shipped), which
// exports to a second one running the shipped gateway.yaml with a frame
// limit that forces splits and, after it, the profile_metrics connector.
// The processes are named by service_name from OTEL_SERVICE_NAME. At the
// double, each service's off-CPU nanoseconds are exactly what was sent, the
// CPU samples too, and the connector's profile.off_cpu.time equals the sum.
func TestOffCPUThroughAgentAndGateway(t *testing.T) {
	t.Parallel() // see main_test.go
	const key = "nxk-e2e-offcpu-key"
	const maxFrames = 5000
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{key}})
	sent := int64(-1)
	figures(t, "off-cpu-through-gateway", srv, &sent)
	dir := filepath.Join(testenv.RepoRoot(t), "distributions", "otelcol-nexovue")
	tmp := t.TempDir()
	metricsPath := filepath.Join(tmp, "metrics.jsonl")
	own := func() []string {
		return []string{
			"NEXOVUE_STORAGE_DIR=" + t.TempDir(),
			"NEXOVUE_HEALTH_ENDPOINT=" + testenv.FreeAddr(t),
			"NEXOVUE_METRICS_HOST=127.0.0.1",
			"NEXOVUE_METRICS_PORT=" + strconv.Itoa(testenv.FreePort(t)),
		}
	}
	grpc := testenv.FreeAddr(t)
	gwOverlay := writeFile(t, tmp, "gateway-overlay.yaml", fmt.Sprintf(`
processors:
  frame_limit:
    max_frames: %d
connectors:
  profile_metrics:
    interval: 1s
exporters:
  file/metrics:
    path: %s
service:
  pipelines:
    profiles:
      exporters: [nexovue, profile_metrics]
    metrics:
      receivers: [profile_metrics]
      exporters: [file/metrics]
`, maxFrames, metricsPath))
	gwTLS, agentTLS := testenv.GatewayTLS(t) // mutual TLS, as shipped
	testenv.StartCollector(t, dir+"/gateway.yaml", testenv.CollectorOptions{
		Env: append(append(own(), "NEXOVUE_KEY="+key, "NEXOVUE_ENDPOINT="+srv.URL(),
			"NEXOVUE_OTLP_GRPC_ENDPOINT="+grpc), gwTLS...),
		Args: []string{"--config", gwOverlay, testenv.FeatureGate},
	})
	agentPort := testenv.FreePort(t)
	agentOverlay := writeFile(t, tmp, "agent-overlay.yaml", otlpInOverlay(agentPort))
	testenv.StartCollector(t, dir+"/agent-to-gateway.yaml", testenv.CollectorOptions{
		Env:  append(append(own(), "NEXOVUE_KEY=", "NEXOVUE_GATEWAY_ENDPOINT="+grpc), agentTLS...),
		Args: []string{"--config", agentOverlay, testenv.FeatureGate},
	})

	// 600 CPU and 600 off-CPU samples of 64 frames over 6 processes: 76,800
	// frames, at least 16 parts under the gateway's frame limit.
	suffix := strconv.FormatInt(time.Now().UnixNano()%1_000_000_000, 36)
	pd := profilegen.Generate(profilegen.Config{Samples: 600, OffCPUSamples: 600, Depth: 64, Resources: 6, Seq: true, Seed: 28})
	names := map[string]string{}
	for _, rp := range pd.ResourceProfiles().All() {
		attrs := rp.Resource().Attributes()
		old, _ := attrs.Get("service.name")
		names[old.Str()] = "nxv-offcpu-" + old.Str() + "-" + suffix
		attrs.PutStr("process.environment_variable.OTEL_SERVICE_NAME", names[old.Str()])
		attrs.Remove("service.name")
	}
	nanosBefore, offBefore, cpuSamples := profilegen.OffCPUTotals(pd)
	// OffCPUTotals keys by service.name, which is gone now: count per
	// resource by the name service_name will give.
	wantNanos, wantOff := map[string]int64{}, map[string]int64{}
	for _, rp := range pd.ResourceProfiles().All() {
		one := pprofile.NewProfiles()
		pd.Dictionary().CopyTo(one.Dictionary())
		rp.CopyTo(one.ResourceProfiles().AppendEmpty())
		n, o, _ := profilegen.OffCPUTotals(one)
		v, _ := rp.Resource().Attributes().Get("process.environment_variable.OTEL_SERVICE_NAME")
		wantNanos[v.Str()] += n[""]
		wantOff[v.Str()] += o[""]
	}
	require.Equal(t, offBefore[""], int64(600))
	require.Len(t, wantNanos, 6)
	require.Equal(t, sumOf(nanosBefore), sumOf(wantNanos))

	l := newLoadgen(agentPort)
	code, err := l.post(t.Context(), pd)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	sent = 1200

	waitAllSeq(t, srv, 1200, 90*time.Second)
	st := srv.Stats()
	require.Equal(t, int64(1200), st.SamplesAccepted)
	require.Equal(t, int64(600), st.ByType["off_cpu/nanoseconds"].Samples)
	require.Equal(t, cpuSamples, st.ByType["samples/count"].Timestamps)
	for _, r := range st.Recent {
		if r.Status == http.StatusOK {
			require.LessOrEqual(t, r.Frames, int64(maxFrames))
		}
	}
	require.GreaterOrEqual(t, st.AcceptedRequests, 76_800/maxFrames, "the frame limit split the batch")
	for name, want := range wantNanos {
		got := st.Services[name].ByType["off_cpu/nanoseconds"]
		require.Equal(t, want, got.Values, "%s: off-CPU nanoseconds at the double", name)
		require.Equal(t, wantOff[name], got.Samples, "%s: off-CPU samples at the double", name)
	}

	var got map[string]float64
	testenv.WaitFor(t, 30*time.Second, "the connector's profile.off_cpu.time of every service to reach what was sent", func() (bool, error) {
		var err error
		got, err = readOffCPUTime(metricsPath)
		if err != nil {
			return false, err
		}
		for name, want := range wantNanos {
			if math.Abs(got[name]-float64(want)/1e9) > 1e-6 {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("e2e off-cpu-through-gateway: %d requests at the double (max_frames %d); off-CPU per service: sent (ns) %v, connector profile.off_cpu.time (s) %v", st.AcceptedRequests, maxFrames, wantNanos, got)
}

func sumOf(m map[string]int64) int64 {
	var s int64
	for _, v := range m {
		s += v
	}
	return s
}

// readOffCPUTime returns the last cumulative profile.off_cpu.time per
// service.name of a file exporter's metrics output.
func readOffCPUTime(path string) (map[string]float64, error) {
	out := map[string]float64{}
	err := testenv.ReadMetricLines(path, func(md pmetric.Metrics) {
		for _, rm := range md.ResourceMetrics().All() {
			svc, _ := rm.Resource().Attributes().Get("service.name")
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Name() != "profile.off_cpu.time" || m.Type() != pmetric.MetricTypeSum {
						continue
					}
					for _, dp := range m.Sum().DataPoints().All() {
						out[svc.AsString()] = math.Max(out[svc.AsString()], dp.DoubleValue())
					}
				}
			}
		}
	})
	return out, err
}
