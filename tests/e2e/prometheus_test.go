package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// A real Prometheus (Debian's prometheus package, 2.42, which make
// machine-prereqs installs) started by a test on loopback, scraping the
// built collectors and evaluating the shipped rules
// (distributions/monitoring), read through its HTTP API.

// promInterval is the test Prometheus' scrape and evaluation interval.
const promInterval = time.Second

// rulesWindow and rulesFor replace the shipped rules' ranges ([10m], [5m],
// ...) and `for:` durations in the tests (shortRules): a window of 20
// scrapes, and a `for` of 5 evaluations.
const (
	rulesWindow = "20s"
	rulesFor    = "5s"
	// rulesUptime replaces the uptime guard (otelcol_process_uptime > 600,
	// "up for longer than the window"), in seconds.
	rulesUptime = "20"
)

var (
	rangeRE  = regexp.MustCompile(`\[\d+[smh]\]`)
	forRE    = regexp.MustCompile(`(?m)^(\s+for: )\S+$`)
	uptimeRE = regexp.MustCompile(`otelcol_process_uptime > \d+`)
	alertRE  = regexp.MustCompile(`(?m)^\s+- alert: `)
)

// shortRules returns the shipped rules with every range replaced by
// rulesWindow, every `for:` by rulesFor and the uptime guard by
// rulesUptime, failing the test when one of them is missing (a rule the
// overrides would not shorten).
func shortRules(t testing.TB, text string) string {
	t.Helper()
	alerts := len(alertRE.FindAllString(text, -1))
	require.NotZero(t, alerts, "no alert in the rules")
	require.Equal(t, alerts, len(forRE.FindAllString(text, -1)), "every alert has a for: line the test shortens")
	require.NotEmpty(t, rangeRE.FindAllString(text, -1))
	require.NotEmpty(t, uptimeRE.FindAllString(text, -1))
	text = rangeRE.ReplaceAllString(text, "["+rulesWindow+"]")
	text = forRE.ReplaceAllString(text, "${1}"+rulesFor)
	return uptimeRE.ReplaceAllString(text, "otelcol_process_uptime > "+rulesUptime)
}

// startRulesPrometheus is startPrometheus with the shipped rules, shortened.
func startRulesPrometheus(t testing.TB, jobs map[string]string) *prometheus {
	t.Helper()
	return startPrometheus(t, jobs, shortRules(t, readRepoFile(t, "distributions", "monitoring", "otelcol-nexovue-rules.yaml")))
}

// stillRunning returns a check that fails once one of the named processes has
// exited, for the waits of a test.
func stillRunning(procs map[string]*testenv.Process) func() error {
	return func() error {
		for name, p := range procs {
			if ok, err := p.Exited(); ok {
				return fmt.Errorf("the %s exited (%v)", name, err)
			}
		}
		return nil
	}
}

// prometheus is a Prometheus server started by the test.
type prometheus struct {
	url  string
	proc *testenv.Process
}

// prometheusBinary is Debian's prometheus, or the test fails saying how to
// get it.
func prometheusBinary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus (the server) is not on PATH: run `make machine-prereqs` (Debian's prometheus package): %v", err)
	}
	return bin
}

// startPrometheus starts Prometheus on a free loopback port, scraping each
// job's target (host:port) every promInterval and evaluating rules (the
// text of a rules file) as often, and waits until it is ready.
func startPrometheus(t testing.TB, jobs map[string]string, rules string) *prometheus {
	t.Helper()
	bin := prometheusBinary(t)
	dir := t.TempDir()
	rulesPath := writeFile(t, dir, "rules.yaml", rules)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\nrule_files: [%q]\nscrape_configs:\n", promInterval, promInterval, rulesPath)
	names := make([]string, 0, len(jobs))
	for job := range jobs {
		names = append(names, job)
	}
	sort.Strings(names)
	for _, job := range names {
		fmt.Fprintf(&cfg, "  - job_name: %q\n    static_configs:\n      - targets: [%q]\n", job, jobs[job])
	}
	config := writeFile(t, dir, "prometheus.yml", cfg.String())
	addr := testenv.FreeAddr(t)
	p := &prometheus{url: "http://" + addr}
	p.proc = testenv.Start(t, nil, bin,
		"--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	testenv.WaitFor(t, time.Minute, "Prometheus to be ready", func() (bool, error) {
		if ok, err := p.proc.Exited(); ok {
			return false, fmt.Errorf("prometheus exited (%v):\n%s", err, p.proc.Output())
		}
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return p
}

// get decodes the data of a Prometheus API answer to path into v.
func (p *prometheus) get(path string, v any) error {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(p.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var answer struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return fmt.Errorf("%s: %v: %s", path, err, body)
	}
	if answer.Status != "success" {
		return fmt.Errorf("%s: %s: %s", path, answer.Status, answer.Error)
	}
	return json.Unmarshal(answer.Data, v)
}

// promAlert is one alert of /api/v1/alerts.
type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	ActiveAt    time.Time         `json:"activeAt"`
	Value       string            `json:"value"`
}

func (a promAlert) String() string {
	return fmt.Sprintf("%s{job=%q} %s since %s (value %s)", a.Labels["alertname"], a.Labels["job"], a.State, a.ActiveAt.Format(time.TimeOnly), a.Value)
}

// alerts returns the pending and firing alerts.
func (p *prometheus) alerts() ([]promAlert, error) {
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	err := p.get("/api/v1/alerts", &data)
	return data.Alerts, err
}

// query returns the samples of an instant query, as their labels and value.
func (p *prometheus) query(expr string) ([]promSample, error) {
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.get("/api/v1/query?query="+url.QueryEscape(expr), &data); err != nil {
		return nil, err
	}
	out := make([]promSample, len(data.Result))
	for i, r := range data.Result {
		out[i] = promSample{Labels: r.Metric, Value: fmt.Sprint(r.Value[1])}
	}
	return out, nil
}

type promSample struct {
	Labels map[string]string
	Value  string
}

// lastEvaluation returns when Prometheus last evaluated the rule groups (the
// earliest of the groups' last evaluations).
func (p *prometheus) lastEvaluation() (time.Time, error) {
	var data struct {
		Groups []struct {
			LastEvaluation time.Time `json:"lastEvaluation"`
		} `json:"groups"`
	}
	if err := p.get("/api/v1/rules", &data); err != nil {
		return time.Time{}, err
	}
	if len(data.Groups) == 0 {
		return time.Time{}, fmt.Errorf("no rule group loaded")
	}
	last := data.Groups[0].LastEvaluation
	for _, g := range data.Groups[1:] {
		if g.LastEvaluation.Before(last) {
			last = g.LastEvaluation
		}
	}
	return last, nil
}

// scrapeText returns what a collector serves on its metrics endpoint addr.
func scrapeText(addr string) (string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s/metrics: %s", addr, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// metricNames adds the names of the samples in a Prometheus text
// exposition to names.
func metricNames(text string, names map[string]bool) {
	for _, l := range strings.Split(text, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if i := strings.IndexAny(l, "{ "); i > 0 {
			names[l[:i]] = true
		}
	}
}

// readRepoFile returns a file of the repository.
func readRepoFile(t testing.TB, rel ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{testenv.RepoRoot(t)}, rel...)...))
	require.NoError(t, err)
	return string(b)
}
