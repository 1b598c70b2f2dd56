// Package smoke checks the built binary: the docs' configuration, the feature
// gate message, real eBPF profiles of a process this test starts, and `make
// run`'s script (runlocal_test.go).
package smoke

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

func TestDocsEBPFConfigValidates(t *testing.T) {
	t.Parallel() // all but TestViewInBrowser, see there
	cfg := filepath.Join(testenv.RepoRoot(t), "tests", "testdata", "docs-ebpf.yaml")
	cmd := exec.Command(testenv.Binary(t), "validate", "--config", cfg, testenv.FeatureGate)
	cmd.Env = append(os.Environ(), "NEXOVUE_KEY=smoke-test-key")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
}

func TestProfilesPipelineNeedsFeatureGate(t *testing.T) {
	t.Parallel() // all but TestViewInBrowser, see there
	cfg := filepath.Join(testenv.RepoRoot(t), "tests", "testdata", "docs-ebpf.yaml")
	for _, args := range [][]string{
		{"validate", "--config", cfg},
		{"--config", cfg},
	} {
		cmd := exec.Command(testenv.Binary(t), args...)
		cmd.Env = append(os.Environ(), "NEXOVUE_KEY=smoke-test-key")
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { out, err = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%v: still running without the feature gate", args)
		}
		require.Error(t, err, "%v must fail without the feature gate:\n%s", args, out)
		require.Contains(t, string(out), "--feature-gates=service.profilesSupport", "%v", args)
		// The release comes from the binary's build information.
		require.Regexp(t, `profiles are an alpha signal in this Collector \(0\.\d+\.\d+\)`, string(out), "%v", args)
	}
}

// TestEBPFProfilesArrive starts the built collector with the real eBPF
// receiver and a file exporter as the local sink while a CPU-bound program
// runs, and waits at most 30 s for that program's profiles.
func TestEBPFProfilesArrive(t *testing.T) {
	t.Parallel() // all but TestViewInBrowser, see there
	const exe = "smokeburner"
	const hot = "main.nexovueSmokeHotLoop"
	burner := testenv.BuildGo(t, "testdata/smokeburner", exe)

	dir := t.TempDir()
	sink := filepath.Join(dir, "profiles.jsonl")
	cfg := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
receivers:
  profiling:
    samples_per_second: 19
    reporter_interval: 2s
exporters:
  file:
    path: %s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [profiling]
      exporters: [file]
`, sink)), 0o600))

	testenv.Start(t, nil, burner)
	collector := testenv.StartCollector(t, cfg, testenv.CollectorOptions{EBPF: true})
	checkMemlockLines(t, collector.Output())

	var found sinkSummary
	testenv.WaitFor(t, 30*time.Second, "profiles of "+exe+" with "+hot, func() (bool, error) {
		s, err := summarize(sink, exe, hot)
		found = s
		return s.hotSamples > 0, err
	})
	t.Logf("smoke: %d samples from %d processes; %s: %d samples, %d in %s", found.samples, len(found.executables), exe, found.exeSamples, found.hotSamples, hot)
}

// checkMemlockLines: the binary ran without any launcher. Where this machine
// withholds CAP_SYS_RESOURCE (as this project's do), the receiver says once,
// at info level, that it made the profiler's memlock calls succeed; upstream's
// "failed to set temporary rlimit" never appears.
func checkMemlockLines(t *testing.T, log string) {
	t.Helper()
	const line = "RLIMIT_MEMLOCK may not be raised here (no CAP_SYS_RESOURCE)"
	require.NotContains(t, log, "failed to set temporary rlimit")
	want := 0
	if !testenv.CanRaiseMemlock(t) {
		want = 1
	}
	require.Equal(t, want, strings.Count(log, line), "the memlock info line, in:\n%s", log)
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, line) {
			require.Contains(t, l, "\tinfo\t")
			t.Logf("memlock: %s", l)
		}
	}
}

type sinkSummary struct {
	samples, exeSamples, hotSamples int
	executables                     map[string]bool
}

// summarize reads the file exporter's JSON lines.
func summarize(path, exe, hot string) (sinkSummary, error) {
	s := sinkSummary{executables: map[string]bool{}}
	err := testenv.ReadProfileLines(path, func(pd pprofile.Profiles) {
		dict := pd.Dictionary()
		for _, rp := range pd.ResourceProfiles().All() {
			name, _ := rp.Resource().Attributes().Get("process.executable.name")
			s.executables[name.Str()] = true
			for _, sp := range rp.ScopeProfiles().All() {
				for _, profile := range sp.Profiles().All() {
					s.samples += profile.Samples().Len()
					if name.Str() != exe {
						continue
					}
					for _, sample := range profile.Samples().All() {
						s.exeSamples++
						if stackHas(dict, sample.StackIndex(), hot) {
							s.hotSamples++
						}
					}
				}
			}
		}
	})
	return s, err
}

func stackHas(dict pprofile.ProfilesDictionary, stack int32, function string) bool {
	for _, li := range dict.StackTable().At(int(stack)).LocationIndices().AsRaw() {
		lines := dict.LocationTable().At(int(li)).Lines()
		for m := 0; m < lines.Len(); m++ {
			fn := dict.FunctionTable().At(int(lines.At(m).FunctionIndex()))
			if strings.Contains(dict.StringTable().At(int(fn.NameStrindex())), function) {
				return true
			}
		}
	}
	return false
}
