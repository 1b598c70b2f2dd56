package smoke

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// browser starts Debian's chromium, headless (no sandbox: the tests run as
// root), for the test. Without chromium the test fails and says what
// installs it: it never skips.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (%v): `make prereqs` (internal/buildtools/prereqs.sh) installs Debian's chromium, which the profile view's browser tests drive", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1400, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// Start it now, without a timeout (it would stop the browser): a browser
	// that cannot start fails here, with its reason.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium (%s) did not start: %v", path, err)
	}
	return ctx
}

// within bounds one step in the browser.
func within(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// firstService loads the index in the browser and returns the first row's
// service and the whole table's text (for failure messages).
func firstService(ctx context.Context, url string) (first, table string, err error) {
	c, cancel := within(ctx, 30*time.Second)
	defer cancel()
	if err = chromedp.Do(c, chromedp.Navigate(url)); err != nil {
		return "", "", err
	}
	if first, err = chromedp.Run(c, chromedp.Evaluate[string](`(() => { const r = document.querySelector('tr.service'); return r ? r.dataset.service : ''; })()`)); err != nil {
		return "", "", err
	}
	table, err = chromedp.Run(c, chromedp.Evaluate[string](`(document.querySelector('#services') || document.body).innerText`))
	return first, table, err
}

// flameGraphHas opens the flame graph of service and profile type (the
// index's own link) and reports whether a node of the rendered graph (a box
// pprof's script drew, not the HTML source) names fn; it saves a screenshot.
// An index without that link yet (the type has not arrived) is a "not yet"
// at once: waiting in the browser for the link to appear would not see a
// later index, only time out.
func flameGraphHas(t *testing.T, ctx context.Context, index, service, ptype, fn, shot string) (bool, string) {
	css := fmt.Sprintf(`tr.service[data-service=%q] span.type[data-type=%q] a.flamegraph`, service, ptype)
	sel := chromedp.CSS(css)
	c, cancel := within(ctx, 60*time.Second)
	defer cancel()
	var href string
	nodes, err := func() ([]string, error) {
		if err := chromedp.Do(c, chromedp.Navigate(index)); err != nil {
			return nil, err
		}
		var err error
		href, err = chromedp.Run(c, chromedp.Evaluate[string](fmt.Sprintf(`(() => { const a = document.querySelector(%q); return a ? a.getAttribute('href') : ''; })()`, css)))
		if err != nil || href == "" {
			return nil, err
		}
		if err := chromedp.Do(c, chromedp.Click(sel), chromedp.WaitVisible(chromedp.CSS(`#stack-chart .boxbg`))); err != nil {
			return nil, err
		}
		return chromedp.Run(c, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#stack-chart .boxbg')).map(e => e.innerText)`))
	}()
	if err != nil {
		return false, fmt.Sprintf("flame graph of %s %s (%s): %v", service, ptype, href, err)
	}
	if href == "" {
		return false, fmt.Sprintf("the index has no %s flame graph link for %s yet", ptype, service)
	}
	for _, n := range nodes {
		if strings.Contains(n, fn) {
			png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(shot, png, 0o644))
			t.Logf("screenshot of the flame graph: %s", shot)
			return true, ""
		}
	}
	if len(nodes) > 30 {
		nodes = nodes[:30]
	}
	return false, fmt.Sprintf("nodes of %s: %q", href, nodes)
}

// artifacts is where the browser tests keep their screenshots and downloads.
func artifacts(t *testing.T) string { return testenv.Artifacts(t) }

// pprofTop downloads the selection and returns `go tool pprof -top`'s first
// function row.
func pprofTop(t *testing.T, url, file string, flags ...string) (string, string) {
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "download %s", url)
	f, err := os.Create(file)
	require.NoError(t, err)
	_, err = f.ReadFrom(resp.Body)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	out, err := exec.Command("go", append(append([]string{"tool", "pprof", "-top"}, flags...), file)...).CombinedOutput()
	require.NoError(t, err, "go tool pprof -top %s:\n%s", file, out)
	// The rows follow the header line "flat  flat%   sum%        cum   cum%".
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if strings.Contains(l, "flat%") && i+1 < len(lines) {
			fields := strings.Fields(lines[i+1])
			if len(fields) > 0 {
				return fields[len(fields)-1], string(out)
			}
		}
	}
	return "", string(out)
}

