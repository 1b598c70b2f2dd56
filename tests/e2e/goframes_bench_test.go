package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/tests/bench"
	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// inlinedLeafShares counts, per mapping file name of the samples' leaf
// location, the samples (a sample taken n times counts n times) and those
// whose leaf location holds an inlined call (more than one line).
func inlinedLeafShares(path string) (map[string][2]int64, error) {
	out := map[string][2]int64{}
	err := testenv.ReadProfileLines(path, func(pd pprofile.Profiles) {
		d := pd.Dictionary()
		for _, rp := range pd.ResourceProfiles().All() {
			for _, sp := range rp.ScopeProfiles().All() {
				for _, p := range sp.Profiles().All() {
					for _, smp := range p.Samples().All() {
						si := smp.StackIndex()
						if si < 0 || int(si) >= d.StackTable().Len() || d.StackTable().At(int(si)).LocationIndices().Len() == 0 {
							continue
						}
						li := d.StackTable().At(int(si)).LocationIndices().At(0)
						if li <= 0 || int(li) >= d.LocationTable().Len() {
							continue
						}
						loc := d.LocationTable().At(int(li))
						file, _ := mappingFile(d, loc)
						n := int64(max(smp.TimestampsUnixNano().Len(), 1))
						c := out[file]
						c[0] += n
						if loc.Lines().Len() > 1 {
							c[1] += n
						}
						out[file] = c
					}
				}
			}
		}
	})
	return out, err
}

// BenchmarkGoFramesAgents (a harness, not part of `make test`) runs the
// shipped agent of the branch under test (_build/otelcol-nexovue) and the
// one of $NEXOVUE_BEFORE_BIN side by side, each with an ingest double and
// a file sink of its own, while the Go compiler works (go build -a of a
// package and its dependencies, again and again, at nice 10: compile, a
// Go program the compiler itself builds with heavy inlining, in processes
// that live seconds). After 30 s of start-up, it reads each agent's CPU
// time over the next 90 s and its peak RSS, then, from each agent's sink,
// the share of the samples of compile, of go and of the agents themselves
// whose leaf frame is an inlined call.
//
//	NEXOVUE_BEFORE_BIN=<main's binary> go test -run '^$' -bench GoFramesAgents -benchtime 1x ./tests/e2e/
func BenchmarkGoFramesAgents(b *testing.B) {
	before := os.Getenv("NEXOVUE_BEFORE_BIN")
	require.NotEmpty(b, before, "set NEXOVUE_BEFORE_BIN to the collector to compare with (main's _build/otelcol-nexovue)")
	root := testenv.RepoRoot(b)
	type agent struct {
		name string
		sink string
		proc *testenv.Process
	}
	var agents []agent
	for _, a := range []struct {
		name string
		wrap []string
	}{{"before", []string{"sh", "-c", `shift; exec "$0" "$@"`, before}}, {"after", nil}} {
		srv := ingest.StartForTest(b, ingest.Config{Keys: []string{testKey}})
		sink, p := startAgentWith(b, srv, a.wrap)
		agents = append(agents, agent{a.name, sink, p})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cache := b.TempDir() // a build cache of its own: every build compiles
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cmd := exec.CommandContext(ctx, "nice", "-n", "10", "go", "build", "-a", "-o", os.DevNull, "./internal/gopclntab")
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "GOCACHE="+filepath.Join(cache, "gocache"), "GOFLAGS=-trimpath")
			_ = cmd.Run()
		}
	}()
	time.Sleep(30 * time.Second) // the measured window starts after the start-up scan (a duration measured, not a condition)
	cpu0 := make([]time.Duration, len(agents))
	for i, a := range agents {
		var err error
		cpu0[i], err = bench.ProcCPUClock(a.proc.Cmd.Process.Pid)
		require.NoError(b, err)
	}
	time.Sleep(90 * time.Second)
	cancel()
	<-done
	for i, a := range agents {
		cpu, err := bench.ProcCPUClock(a.proc.Cmd.Process.Pid)
		require.NoError(b, err)
		peak, _, err := bench.ProcMemory(a.proc.Cmd.Process.Pid)
		require.NoError(b, err)
		b.ReportMetric((cpu-cpu0[i]).Seconds()/1.5, a.name+"-cpu-s/min")
		b.ReportMetric(float64(peak)/(1<<20), a.name+"-peak-rss-MiB")
		shares, err := inlinedLeafShares(a.sink)
		require.NoError(b, err)
		for _, file := range []string{"compile", "go", "otelcol-nexovue"} {
			c := shares[file]
			if c[0] == 0 {
				b.Logf("%s %s: no samples", a.name, file)
				continue
			}
			b.Logf("%s %s: %d samples, %.1f%% with an inlined call as their leaf frame", a.name, file, c[0], 100*float64(c[1])/float64(c[0]))
			b.ReportMetric(100*float64(c[1])/float64(c[0]), fmt.Sprintf("%s-%s-inlined-leaf-%%", a.name, file))
		}
	}
}
