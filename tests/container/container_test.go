// Package container tests the container image end to end with podman: it
// builds the image with `make image-only`, checks what the image holds, then
// runs the docs' `docker run` command as printed (podman is
// docker-compatible), with our image and a profiler.yaml in the current
// folder that is the shipped agent config pointed at the ingest double on
// loopback, and asserts that a host process's profiles arrive under its
// OTEL_SERVICE_NAME. No launcher: the image's own entrypoint.
package container

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

const (
	serviceName = "container-check"
	ingestKey   = "container-test-key-0123456789"
	// firstProfileTimeout bounds the wait from `podman run` to the service's
	// first accepted profile.
	firstProfileTimeout = 100 * time.Second
)

// podmanArgs are the settings this machine needs on every `podman run`:
// crun rejects its hybrid cgroup layout, and its hard limits are below
// podman's default ulimits. --network=host lets the container reach the
// ingest double, which listens on loopback only (as every network test of
// this project does).
var podmanArgs = []string{"--runtime", "runc", "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768", "--network=host"}

func podman(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("podman")
	if err != nil {
		t.Fatalf("podman is missing (%v): install Debian's podman and runc (apt-get install -y podman runc)", err)
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Fatalf("runc is missing (%v): apt-get install -y runc", err)
	}
	return p
}