// TestViewInBrowser: `make run` without a key (its script, the shipped agent
// configuration with the view) while a program burns CPU in
// main.nexovueSmokeHotLoop. The script's first line is the page's URL; in
// chromium the index lists the program's service first, its on-CPU flame
// graph has the hot function as a node, and the downloaded file's
// `go tool pprof -top` has it first. It logs the time from the script's
// start to that flame graph. It is the package's one test that does not
// call t.Parallel: go test runs it first and alone, since its service must
// be the busiest on the host (the others' programs would compete).
func TestViewInBrowser(t *testing.T) {
	testenv.RequireTracefs(t)
	ctx := browser(t)
	dir := artifacts(t)
	script := filepath.Join(testenv.RepoRoot(t), "internal", "buildtools", "run-local.sh")
	service := fmt.Sprintf("nxv-view-%d", os.Getpid())
	burner := testenv.BuildGo(t, "testdata/smokeburner", "smokeburner")
	// On every CPU: the index must list it first on a machine other work
	// also keeps busy.
	testenv.Start(t, []string{"OTEL_SERVICE_NAME=" + service, "BURN_THREADS=" + strconv.Itoa(runtime.NumCPU())}, burner, "300")

	env, _ := runLocalEnv(t, testenv.FreeAddr(t))
	start := time.Now()
	runLocal := testenv.Start(t, env, script)
	var url string
	testenv.WaitFor(t, 60*time.Second, "the profile view's URL from run-local.sh", func() (bool, error) {
		out := runLocal.Output()
		if done, err := runLocal.Exited(); done {
			return false, fmt.Errorf("run-local.sh exited (%v):\n%s", err, out)
		}
		first, _, ok := strings.Cut(out, "\n")
		if !ok {
			return false, nil
		}
		m := regexp.MustCompile(`^Profile view: (http://\S+/)`).FindStringSubmatch(first)
		if m == nil {
			return false, fmt.Errorf("run-local.sh's first line is not the view's URL:\n%s", out)
		}
		url = m[1]
		return true, nil
	})

	var table, why string
	testenv.LastSeen(t, &why)
	var firstAt time.Duration
	testenv.WaitFor(t, 150*time.Second, service+" first in the view's index, with its flame graph naming main.nexovueSmokeHotLoop", func() (bool, error) {
		if done, err := runLocal.Exited(); done {
			return false, fmt.Errorf("run-local.sh exited (%v):\n%s", err, runLocal.Output())
		}
		var first string
		var err error
		first, table, err = firstService(ctx, url)
		if err != nil || first != service {
			why = fmt.Sprintf("first service %q (err %v); index:\n%s", first, err, table)
			return false, nil
		}
		if firstAt == 0 {
			firstAt = time.Since(start)
			t.Logf("view: %s first in the index %s after run-local.sh's start", service, firstAt.Round(100*time.Millisecond))
		}
		var ok bool
		ok, why = flameGraphHas(t, ctx, url, service, "samples_count", "nexovueSmokeHotLoop", filepath.Join(dir, "flamegraph.png"))
		return ok, nil
	})
	t.Logf("view: %s from run-local.sh's start to the flame graph with main.nexovueSmokeHotLoop in chromium", time.Since(start).Round(100*time.Millisecond))

	top, out := pprofTop(t, url+"download?service="+service+"&type=samples_count", filepath.Join(dir, "profile.pb.gz"))
	require.Equal(t, "main.nexovueSmokeHotLoop", top, "go tool pprof -top of the download:\n%s", out)

	require.NoError(t, syscall.Kill(-runLocal.Cmd.Process.Pid, syscall.SIGINT))
	_ = runLocal.Wait(60 * time.Second)
	require.Contains(t, runLocal.Output(), "nexovue-ingest: stopped; accepted", "the ingest double still reports what it accepted")
}

