// Package testenv runs the built otelcol-nexovue binary and the programs
// tests build, for the smoke, end-to-end and distribution tests.
package testenv // import "github.com/nexovue/otelcol-nexovue/tests/testenv"

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// FeatureGate is the flag every profiles pipeline needs.
const FeatureGate = "--feature-gates=service.profilesSupport"

// RepoRoot returns the checkout's top folder (the one with builder-config.yaml):
// the nearest above the test's working folder, which go test sets to the
// package's source folder. (Not runtime.Caller: `make test` builds with
// -trimpath, which leaves no file system path in the binary.)
func RepoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "builder-config.yaml")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatalf("testenv: no builder-config.yaml in %s or a folder above it: run the tests from the repository", wd)
		}
	}
}

// Binary returns the collector under test: $OTELCOL_NEXOVUE_BIN, else
// _build/otelcol-nexovue. A missing binary fails the test.
func Binary(t testing.TB) string {
	t.Helper()
	return builtFile(t, "OTELCOL_NEXOVUE_BIN", "otelcol-nexovue")
}

func builtFile(t testing.TB, env, name string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		path = filepath.Join(RepoRoot(t), "_build", name)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s not found (%v): run `make build` first, or set %s", name, err, env)
	}
	return path
}

// BuildGo builds the main package in dir (a path relative to the calling
// test's package, or absolute) into a temporary folder and returns the
// executable's path. name becomes the executable's name, which is what the
// eBPF profiler reports as process.executable.name.
func BuildGo(t testing.TB, dir, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	if err := BuildGoTo(dir, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// BuildGoTo is BuildGo writing the executable to out, with an error in
// place of failing a test: for builds run at once on goroutines of their own.
func BuildGoTo(dir, out string) error {
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := RunCmd(cmd); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", dir, err, b.String())
	}
	return nil
}

// Process is a program started by a test; it is stopped when the test ends.
type Process struct {
	Cmd  *exec.Cmd
	out  *SyncBuffer
	done chan struct{}
	err  error
}

// Start runs name with args and env added to the test's environment. Its
// standard output and error are kept (Output) and written to the test log if
// the test fails.
func Start(t testing.TB, env []string, name string, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	p := &Process{Cmd: cmd, out: &SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	// In a process group of its own, ending with the test however it ends.
	if err := StartCmd(cmd); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = cmd.Wait(); Ended(cmd); close(p.done) }()
	t.Cleanup(func() {
		p.Stop(10 * time.Second)
		if t.Failed() {
			LogToArtifact(t, "output of "+filepath.Base(name), filepath.Base(name)+".log", p.Output())
		}
	})
	return p
}

// Output returns what the process wrote so far.
func (p *Process) Output() string { return p.out.String() }

// Exited reports whether the process has ended, and its error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Wait waits for the process to end, at most d.
func (p *Process) Wait(d time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		return fmt.Errorf("still running after %s", d)
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) {
	if ok, _ := p.Exited(); ok {
		return
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill sends SIGKILL to the process group and waits for the process.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// CollectorOptions says how to start the collector.
type CollectorOptions struct {
	Env []string
	// EBPF says the config runs the eBPF profiler: it first checks that
	// tracefs is mounted. The binary is started directly, as users start it:
	// where CAP_SYS_RESOURCE is missing, the receiver itself copes
	// (receiver/profilingreceiver/internal/memlock).
	EBPF bool
	// Args replaces the default arguments after --config (the feature gate).
	Args []string
	// Wrap, when set, is a command line the collector (with the launcher,
	// if any) is appended to and run by, such as an unshare that gives it a
	// private mount namespace. It must exec what follows it.
	Wrap []string
	// ReadyWithin bounds the wait for "Everything is ready" (0: a minute).
	ReadyWithin time.Duration
}

// StartCollector starts the built binary with config and waits until it says
// it is ready, failing the test (with the collector's output) if it exits or
// is not ready in a minute.
func StartCollector(t testing.TB, config string, opts CollectorOptions) *Process {
	t.Helper()
	return StartCollectors(t, []string{config}, opts)[0]
}

// StartCollectors is StartCollector for several collectors, one per config,
// with the same options: all are started at once and then waited for
// together, so that a fleet starts in about the time one collector takes.
func StartCollectors(t testing.TB, configs []string, opts CollectorOptions) []*Process {
	t.Helper()
	bin := Binary(t)
	if opts.EBPF {
		RequireTracefs(t)
	}
	ps := make([]*Process, len(configs))
	for i, config := range configs {
		args := []string{"--config", config}
		if opts.Args != nil {
			args = append(args, opts.Args...)
		} else {
			args = append(args, FeatureGate)
		}
		name := bin
		if len(opts.Wrap) > 0 {
			args = append(append(append([]string(nil), opts.Wrap[1:]...), name), args...)
			name = opts.Wrap[0]
		}
		ps[i] = Start(t, opts.Env, name, args...)
	}
	within := opts.ReadyWithin
	if within == 0 {
		within = time.Minute
	}
	WaitFor(t, within, fmt.Sprintf("%d collector(s) to be ready", len(ps)), func() (bool, error) {
		for _, p := range ps {
			if ok, err := p.Exited(); ok {
				return false, fmt.Errorf("a collector exited (%v):\n%s", err, tail(p.Output(), 60))
			}
			if !strings.Contains(p.Output(), "Everything is ready") {
				return false, nil
			}
		}
		return true, nil
	})
	return ps
}

// RequireTracefs fails the test when tracefs is not mounted: the eBPF
// profiler needs /sys/kernel/tracing (.ci/run mounts it).
func RequireTracefs(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/tracing/events"); err != nil {
		t.Fatalf("the eBPF profiler needs tracefs at /sys/kernel/tracing (%v): run `mount -t tracefs none /sys/kernel/tracing` as root", err)
	}
}

// WaitFor polls cond every 200ms until it is true, fails, or d passes.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		ok, err := cond()
		if err != nil {
			fail(t, fmt.Sprintf("waiting for %s: %v", what, err))
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			fail(t, fmt.Sprintf("waiting for %s: timed out after %s", what, d))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// failures holds, per test name, the first line of the failure WaitFor
// reported: a long failure message is followed by the cleanups' logs
// (collector output, the double's requests), and CI shows only a test's
// last lines.
var failures sync.Map

// fail keeps msg's first line, at most 600 bytes, for FailureSummary, and
// fails t with msg.
func fail(t testing.TB, msg string) {
	t.Helper()
	line, _, _ := strings.Cut(msg, "\n")
	if len(line) > 600 {
		line = line[:600] + "…"
	}
	failures.LoadOrStore(t.Name(), line)
	t.Fatal(msg)
}

// FailureSummary returns the first line of the failure WaitFor reported for
// t, or "": a cleanup that logs last repeats it, so that it is among the
// lines a CI excerpt shows.
func FailureSummary(t testing.TB) string {
	if v, ok := failures.Load(t.Name()); ok {
		return v.(string)
	}
	return ""
}

// Artifacts returns the directory where a test keeps what it leaves for
// people to read (screenshots, downloads, the output of a failed test's
// programs): _build/test/artifacts/<test name>, emptied of an earlier
// run's files when the test first asks for it.
func Artifacts(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "_build", "test", "artifacts", t.Name())
	if _, seen := artifactDirs.LoadOrStore(dir, true); !seen {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatalf("artifacts: %v", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifacts: %v", err)
	}
	return dir
}

var artifactDirs sync.Map // the directories Artifacts emptied in this run

// LogToArtifact writes text, what a failed test leaves to read, to the
// file name in the test's Artifacts, and logs its path with its last three
// lines. A failed test's log then ends close to its failure message (CI
// shows the lines before a test's --- FAIL), not after pages of output.
func LogToArtifact(t testing.TB, what, name, text string) {
	t.Helper()
	dir := Artifacts(t)
	path := filepath.Join(dir, name)
	for i := 2; ; i++ { // several programs of one name
		if _, err := os.Stat(path); os.IsNotExist(err) {
			break
		}
		ext := filepath.Ext(name)
		path = filepath.Join(dir, fmt.Sprintf("%s-%d%s", strings.TrimSuffix(name, ext), i, ext))
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Logf("%s (not written to %s: %v):\n%s", what, path, err, tail(text, 200))
		return
	}
	t.Logf("%s: %d lines in %s, the last:\n%s", what, strings.Count(text, "\n"), path, tail(strings.TrimRight(text, "\n"), 3))
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// SyncBuffer is a bytes.Buffer that a program's output and a test may use at once.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ReadProfileLines calls each for every request in the JSON lines the file
// exporter wrote to path. A missing file holds nothing. The last line, if it
// does not end in a newline yet, is one the exporter is still writing and is
// skipped; any other line that is not a profiles request fails the read,
// naming its line number.
func ReadProfileLines(path string, each func(pprofile.Profiles)) error {
	return readJSONLines(path, "profiles", func(line []byte) error {
		pd, err := (&pprofile.JSONUnmarshaler{}).UnmarshalProfiles(line)
		if err == nil {
			each(pd)
		}
		return err
	})
}

// ReadMetricLines is ReadProfileLines for a file exporter of metrics.
func ReadMetricLines(path string, each func(pmetric.Metrics)) error {
	return readJSONLines(path, "metrics", func(line []byte) error {
		md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(line)
		if err == nil {
			each(md)
		}
		return err
	})
}

func readJSONLines(path, signal string, each func([]byte) error) error {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for n := 1; len(data) > 0; n++ {
		line, rest, complete := bytes.Cut(data, []byte("\n"))
		if !complete {
			return nil // the trailing partial line
		}
		data = rest
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if err := each(line); err != nil {
			return fmt.Errorf("%s:%d: not a %s request: %w", path, n, signal, err)
		}
	}
	return nil
}

// The shipped agent and gateway configs carry an optional metrics pipeline
// (the profile_metrics connector) as commented blocks between these lines.
const (
	MetricsBlockBegin = "# --- metrics from profiles (optional): begin"
	MetricsBlockEnd   = "# --- metrics from profiles: end"
)

var commentedLine = regexp.MustCompile(`^(\s*)# (.*)$`)

// EnableMetricsBlocks does what the shipped configs tell a user to do to
// turn the optional metrics pipeline on: in each marked block, remove the
// "# " in front of every line that has one ("##" lines stay comments). It
// returns the config and the number of blocks.
func EnableMetricsBlocks(config string) (string, int) {
	lines := strings.Split(config, "\n")
	in, blocks := false, 0
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case MetricsBlockBegin:
			in = true
			blocks++
			continue
		case MetricsBlockEnd:
			in = false
			continue
		}
		if m := commentedLine.FindStringSubmatch(l); in && m != nil && !strings.HasPrefix(m[2], "#") {
			lines[i] = m[1] + m[2]
		}
	}
	return strings.Join(lines, "\n"), blocks
}

// StartPprofServer builds and starts the pprof receiver's test program
// (receiver/pprofreceiver/testdata/pprofserver: net/http/pprof, CPU burnt in
// main.burnCPU) as the executable name, waits until it listens and returns
// its http://ADDR/debug/pprof.
func StartPprofServer(t testing.TB, name string) string {
	t.Helper()
	prog := BuildGo(t, filepath.Join(RepoRoot(t), "receiver", "pprofreceiver", "testdata", "pprofserver"), name)
	p := Start(t, nil, prog)
	listening := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	var target string
	WaitFor(t, 30*time.Second, "the pprof server", func() (bool, error) {
		if m := listening.FindStringSubmatch(p.Output()); m != nil {
			target = m[1] + "/debug/pprof"
			return true, nil
		}
		if done, err := p.Exited(); done {
			return false, fmt.Errorf("pprofserver exited: %v", err)
		}
		return false, nil
	})
	return target
}

// LastSeen logs *seen, what the last try of a wait saw, when the test fails.
func LastSeen(t testing.TB, seen *string) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last seen: %s", *seen)
		}
	})
}
