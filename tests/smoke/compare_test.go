package smoke

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

const (
	cmpFirst  = "main.nexovueCompareFirst"
	cmpSecond = "main.nexovueCompareSecond"
)

// cmpRow is a row of the compare page's "what changed" table.
type cmpRow struct {
	Fn       string `json:"fn"`
	Mark     string `json:"mark"`
	BaseSelf int64  `json:"baseSelf"`
	ThisSelf int64  `json:"thisSelf"`
}

const cmpRowsJS = `Array.from(document.querySelectorAll('#changes tr.change')).map(r => ({fn: r.dataset.function, mark: r.dataset.mark, baseSelf: +r.dataset.baseSelf, thisSelf: +r.dataset.thisSelf}))`

// The boxes of the diff flame graph in the compare page's frame: their text,
// and whether pprof drew them grown (positive) or shrunk (negative).
const cmpBoxesJS = `(() => { const f = document.querySelector('#diff'); const d = f && f.contentDocument; if (!d) return []; return Array.from(d.querySelectorAll('#stack-chart .boxbg')).map(e => ({text: e.innerText, pos: !!e.querySelector('.positive'), neg: !!e.querySelector('.negative')})); })()`

type cmpBox struct {
	Text string `json:"text"`
	Pos  bool   `json:"pos"`
	Neg  bool   `json:"neg"`
}

func rowOf(rows []cmpRow, fn string) (cmpRow, bool) {
	for _, r := range rows {
		if r.Fn == fn {
			return r, true
		}
	}
	return cmpRow{}, false
}