// TestViewInBrowserPprof: the shipped pprof.yaml with the view, scraping a Go
// program (net/http/pprof) that burns CPU in main.burnCPU: in chromium the
// index lists it first, its CPU flame graph has main.burnCPU as a node, and
// the download's `go tool pprof -top -show=^main\.` has it first.
func TestViewInBrowserPprof(t *testing.T) {
	t.Parallel() // all but TestViewInBrowser, see there
	ctx := browser(t)
	dir := artifacts(t)
	root := testenv.RepoRoot(t)
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{"nxv-view-key"}})
	target := testenv.StartPprofServer(t, "checkout")
	viewAddr := testenv.FreeAddr(t)
	overlay := filepath.Join(t.TempDir(), "view.yaml")
	require.NoError(t, os.WriteFile(overlay, []byte(`
receivers:
  pprof/heap:
    remote:
      collection_interval: 2s
  pprof/cpu:
    remote:
      endpoint: ${env:PPROF_BASE_URL}/profile?seconds=2
      collection_interval: 3s
exporters:
  profileview:
    endpoint: `+viewAddr+`
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      exporters: [nexovue, profileview]
`), 0o644))
	testenv.StartCollector(t, filepath.Join(root, "distributions", "otelcol-nexovue", "pprof.yaml"), testenv.CollectorOptions{
		Env:  []string{"NEXOVUE_KEY=nxv-view-key", "NEXOVUE_ENDPOINT=" + srv.URL(), "NEXOVUE_SERVICE_NAME=checkout-view", "PPROF_BASE_URL=" + target},
		Args: []string{"--config", overlay, testenv.FeatureGate},
	})
	url := "http://" + viewAddr + "/"
	var why string
	testenv.LastSeen(t, &why)
	testenv.WaitFor(t, 90*time.Second, "checkout-view first in the index, its CPU flame graph naming main.burnCPU", func() (bool, error) {
		first, table, err := firstService(ctx, url)
		if err != nil || first != "checkout-view" {
			why = fmt.Sprintf("first service %q (err %v); index:\n%s", first, err, table)
			return false, nil
		}
		var ok bool
		ok, why = flameGraphHas(t, ctx, url, "checkout-view", "cpu_nanoseconds", "main.burnCPU", filepath.Join(dir, "flamegraph.png"))
		return ok, nil
	})
	// main.burnCPU burns in sha256, which the program's frames call: with
	// -show only the program's own frames are kept, each sample then counts
	// to its innermost main.* frame.
	top, out := pprofTop(t, url+"download?service=checkout-view&type=cpu_nanoseconds", filepath.Join(dir, "profile.pb.gz"), `-show=^main\.`)
	require.Equal(t, "main.burnCPU", top, "go tool pprof -top of the download:\n%s", out)
}

// TestViewBearerToken: the built binary with the view on every interface
// behind the bearertokenauth extension (its README's lines): it warns that
// profiles reveal code paths; no token or a wrong one gets 401 and the right
// one the index.
func TestViewBearerToken(t *testing.T) {
	t.Parallel() // all but TestViewInBrowser, see there
	const token = "nxv-view-token-5b1f"
	otlpAddr, viewPort := testenv.FreeAddr(t), testenv.FreePort(t)
	config := filepath.Join(t.TempDir(), "view.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`
extensions:
  bearertokenauth/view:
    token: ${env:VIEW_TOKEN}
receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
exporters:
  profileview:
    endpoint: 0.0.0.0:%d
    auth:
      authenticator: bearertokenauth/view
service:
  extensions: [bearertokenauth/view]
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [profileview]
`, otlpAddr, viewPort)), 0o600))
	col := testenv.StartCollector(t, config, testenv.CollectorOptions{Env: []string{"VIEW_TOKEN=" + token}})
	require.Contains(t, col.Output(), "profiles reveal code paths and process details", "the warning for a non-loopback endpoint")
	require.NotContains(t, col.Output(), token, "the token reached the log")

	status := func(auth string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", viewPort), nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ := status("")
	require.Equal(t, http.StatusUnauthorized, code, "no token")
	code, _ = status("Bearer wrong")
	require.Equal(t, http.StatusUnauthorized, code, "a wrong token")
	code, body := status("Bearer " + token)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "No profiles in the window")
}
