package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.yaml.in/yaml/v3"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// Short-lived processes (issue 46): the shipped agent has the profiler
// synchronise a process when it execs (the receiver's exec_sync_per_second),
// where upstream synchronises it only after dropping its first sample. Each
// test runs the shipped agent (ours) and a plain pipeline of the same binary
// with exec_sync_per_second: 0 (profiling -> file: upstream's behaviour)
// side by side, over the same processes, and counts the samples each
// delivered of them against their CPU time × samples_per_second.

// readAgentRate reads samples_per_second from the shipped agent.yaml (the
// constant agentSamplesPerSecond states it; this reads what ships).
func readAgentRate(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "distributions", "otelcol-nexovue", "agent.yaml"))
	require.NoError(t, err)
	var cfg struct {
		Receivers map[string]struct {
			SamplesPerSecond float64 `yaml:"samples_per_second"`
		} `yaml:"receivers"`
	}
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	rate := cfg.Receivers["profiling"].SamplesPerSecond
	require.Positive(t, rate, "agent.yaml's receivers.profiling.samples_per_second")
	return rate
}

// pair is the shipped agent and the plain pipeline, each writing what it
// sends to a file.
type pair struct {
	ours, plain         *testenv.Process
	oursSink, plainSink string
}

// startPair starts the shipped agent (sending to srv, its reporter_interval
// 2 s) and the plain pipeline: the same binary and receiver settings with
// exec_sync_per_second 0, profiling -> file.
func startPair(t *testing.T, srv *ingest.Server) pair {
	t.Helper()
	var p pair
	p.oursSink, p.ours = startAgent(t, srv)
	dir := t.TempDir()
	p.plainSink = filepath.Join(dir, "plain.jsonl")
	cfg := writeFile(t, dir, "plain.yaml", fmt.Sprintf(`
receivers:
  profiling:
    samples_per_second: %g
    reporter_interval: 2s
    exec_sync_per_second: 0
exporters:
  file/plain:
    path: %s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [profiling]
      exporters: [file/plain]
`, readAgentRate(t), p.plainSink))
	p.plain = startEBPFCollector(t, cfg, testenv.CollectorOptions{})
	return p
}

// markCount counts, in a sink, the samples the profiler took (one per
// timestamp) of the processes whose OTEL_SERVICE_NAME is mark: ours names
// them service.name mark (service_name processor); the plain pipeline
// carries the variable as process.environment_variable.OTEL_SERVICE_NAME.
type markCount struct {
	taken  int64
	byExe  map[string]int64
	latest int64 // the latest sample timestamp in the sink, any process
}

func countMarked(path, mark string) (markCount, error) {
	m := markCount{byExe: map[string]int64{}}
	err := testenv.ReadProfileLines(path, func(pd pprofile.Profiles) {
		for _, rp := range pd.ResourceProfiles().All() {
			attrs := rp.Resource().Attributes()
			hit := attrIs(attrs, "service.name", mark) || attrIs(attrs, "process.environment_variable.OTEL_SERVICE_NAME", mark)
			exe := ""
			if v, ok := attrs.Get("process.executable.name"); ok {
				exe = v.AsString()
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, p := range sp.Profiles().All() {
					for _, s := range p.Samples().All() {
						ts := s.TimestampsUnixNano()
						for i := range ts.Len() {
							m.latest = max(m.latest, int64(ts.At(i)))
						}
						if hit {
							n := int64(max(ts.Len(), 1))
							m.taken += n
							m.byExe[exe] += n
						}
					}
				}
			}
		}
	})
	return m, err
}

func attrIs(attrs pcommon.Map, k, want string) bool {
	v, ok := attrs.Get(k)
	return ok && v.AsString() == want
}

// waitPast waits until both sinks hold a sample taken 3 s after end (any
// process: the agents profile each other): the reporter has then sent
// what it held of the time before.
func (p pair) waitPast(t *testing.T, end time.Time, mark string) (ours, plain markCount) {
	t.Helper()
	var seen string
	testenv.LastSeen(t, &seen)
	testenv.WaitFor(t, time.Minute, "both sinks past the workload's end", func() (bool, error) {
		var err error
		if ours, err = countMarked(p.oursSink, mark); err != nil {
			return false, err
		}
		if plain, err = countMarked(p.plainSink, mark); err != nil {
			return false, err
		}
		after := end.Add(3 * time.Second).UnixNano()
		seen = fmt.Sprintf("latest sample ours %v, plain %v", time.Unix(0, ours.latest), time.Unix(0, plain.latest))
		return ours.latest > after && plain.latest > after, nil
	})
	return ours, plain
}

// childrenCPU runs cmd and returns the CPU time of it and every descendant
// it waited for (wait4's rusage).
func childrenCPU(t *testing.T, cmd *exec.Cmd) time.Duration {
	t.Helper()
	out := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, testenv.RunCmd(cmd), "%s:\n%s", cmd, out.String())
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// TestShortLivedBuild compiles and links a small C file 120 times, one
// compile after the other (gcc -O2 -g: the driver, cc1, as, collect2 and ld,
// each living 10 ms to 1 s), with both agents profiling.
func TestShortLivedBuild(t *testing.T) {
	t.Parallel() // see main_test.go
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "shortlived build", srv, &sent)
	rate := readAgentRate(t)
	p := startPair(t, srv)

	dir := t.TempDir()
	src := filepath.Join(testenv.RepoRoot(t), "tests", "e2e", "testdata", "shortlived", "unit.c")
	mark := "nxv-build-" + filepath.Base(dir)
	script := fmt.Sprintf(`for i in $(seq 120); do gcc -O2 -g -DNXV_UNIT=$i -o %[1]s/unit %[2]s || exit 1; done`, dir, src)
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME="+mark)
	start := time.Now()
	cpu := childrenCPU(t, cmd)
	end := time.Now()
	ours, plain := p.waitPast(t, end, mark)

	expected := cpu.Seconds() * rate
	t.Logf("figure: build of 120 gcc -O2 -g compiles, %.1f CPU-s in %s wall: expected %.0f samples (× %g/s); ours %d (%.0f%%), plain %d (%.0f%%); ours by executable %v; plain by executable %v; load %s",
		cpu.Seconds(), end.Sub(start).Round(100*time.Millisecond), expected, rate,
		ours.taken, 100*float64(ours.taken)/expected, plain.taken, 100*float64(plain.taken)/expected, ours.byExe, plain.byExe, testenv.LoadAvg())
	require.GreaterOrEqual(t, float64(ours.taken), 0.8*expected, "ours delivered less than 80%% of the build's CPU time × rate")
	for _, want := range []string{"as", "ld", "collect2"} {
		require.True(t, hasExe(ours.byExe, want), "no samples of %s in ours: %v", want, ours.byExe)
	}
}

// hasExe reports whether byExe has an executable named name, or its
// target-prefixed or .bfd form (Debian's as is x86_64-linux-gnu-as, its ld
// x86_64-linux-gnu-ld.bfd).
func hasExe(byExe map[string]int64, name string) bool {
	for exe, n := range byExe {
		base := strings.TrimSuffix(exe, ".bfd")
		if n > 0 && (base == name || strings.HasSuffix(base, "-"+name)) {
			return true
		}
	}
	return false
}