// TestCompareInBrowser: the eBPF profiler, service_name, the nexovue
// exporter to the ingest double and the profile view (window 2m) while
// compareburner burns in main.nexovueCompareFirst, sleeps 6 s (longer than
// a time slot of the view, 4 s) and burns in main.nexovueCompareSecond; and
// two more of it as one service in two versions
// (OTEL_RESOURCE_ATTRIBUTES=service.version=v1 burning in the first
// function, v2 in the second). In chromium, comparing the second half with
// the first (the split in the middle of the sleep) marks the second
// function new and the first gone in the table, and pprof's diff flame graph
// draws the second grown and the first shrunk; with normalize=0 the table's
// absolute samples of each are exactly the double's (the view and the double
// get the same batches, so there is no sampling error between them). The
// index's version link compares v2 with v1: v2's own function is new. A
// malformed query and an empty side get 400 with the reason, and the view
// still serves.
func TestCompareInBrowser(t *testing.T) {
	t.Parallel() // all but TestViewInBrowser, see there
	testenv.RequireTracefs(t)
	ctx := browser(t)
	dir := artifacts(t)
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{"nxv-compare-key"}})
	viewAddr := testenv.FreeAddr(t)
	halvesSvc := fmt.Sprintf("nxv-cmp-halves-%d", os.Getpid())
	versionSvc := fmt.Sprintf("nxv-cmp-version-%d", os.Getpid())
	burner := testenv.BuildGo(t, "testdata/compareburner", "compareburner")
	config := filepath.Join(t.TempDir(), "compare.yaml")
	require.NoError(t, os.WriteFile(config, []byte(`
receivers:
  profiling:
    samples_per_second: 19
    reporter_interval: 2s
processors:
  service_name: {}
exporters:
  nexovue:
    endpoint: `+srv.URL()+`
    key: ${env:NEXOVUE_KEY}
  profileview:
    endpoint: `+viewAddr+`
    window: 2m
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [profiling]
      processors: [service_name]
      exporters: [nexovue, profileview]
`), 0o600))
	testenv.StartCollector(t, config, testenv.CollectorOptions{EBPF: true, Env: []string{"NEXOVUE_KEY=nxv-compare-key"}})
	view := "http://" + viewAddr + "/"
	get := func(u string) (int, string) {
		resp, err := http.Get(u)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testenv.WaitFor(t, 30*time.Second, "the profile view's index", func() (bool, error) {
		resp, err := http.Get(view)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})

	halves := testenv.Start(t, []string{"OTEL_SERVICE_NAME=" + halvesSvc}, burner)
	testenv.Start(t, []string{"OTEL_SERVICE_NAME=" + versionSvc, "OTEL_RESOURCE_ATTRIBUTES=service.version=v1", "BURN_MODE=first"}, burner)
	testenv.Start(t, []string{"OTEL_SERVICE_NAME=" + versionSvc, "OTEL_RESOURCE_ATTRIBUTES=service.version=v2", "BURN_MODE=second"}, burner)

	marks := map[string]time.Time{}
	testenv.WaitFor(t, 120*time.Second, "compareburner's two phases", func() (bool, error) {
		if done, err := halves.Exited(); done {
			return false, fmt.Errorf("compareburner exited (%v):\n%s", err, halves.Output())
		}
		for _, l := range strings.Split(halves.Output(), "\n") {
			if what, at, ok := strings.Cut(l, " "); ok {
				if ts, err := time.Parse(time.RFC3339Nano, at); err == nil {
					marks[what] = ts
				}
			}
		}
		_, done := marks["done"]
		return done, nil
	})
	// The split: the middle of the sleep between the phases.
	split := marks["gap"].Add(marks["second"].Sub(marks["gap"]) / 2).UTC()
	q := url.Values{"service": {halvesSvc}, "type": {"samples_count"},
		"from":      {split.Format(time.RFC3339Nano)},
		"base.from": {marks["first"].Add(-5 * time.Second).UTC().Format(time.RFC3339Nano)}, "base.to": {split.Format(time.RFC3339Nano)}}
	compareURL := view + "compare?" + q.Encode()

	// The view and the double agree once the last batch arrived at both:
	// the samples of both sides (the base from before the program started,
	// this side open to now) are the samples the double took of the
	// service, exactly: both get the same batches.
	var why string
	testenv.LastSeen(t, &why)
	abs := compareURL + "&normalize=0"
	sideRE := regexp.MustCompile(`<span id="this-samples">(\d+)</span>.*<span id="base-samples">(\d+)</span>`)
	testenv.WaitFor(t, 30*time.Second, "the view's samples of both sides equal to the double's, the first function gone and the second new", func() (bool, error) {
		code, body := get(abs)
		if code != http.StatusOK {
			why = fmt.Sprintf("%d %s", code, body)
			return false, nil
		}
		taken := srv.Stats().Services[halvesSvc].ByType["samples/count"].Taken
		m := sideRE.FindStringSubmatch(body)
		if m == nil {
			return false, fmt.Errorf("no sample counts in the compare page:\n%s", body)
		}
		this, _ := strconv.ParseInt(m[1], 10, 64)
		base, _ := strconv.ParseInt(m[2], 10, 64)
		first := regexp.MustCompile(`data-function="` + cmpFirst + `" data-mark="gone" data-base-self="[1-9]\d*" data-this-self="0"`)
		second := regexp.MustCompile(`data-function="` + cmpSecond + `" data-mark="new" data-base-self="0" data-this-self="[1-9]\d*"`)
		why = fmt.Sprintf("double took %d samples of %s, the view %d (this) + %d (base); page:\n%s", taken, halvesSvc, this, base, body)
		return taken > 0 && this+base == taken && first.MatchString(body) && second.MatchString(body), nil
	})
	t.Logf("compare: %s", why[:strings.Index(why, ";")])

	// In chromium: the table and pprof's diff flame graph.
	c, cancel := within(ctx, 60*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(c, chromedp.Navigate(compareURL), chromedp.WaitVisible(chromedp.CSS(`#changes tr.change`))))
	rows, err := chromedp.Run(c, chromedp.Evaluate[[]cmpRow](cmpRowsJS))
	require.NoError(t, err)
	f, ok := rowOf(rows, cmpFirst)
	require.True(t, ok && f.Mark == "gone" && f.BaseSelf > 0, "%s gone in %+v", cmpFirst, rows)
	s, ok := rowOf(rows, cmpSecond)
	require.True(t, ok && s.Mark == "new" && s.ThisSelf > 0, "%s new in %+v", cmpSecond, rows)
	var boxes []cmpBox
	testenv.WaitFor(t, 30*time.Second, "the diff flame graph with both functions", func() (bool, error) {
		var err error
		if boxes, err = chromedp.Run(c, chromedp.Evaluate[[]cmpBox](cmpBoxesJS)); err != nil {
			return false, err
		}
		why = fmt.Sprintf("boxes: %+v", boxes)
		var grown, shrunk bool
		for _, b := range boxes {
			grown = grown || strings.Contains(b.Text, "nexovueCompareSecond") && b.Pos && !b.Neg
			shrunk = shrunk || strings.Contains(b.Text, "nexovueCompareFirst") && b.Neg && !b.Pos
		}
		return grown && shrunk, nil
	})
	png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	shot := filepath.Join(dir, "compare.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot of the comparison: %s (%s %d → %d samples, %s %d → %d)", shot, cmpFirst, f.BaseSelf, f.ThisSelf, cmpSecond, s.BaseSelf, s.ThisSelf)

	// The index's version link: v2 against v1.
	link := fmt.Sprintf(`tr.service[data-service=%q] span.type[data-type="samples_count"] a.compare-version[data-version="v2"]`, versionSvc)
	testenv.WaitFor(t, 30*time.Second, "the index's link comparing v2 with v1", func() (bool, error) {
		code, body := get(view)
		why = body
		return code == http.StatusOK && strings.Contains(body, `data-base-version="v1"`), nil
	})
	require.NoError(t, chromedp.Do(c, chromedp.Navigate(view), chromedp.Click(chromedp.CSS(link)), chromedp.WaitVisible(chromedp.CSS(`#changes tr.change`))))
	rows, err = chromedp.Run(c, chromedp.Evaluate[[]cmpRow](cmpRowsJS))
	require.NoError(t, err)
	s, ok = rowOf(rows, cmpSecond)
	require.True(t, ok && s.Mark == "new", "v2's %s new against v1 in %+v", cmpSecond, rows)
	f, ok = rowOf(rows, cmpFirst)
	require.True(t, ok && f.Mark == "gone", "v1's %s gone in v2 in %+v", cmpFirst, rows)
	png, err = chromedp.Run(c, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "compare-versions.png"), png, 0o644))

	// Bad input: the reason, and the view goes on.
	code, body := get(view + "compare?service=" + url.QueryEscape(halvesSvc) + "&type=samples_count&base.from=yesterday")
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, `base.from: "yesterday" is not an RFC 3339 time`)
	code, body = get(view + "compare?service=" + url.QueryEscape(halvesSvc) + "&type=samples_count&base.service.version=v0")
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "base: no samples_count profile of service")
	code, body = get(view)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, halvesSvc)
}
