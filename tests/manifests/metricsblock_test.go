package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// TestMetricsBlocks: the agent and gateway configs carry the optional
// metrics pipeline as three commented blocks (the chart, whose ConfigMaps
// hold no comments, turns it on with agent.config:
// ci/profile-metrics-values.yaml, TestChartRenderedObjects); as
// shipped it is off; uncommented as the comment says, the config validates
// and has profiling (or otlp) -> profile_metrics -> otlp_http/metrics next to
// the unchanged pipeline to nexovue.
func TestMetricsBlocks(t *testing.T) {
	bin := testenv.Binary(t)
	type source struct{ name, text string }
	var sources []source
	for _, f := range []string{"agent.yaml", "gateway.yaml"} {
		sources = append(sources, source{"distributions/otelcol-nexovue/" + f, string(mustRead(t, repoPath(t, "distributions", "otelcol-nexovue", f)))})
	}
	env := cleanEnv("NEXOVUE_KEY="+validateKey, nodeNameEnv+"=validate-node", "NEXOVUE_METRICS_OTLP_ENDPOINT=https://otlp.example.com:4318")
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			shipped := parseConfig(t, src.name, []byte(src.text))
			if get(shipped, "connectors") != nil || get(shipped, "service", "pipelines", "metrics") != nil {
				t.Fatal("the metrics pipeline must be off as shipped")
			}
			text, blocks := testenv.EnableMetricsBlocks(src.text)
			if blocks != 3 {
				t.Fatalf("%d metrics blocks, want 3 (connectors, exporters, pipelines)", blocks)
			}
			checkMetricsPipelines(t, parseConfig(t, src.name+" (metrics on)", []byte(text)))
			p := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := validate(t, bin, p, env, testenv.FeatureGate); err != nil {
				t.Fatalf("validate with the metrics pipeline on: %v\n%s", err, out)
			}
			// Without the endpoint the exporter refuses to validate: the
			// variable the comment names is needed.
			if out, err := validate(t, bin, p, cleanEnv("NEXOVUE_KEY="+validateKey, nodeNameEnv+"=validate-node"), testenv.FeatureGate); err == nil {
				t.Errorf("validate without NEXOVUE_METRICS_OTLP_ENDPOINT passed:\n%s", out)
			}
		})
	}
}

// checkMetricsPipelines: the config has profiles -> profile_metrics ->
// otlp_http/metrics from the profiles pipeline's receivers, next to the
// unchanged pipeline to nexovue.
func checkMetricsPipelines(t *testing.T, on map[string]any) {
	t.Helper()
	if got := strs(get(on, "service", "pipelines", "profiles/metrics", "exporters")); !slices.Equal(got, []string{"profile_metrics"}) {
		t.Errorf("profiles/metrics exporters %v", got)
	}
	if got := strs(get(on, "service", "pipelines", "metrics", "receivers")); !slices.Equal(got, []string{"profile_metrics"}) {
		t.Errorf("metrics receivers %v", got)
	}
	if got := strs(get(on, "service", "pipelines", "metrics", "exporters")); !slices.Equal(got, []string{"otlp_http/metrics"}) {
		t.Errorf("metrics exporters %v", got)
	}
	if got := strs(get(on, "service", "pipelines", "profiles", "exporters")); !slices.Equal(got, []string{"nexovue"}) {
		t.Errorf("the pipeline to nexovue changed: exporters %v", got)
	}
	if got := strs(get(on, "service", "pipelines", "profiles/metrics", "receivers")); !slices.Equal(got, strs(get(on, "service", "pipelines", "profiles", "receivers"))) {
		t.Errorf("profiles/metrics receivers %v, want the profiles pipeline's", got)
	}
}
