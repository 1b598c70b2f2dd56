//go:build bench

package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// profileMetrics: the shipped agent.yaml as shipped and with its optional
// metrics pipeline turned on (the profile_metrics connector), alternating
// in pairs in the same run; the metrics go to a loopback OTLP/HTTP server
// that answers 200.
func (h *harness) profileMetrics(t *testing.T, s *Section) {
	p := h.p
	snk := startSink(t, 0)
	var metricsRequests atomic.Int64
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		metricsRequests.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(otlp.Close)
	shipped, err := os.ReadFile(h.shippedAgent())
	if err != nil {
		t.Fatal(err)
	}
	on, blocks := testenv.EnableMetricsBlocks(string(shipped))
	if blocks != 3 {
		t.Fatalf("agent.yaml has %d metrics blocks, want 3", blocks)
	}
	withMetrics := writeConfig(t, "agent-metrics.yaml", strings.Replace(on, "interval: 60s", "interval: 10s", 1))
	busy := h.startBusy(t, h.pmPlanned(), func(i int) string { return fmt.Sprintf("bench-pm-%d", i) })
	var runs Runs
	for _, connector := range ABBA(2 * p.pmReps) { // true: with the connector
		cfg := h.shippedAgent()
		if connector {
			cfg = withMetrics
		}
		agent := h.startOurs(t, cfg, snk, "NEXOVUE_METRICS_OTLP_ENDPOINT="+otlp.URL)
		time.Sleep(p.pmWarmup)
		c0, cpu0, t0 := snk.counters(), collectorCPU(t, agent), time.Now()
		time.Sleep(p.pmWindow)
		c1, cpu1, t1 := snk.counters(), collectorCPU(t, agent), time.Now()
		agent.Stop(20 * time.Second)
		mins := t1.Sub(t0).Minutes()
		runs.Add(connector, map[string]float64{
			"cpu":      (cpu1 - cpu0).Seconds() / mins,
			"cpu/ksmp": 1e6 * (cpu1 - cpu0).Seconds() / max(float64(c1.taken-c0.taken), 1),
		})
		busy.alive(t)
	}
	if metricsRequests.Load() == 0 {
		t.Fatal("the agent with the connector sent no metrics")
	}
	cpuRatio, perSample := runs.Ratio("cpu"), runs.Ratio("cpu/ksmp")
	s.Text = append(s.Text, fmt.Sprintf(
		"The shipped `agent.yaml` against the same file with its optional metrics pipeline uncommented (a second profiles pipeline profiling → memory_limiter → service_name → profile_metrics, interval 10 s, metrics over OTLP/HTTP to a loopback server), %d busy processes, runs alternating in pairs (with, without, without, with, ...; %s warm-up, %s window).",
		p.busyProcs, p.pmWarmup, p.pmWindow))
	tab := Table{Header: []string{"agent", "CPU s per minute", "CPU ms per 1,000 timestamps", "runs (CPU s/min)"}}
	for _, connector := range []bool{true, false} {
		name := "shipped agent.yaml"
		if connector {
			name = "with the metrics pipeline"
		}
		tab.Rows = append(tab.Rows, []string{name, WithSpread(Summarize(runs.Of(connector, "cpu")), ""), WithSpread(Summarize(runs.Of(connector, "cpu/ksmp")), ""), Reps(runs.Of(connector, "cpu"), Num)})
	}
	tab.Rows = append(tab.Rows, []string{"**with / without**", "**" + WithSpread(cpuRatio, "×") + "**", WithSpread(perSample, "×"), ""})
	s.Tables = append(s.Tables, tab)
}