// run runs a command and returns its standard output, failing the test with
// its standard error on error.
func run(t *testing.T, ctx context.Context, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// imageInfo is what the test reads from `podman image inspect`.
type imageInfo struct {
	Size   int64
	Config struct {
		Entrypoint []string
		Cmd        []string
		Labels     map[string]string
	}
}

func TestContainerImageProfilesHost(t *testing.T) {
	pm := podman(t)
	bin := testenv.Binary(t)
	requireDebugfs(t)
	root := testenv.RepoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The image, built the way `make image` builds it, from the binary under test.
	suffix := strconv.Itoa(os.Getpid())
	image := "localhost/otelcol-nexovue-test"
	tag := "e2e-" + suffix
	ref := image + ":" + tag
	start := time.Now()
	run(t, ctx, root, nil, "make", "--no-print-directory", "-f", "distributions/dist.mk", "image-only",
		"BUILD_DIR="+t.TempDir(), "BINARY="+bin, "IMAGE="+image, "IMAGE_TAG="+tag, "CONTAINER_ENGINE="+pm)
	buildTime := time.Since(start)
	t.Cleanup(func() { _ = exec.Command(pm, "rmi", "-f", ref).Run() })

	var infos []imageInfo
	if err := json.Unmarshal([]byte(run(t, ctx, root, nil, pm, "image", "inspect", ref)), &infos); err != nil || len(infos) != 1 {
		t.Fatalf("podman image inspect %s: %v (%d images)", ref, err, len(infos))
	}
	info := infos[0]
	checkImage(t, info)
	checkImageFiles(t, ctx, pm, ref, suffix)
	fmt.Printf("container: image %s %.1f MB, built in %s\n", ref, float64(info.Size)/1e6, buildTime.Round(time.Millisecond))

	// A host process to profile, under its own service name.
	burner := testenv.BuildGo(t, filepath.Join("testdata", "cpuburner"), "cpuburner")
	testenv.Start(t, []string{"OTEL_SERVICE_NAME=" + serviceName}, burner, "-for", "3m")

	for _, tc := range []struct {
		name string
		// grant replaces the docs' --privileged.
		grant []string
	}{
		// The docs' command.
		{"privileged", []string{"--privileged"}},
		// The least-privilege variant (docs/security.md,
		// kubernetes/least-privilege): no SYS_RESOURCE on Linux 5.11+.
		{"least-privilege", []string{
			"--cap-drop=ALL", "--cap-add=BPF,PERFMON,SYS_PTRACE,SYSLOG,CHECKPOINT_RESTORE",
			"--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runAgent(t, ctx, pm, root, ref, suffix+"-"+tc.name, tc.grant)
		})
	}
}

// runAgent runs the docs' command with our image, a profiler.yaml pointed at
// a fresh ingest double, this machine's podman settings and grant in place of
// --privileged; it asserts that the named host process's profiles arrive.
func runAgent(t *testing.T, ctx context.Context, pm, root, ref, suffix string, grant []string) {
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{ingestKey}})
	t.Cleanup(func() {
		if t.Failed() {
			st := srv.Stats()
			t.Logf("ingest double: answers by status %v, dropped %d, samples per service %v", st.RequestsByStatus, st.Dropped, srv.ServiceSamples())
			for _, r := range st.Recent {
				if r.Reason != "" {
					t.Logf("refused: %d %s", r.Status, r.Reason)
				}
			}
		}
	})

	// $PWD/profiler.yaml: the shipped agent config with the addresses this
	// test uses written in, since the docs' command passes no other variable
	// than NEXOVUE_KEY.
	pwd := t.TempDir()
	health := testenv.FreePort(t)
	writeProfilerYAML(t, filepath.Join(root, "distributions", "otelcol-nexovue", "agent.yaml"), filepath.Join(pwd, "profiler.yaml"), map[string]string{
		"${env:NEXOVUE_ENDPOINT:-https://ingest.nexovue.com}": srv.URL(),
		"${env:NEXOVUE_HEALTH_ENDPOINT:-0.0.0.0:13133}":       "127.0.0.1:" + strconv.Itoa(health),
		"${env:NEXOVUE_METRICS_HOST:-0.0.0.0}":                "127.0.0.1",
		"${env:NEXOVUE_METRICS_PORT:-8888}":                   strconv.Itoa(testenv.FreePort(t)),
	})

	// The docs' command, flag for flag, in their order; grant replaces
	// --privileged, the name is unique on this shared machine, and
	// podmanArgs come last, before the image.
	name := "otel-profiler-" + suffix
	args := append([]string{"run", "-d", "--name", name}, grant...)
	args = append(args, "--pid=host",
		"-v", "/sys/kernel/debug:/sys/kernel/debug",
		"-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro",
		"-v", "/proc:/proc",
		"-v", filepath.Join(pwd, "profiler.yaml")+":/etc/otelcol/config.yaml:ro",
		"-e", "NEXOVUE_KEY",
	)
	args = append(args, podmanArgs...)
	args = append(args, ref, "--config", "/etc/otelcol/config.yaml", testenv.FeatureGate)
	env := append(os.Environ(), "NEXOVUE_KEY="+ingestKey)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command(pm, "logs", "--tail", "80", name).CombinedOutput()
			t.Logf("podman logs %s:\n%s", name, logs)
		}
		if out, err := exec.Command(pm, "rm", "-f", "-t", "5", name).CombinedOutput(); err != nil {
			t.Errorf("podman rm -f %s: %v\n%s", name, err, out)
		}
	})
	t.Logf("%s %s", pm, strings.Join(args, " "))
	runAt := time.Now()
	run(t, ctx, pwd, env, pm, args...)

	// First profile from anything, then from the named host process.
	var first, named time.Duration
	testenv.WaitFor(t, firstProfileTimeout, "profiles of "+serviceName+" at the ingest double", func() (bool, error) {
		if state := containerState(t, pm, name); state != "running" {
			return false, fmt.Errorf("the container is %s", state)
		}
		svcs := srv.ServiceSamples()
		if first == 0 && len(svcs) > 0 {
			first = time.Since(runAt)
		}
		if svcs[serviceName] > 0 {
			named = time.Since(runAt)
			return true, nil
		}
		return false, nil
	})
	svcs := srv.ServiceSamples()
	for s, n := range svcs {
		if s == "" || n <= 0 {
			t.Errorf("service %q with %d samples: every profile must carry a service name", s, n)
		}
	}
	inclusive := srv.TopInclusiveFunctions(serviceName, 20)
	if !slices.ContainsFunc(inclusive, func(f ingest.FunctionCount) bool { return f.Function == "main.burn" }) {
		t.Errorf("%s's stacks do not show main.burn (the function that burns its CPU): %+v", serviceName, inclusive)
	}

	// health_check answers on the host network.
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(health) + "/")
	if err != nil {
		t.Errorf("health_check: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("health_check answered %d", resp.StatusCode)
		}
	}
	// The key never reaches the logs.
	logs, err := exec.Command(pm, "logs", name).CombinedOutput()
	if err != nil {
		t.Errorf("podman logs: %v", err)
	}
	if strings.Contains(string(logs), ingestKey) {
		t.Error("the container's log holds the ingest key")
	}
	if n := srv.Requests(http.StatusUnauthorized); n > 0 {
		t.Errorf("the ingest double answered 401 %d times", n)
	}

	// The memlock line: where the container may not raise RLIMIT_MEMLOCK, the
	// receiver says once that it made the profiler's calls succeed; upstream's
	// failure never shows.
	logText := string(logs)
	if strings.Contains(logText, "failed to set temporary rlimit") {
		t.Error("upstream's memlock failure is in the log")
	}
	memlockLines := strings.Count(logText, memlockLine)
	wantLines := 1
	if slices.Contains(grant, "--privileged") && testenv.CanRaiseMemlock(t) {
		wantLines = 0 // --privileged gets CAP_SYS_RESOURCE where the host has it
	}
	if memlockLines != wantLines {
		t.Errorf("the memlock info line appears %d times, want %d", memlockLines, wantLines)
	}

	t.Logf("services seen: %v", svcs)
	fmt.Printf("container %s: podman run to first accepted request %s, to first profile %s, to %s's first profile %s\n",
		t.Name(), firstAccepted(srv, runAt), first.Round(time.Millisecond), serviceName, named.Round(time.Millisecond))
	fmt.Printf("container %s: the collector's start-up lines:\n%s", t.Name(), startLines(logText))
}

