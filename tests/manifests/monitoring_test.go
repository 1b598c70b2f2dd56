package manifests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/nexovue/otelcol-nexovue/internal/doctest"
)

// runbookURL is where every alert's runbook_url points, plus its anchor.
const runbookURL = "https://github.com/nexovue/otelcol-nexovue/blob/main/docs/runbook.md#"

// ruleGroups is a Prometheus rules file.
type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// promtool is Debian's promtool, or the test fails saying how to get it.
func promtool(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not on PATH: run `make machine-prereqs` (Debian's prometheus package): %v", err)
	}
	return bin
}

// checkRules runs `promtool check rules` on a file.
func checkRules(t *testing.T, path string) {
	t.Helper()
	out, err := exec.Command(promtool(t), "check", "rules", path).CombinedOutput()
	require.NoError(t, err, "promtool check rules %s:\n%s", path, out)
	require.Contains(t, string(out), "SUCCESS", "promtool check rules %s:\n%s", path, out)
}

// TestAlertRules checks the shipped rules file: promtool accepts it, and
// every alert has a severity, a summary, a description and a runbook_url
// into its own section of docs/runbook.md, which has a section for no
// other alert.
func TestAlertRules(t *testing.T) {
	path := repoPath(t, "distributions", "monitoring", "otelcol-nexovue-rules.yaml")
	checkRules(t, path)

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var rules ruleGroups
	require.NoError(t, yaml.UnmarshalStrict(data, &rules))
	runbook, err := os.ReadFile(repoPath(t, "docs", "runbook.md"))
	require.NoError(t, err)
	anchors := doctest.Anchors(string(runbook))

	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "group %s: only alerts here (record: %q)", g.Name, r.Record)
			require.False(t, alerts[r.Alert], "alert %s twice", r.Alert)
			alerts[r.Alert] = true
			require.Contains(t, []string{"warning", "critical"}, r.Labels["severity"], "%s: severity", r.Alert)
			for _, a := range []string{"summary", "description"} {
				require.NotEmpty(t, strings.TrimSpace(r.Annotations[a]), "%s: %s", r.Alert, a)
			}
			anchor := strings.ToLower(r.Alert)
			require.Equal(t, runbookURL+anchor, r.Annotations["runbook_url"], "%s: runbook_url", r.Alert)
			require.True(t, anchors[anchor], "%s: docs/runbook.md has no section ## %s", r.Alert, r.Alert)
		}
	}
	require.GreaterOrEqual(t, len(alerts), 10)
	for _, l := range strings.Split(string(runbook), "\n") {
		if name, ok := strings.CutPrefix(l, "## Nexovue"); ok {
			require.True(t, alerts["Nexovue"+name], "docs/runbook.md has a section for Nexovue%s, which no rule names", name)
		}
	}
}

// TestDashboard checks the shipped Grafana dashboard: JSON with a
// Prometheus data source variable, every panel's query valid PromQL (each
// made a recording rule that promtool checks, with Grafana's variables
// replaced) and on that data source. tests/e2e's
// TestAlertsFireWithPrometheus runs the queries against the built
// collectors.
func TestDashboard(t *testing.T) {
	data, err := os.ReadFile(repoPath(t, "distributions", "monitoring", "otelcol-nexovue-dashboard.json"))
	require.NoError(t, err)
	var dash struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource *struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &dash))
	require.NotEmpty(t, dash.UID)
	require.NotEmpty(t, dash.Title)
	vars := map[string]string{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = v.Type
	}
	require.Equal(t, "datasource", vars["datasource"], "a data source variable, so that the dashboard imports anywhere")

	var recording strings.Builder
	recording.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotNil(t, p.Datasource, "panel %q: data source", p.Title)
		require.Equal(t, "${datasource}", p.Datasource.UID, "panel %q: data source", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q: no query", p.Title)
		for _, tg := range p.Targets {
			expr := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*", "$instance", ".*").Replace(tg.Expr)
			require.NotContains(t, expr, "$", "panel %q: a variable the test does not know: %s", p.Title, tg.Expr)
			n++
			q, err := json.Marshal(expr)
			require.NoError(t, err)
			fmt.Fprintf(&recording, "      - record: dashboard:panel_%d\n        expr: %s\n", n, q)
		}
	}
	require.GreaterOrEqual(t, n, 10)
	path := filepath.Join(t.TempDir(), "panels.yaml")
	require.NoError(t, os.WriteFile(path, []byte(recording.String()), 0o644))
	checkRules(t, path)
}
