package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.yaml.in/yaml/v3"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

var recipeBlock = regexp.MustCompile("(?s)<!-- recipe: ([a-z0-9-]+) -->\\s*```yaml\\n(.*?)```")

// recipes returns the YAML blocks of docs/configure.md marked
// `<!-- recipe: name -->`, parsed, by name.
func recipes(t *testing.T) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "configure.md"))
	require.NoError(t, err)
	out := map[string]map[string]any{}
	for _, m := range recipeBlock.FindAllStringSubmatch(string(data), -1) {
		var y map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(m[2]), &y), "recipe %s", m[1])
		out[m[1]] = y
	}
	for _, name := range []string{"filter-namespace", "filter-executable", "transform-environment", "signal-to-metrics-count"} {
		require.Contains(t, out, name, "docs/configure.md lost the recipe %s", name)
	}
	return out
}

// recipeComponent returns the one component a recipe defines under section,
// and its id.
func recipeComponent(t *testing.T, r map[string]any, section string) (string, any) {
	t.Helper()
	comps, ok := r[section].(map[string]any)
	require.True(t, ok, "recipe has no %s: %v", section, r)
	require.Len(t, comps, 1)
	for id, c := range comps {
		return id, c
	}
	return "", nil
}

// withValue returns the recipe's component with its example value old
// replaced by new (the recipe must hold old: the test follows the README).
func withValue(t *testing.T, c any, old, new string) any {
	t.Helper()
	b, err := yaml.Marshal(c)
	require.NoError(t, err)
	require.Contains(t, string(b), old)
	var out any
	require.NoError(t, yaml.Unmarshal([]byte(strings.ReplaceAll(string(b), old, new)), &out))
	return out
}

// TestRecipes runs the recipes of docs/configure.md as written in the
// built binary: OTLP in, the filters, the transform and signal_to_metrics,
// file exporters out. Exactly the namespace's and the executable's
// profiles are dropped, every other one arrives with
// deployment.environment.name, and profile.count counts them per service.
func TestRecipes(t *testing.T) {
	t.Parallel() // see main_test.go
	rs := recipes(t)
	nsID, ns := recipeComponent(t, rs["filter-namespace"], "processors")
	exeID, exe := recipeComponent(t, rs["filter-executable"], "processors")
	trID, tr := recipeComponent(t, rs["transform-environment"], "processors")
	stmID, stm := recipeComponent(t, rs["signal-to-metrics-count"], "connectors")

	dir := t.TempDir()
	profilesPath := filepath.Join(dir, "profiles.jsonl")
	metricsPath := filepath.Join(dir, "metrics.jsonl")
	port := testenv.FreePort(t)
	cfg := map[string]any{
		"receivers":  map[string]any{"otlp": map[string]any{"protocols": map[string]any{"http": map[string]any{"endpoint": fmt.Sprintf("127.0.0.1:%d", port)}}}},
		"processors": map[string]any{nsID: ns, exeID: exe, trID: tr},
		"connectors": map[string]any{stmID: stm},
		"exporters": map[string]any{
			"file/profiles": map[string]any{"path": profilesPath},
			"file/metrics":  map[string]any{"path": metricsPath},
		},
		"service": map[string]any{
			"telemetry": map[string]any{"metrics": map[string]any{"level": "none"}},
			"pipelines": map[string]any{
				"profiles": map[string]any{"receivers": []string{"otlp"}, "processors": []string{nsID, exeID, trID}, "exporters": []string{"file/profiles", stmID}},
				"metrics":  map[string]any{"receivers": []string{stmID}, "exporters": []string{"file/metrics"}},
			},
		},
	}
	b, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	config := writeFile(t, dir, "collector.yaml", string(b))
	testenv.StartCollector(t, config, testenv.CollectorOptions{})

	// Five processes: two of cart, one of search, one in the dropped
	// namespace, one of the dropped executable; 20 samples each.
	type proc struct{ service, namespace, executable string }
	procs := []proc{
		{"cart", "shop", "cart"}, {"cart", "shop", "cart"}, {"search", "shop", "search"},
		{"reindex", "batch-jobs", "reindex"}, {"backup", "infra", "backup-agent"},
	}
	pd := profilegen.Generate(profilegen.Config{Samples: 100, Depth: 8, Stacks: 10, Resources: len(procs), Seed: 17})
	require.Equal(t, len(procs), pd.ResourceProfiles().Len())
	sent := map[string]int{}
	for i, p := range procs {
		rp := pd.ResourceProfiles().At(i)
		attrs := rp.Resource().Attributes()
		attrs.PutStr("service.name", p.service)
		attrs.PutStr("k8s.namespace.name", p.namespace)
		attrs.PutStr("process.executable.name", p.executable)
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				sent[p.service] += prof.Samples().Len()
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, err := newLoadgen(port).post(ctx, pd)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)

	arrived := map[string]int{}
	envs := map[string]string{}
	counts := map[string]int64{}
	testenv.WaitFor(t, 30*time.Second, "cart and search in both outputs", func() (bool, error) {
		clear(arrived)
		clear(counts)
		err := testenv.ReadProfileLines(profilesPath, func(pd pprofile.Profiles) {
			for _, rp := range pd.ResourceProfiles().All() {
				svc, _ := rp.Resource().Attributes().Get("service.name")
				env, _ := rp.Resource().Attributes().Get("deployment.environment.name")
				envs[svc.AsString()] = env.AsString()
				for _, sp := range rp.ScopeProfiles().All() {
					for _, prof := range sp.Profiles().All() {
						arrived[svc.AsString()] += prof.Samples().Len()
					}
				}
			}
		})
		if err != nil {
			return false, err
		}
		if err := testenv.ReadMetricLines(metricsPath, func(md pmetric.Metrics) {
			for _, rm := range md.ResourceMetrics().All() {
				svc, _ := rm.Resource().Attributes().Get("service.name")
				for _, sm := range rm.ScopeMetrics().All() {
					for _, m := range sm.Metrics().All() {
						if m.Name() == "profile.count" && m.Type() == pmetric.MetricTypeSum {
							for _, dp := range m.Sum().DataPoints().All() {
								counts[svc.AsString()] += dp.IntValue() + int64(dp.DoubleValue())
							}
						}
					}
				}
			}
		}); err != nil {
			return false, err
		}
		return arrived["cart"] == sent["cart"] && arrived["search"] == sent["search"] && counts["cart"] == 2 && counts["search"] == 1, nil
	})
	require.Equal(t, map[string]int{"cart": sent["cart"], "search": sent["search"]}, arrived, "exactly the namespace's and the executable's profiles are dropped")
	require.Equal(t, map[string]string{"cart": "production", "search": "production"}, envs)
	require.Equal(t, map[string]int64{"cart": 2, "search": 1}, counts, "profile.count per service")
	t.Logf("e2e recipes: sent=%v arrived=%v profile.count=%v", sent, arrived, counts)
}