const memlockLine = "RLIMIT_MEMLOCK may not be raised here (no CAP_SYS_RESOURCE)"

// firstAccepted is the time from runAt to the first request the ingest
// double accepted.
func firstAccepted(srv *ingest.Server, runAt time.Time) time.Duration {
	var first time.Time
	for _, r := range srv.RecentRequests() {
		if r.Status == http.StatusOK && (first.IsZero() || r.Time.Before(first)) {
			first = r.Time
		}
	}
	if first.IsZero() {
		return 0
	}
	return first.Sub(runAt).Round(time.Millisecond)
}

// startLines is the log up to "Everything is ready".
func startLines(log string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(log, "\n") {
		b.WriteString("  " + l)
		if strings.Contains(l, "Everything is ready") {
			break
		}
	}
	return b.String()
}

// writeProfilerYAML writes the config at from to to with each key replaced
// by its value; every key must occur.
func writeProfilerYAML(t *testing.T, from, to string, replace map[string]string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range replace {
		if !strings.Contains(s, k) {
			t.Fatalf("%s no longer holds %s", from, k)
		}
		s = strings.ReplaceAll(s, k, v)
	}
	if err := os.WriteFile(to, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// requireDebugfs fails the test when debugfs is not mounted at
// /sys/kernel/debug with its tracing folder: the docs' command brings the
// profiler tracefs through that mount (make prereqs mounts it).
func requireDebugfs(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/debug/tracing/events"); err != nil {
		t.Fatalf("the docs' command mounts /sys/kernel/debug, which needs debugfs there with its tracing folder (%v): "+
			"run `make prereqs` or `mount -t debugfs none /sys/kernel/debug` as root", err)
	}
}

func containerState(t *testing.T, pm, name string) string {
	t.Helper()
	out, err := exec.Command(pm, "inspect", "--format", "{{.State.Status}}", name).Output()
	if err != nil {
		return "not inspectable: " + err.Error()
	}
	return strings.TrimSpace(string(out))
}

// checkImage asserts the image's entrypoint, default command and OCI labels.
func checkImage(t *testing.T, info imageInfo) {
	t.Helper()
	if !slices.Equal(info.Config.Entrypoint, []string{"/otelcol-nexovue"}) {
		t.Errorf("entrypoint %q, want the collector", info.Config.Entrypoint)
	}
	if want := []string{"--config", "/etc/otelcol/config.yaml", testenv.FeatureGate}; !slices.Equal(info.Config.Cmd, want) {
		t.Errorf("cmd %q, want %q", info.Config.Cmd, want)
	}
	for _, l := range []string{"org.opencontainers.image.version", "org.opencontainers.image.source", "org.opencontainers.image.licenses", "org.opencontainers.image.revision"} {
		if v := info.Config.Labels[l]; v == "" || v == "dev" || v == "unknown" {
			t.Errorf("label %s = %q", l, v)
		}
	}
	if info.Size <= 0 || info.Size > 250e6 {
		t.Errorf("image size %d bytes", info.Size)
	}
}

// checkImageFiles asserts that the image holds the collector, the CA bundle
// and the agent config, and nothing else: no base image.
func checkImageFiles(t *testing.T, ctx context.Context, pm, ref, suffix string) {
	t.Helper()
	name := "otel-profiler-files-" + suffix
	run(t, ctx, "", nil, pm, "create", "--name", name, ref)
	defer func() { _ = exec.Command(pm, "rm", "-f", name).Run() }()
	tarPath := filepath.Join(t.TempDir(), "rootfs.tar")
	run(t, ctx, "", nil, pm, "export", "-o", tarPath, name)
	list := run(t, ctx, "", nil, "tar", "-tf", tarPath)
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(list), "\n") {
		if f != "" && !strings.HasSuffix(f, "/") {
			files = append(files, strings.TrimPrefix(f, "./"))
		}
	}
	// podman adds mount points for /etc/hosts, /etc/resolv.conf etc.; those are empty files it creates.
	want := []string{"etc/otelcol/config.yaml", "etc/ssl/certs/ca-certificates.crt", "otelcol-nexovue"}
	var extra []string
	for _, f := range files {
		if !slices.Contains(want, f) && !slices.Contains([]string{"etc/hosts", "etc/resolv.conf", "etc/hostname", "run/.containerenv"}, f) {
			extra = append(extra, f)
		}
	}
	for _, w := range want {
		if !slices.Contains(files, w) {
			t.Errorf("the image lacks /%s", w)
		}
	}
	if len(extra) > 0 {
		t.Errorf("the image holds more than the collector, its config and the CA bundle: %v", extra)
	}
}
