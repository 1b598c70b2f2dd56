package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/dwarftest"
	"github.com/nexovue/otelcol-nexovue/tests/bench"
	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// frameShares counts, per group of mappings, the native frames of the
// samples (a sample taken n times counts n times), those named and those
// named with a line.
type frameShares map[string]*struct{ frames, named, lined int64 }

func readShares(path string, groups map[string]string) (frameShares, error) {
	out := frameShares{}
	err := testenv.ReadProfileLines(path, func(pd pprofile.Profiles) {
		d := pd.Dictionary()
		for _, rp := range pd.ResourceProfiles().All() {
			for _, sp := range rp.ScopeProfiles().All() {
				for _, p := range sp.Profiles().All() {
					for _, smp := range p.Samples().All() {
						si := smp.StackIndex()
						if si < 0 || int(si) >= d.StackTable().Len() {
							continue
						}
						n := int64(max(smp.TimestampsUnixNano().Len(), 1))
						for _, li := range d.StackTable().At(int(si)).LocationIndices().All() {
							if li <= 0 || int(li) >= d.LocationTable().Len() {
								continue
							}
							loc := d.LocationTable().At(int(li))
							file, _ := mappingFile(d, loc)
							g, ok := groups[file]
							if !ok {
								continue
							}
							c := out[g]
							if c == nil {
								c = &struct{ frames, named, lined int64 }{}
								out[g] = c
							}
							c.frames += n
							if loc.Lines().Len() > 0 {
								c.named += n
								if loc.Lines().At(0).Line() > 0 {
									c.lined += n
								}
							}
						}
					}
				}
			}
		}
	})
	return out, err
}

// BenchmarkDebugInfoAgents (a harness, not part of `make test`) runs the
// shipped agent of the branch under test (_build/otelcol-nexovue) and the
// one of $NEXOVUE_BEFORE_BIN side by side, each with an ingest double and
// a file sink of its own, while the language test's C program (gcc -g
// -O1) and C++ program (g++ -O1, no -g) and a program sorting with libc's
// qsort run. After 60 s of start-up, it reads each agent's CPU time over
// the next 2 minutes and its peak RSS, then the share of native frames
// named, and named with a line, in each program and in libc.so.6 (every
// process's) from each agent's sink.
//
//	NEXOVUE_BEFORE_BIN=<main's binary> go test -run '^$' -bench DebugInfoAgents -benchtime 1x ./tests/e2e/
func BenchmarkDebugInfoAgents(b *testing.B) {
	before := os.Getenv("NEXOVUE_BEFORE_BIN")
	require.NotEmpty(b, before, "set NEXOVUE_BEFORE_BIN to the collector to compare with (main's _build/otelcol-nexovue)")
	root := testenv.RepoRoot(b)
	dir := b.TempDir()
	langs := filepath.Join(root, "tests", "e2e", "testdata", "languages")
	cBin := filepath.Join(dir, "nxv-lang-c")
	cppBin := filepath.Join(dir, "nxv-lang-cpp")
	qsort := filepath.Join(dir, "nxv-qsort")
	dwarftest.Run(b, "gcc", "-g", "-O1", "-fno-omit-frame-pointer", "-o", cBin, filepath.Join(langs, "burn.c"))
	dwarftest.Run(b, "g++", "-O1", "-fno-omit-frame-pointer", "-o", cppBin, filepath.Join(langs, "burn.cpp"))
	dwarftest.Run(b, "gcc", "-O2", "-o", qsort, filepath.Join(root, "tests", "e2e", "testdata", "debuginfo", "qsort.c"))
	for _, bin := range []string{cBin, cppBin} {
		testenv.Start(b, nil, "nice", "-n", "10", bin, "100000")
	}
	testenv.Start(b, nil, "nice", "-n", "10", qsort)

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
	time.Sleep(60 * time.Second) // the measured window starts after the start-up scan (a duration measured, not a condition)
	cpu0 := make([]time.Duration, len(agents))
	for i, a := range agents {
		var err error
		cpu0[i], err = bench.ProcCPUClock(a.proc.Cmd.Process.Pid)
		require.NoError(b, err)
	}
	time.Sleep(120 * time.Second)
	groups := map[string]string{"nxv-lang-c": "c", "nxv-lang-cpp": "cpp", "nxv-qsort": "qsort", "libc.so.6": "libc"}
	for i, a := range agents {
		cpu, err := bench.ProcCPUClock(a.proc.Cmd.Process.Pid)
		require.NoError(b, err)
		peak, _, err := bench.ProcMemory(a.proc.Cmd.Process.Pid)
		require.NoError(b, err)
		b.ReportMetric((cpu-cpu0[i]).Seconds()/2, a.name+"-cpu-s/min")
		b.ReportMetric(float64(peak)/(1<<20), a.name+"-peak-rss-MiB")
		shares, err := readShares(a.sink, groups)
		require.NoError(b, err)
		for _, g := range []string{"c", "cpp", "qsort", "libc"} {
			c := shares[g]
			if c == nil || c.frames == 0 {
				b.Logf("%s %s: no frames", a.name, g)
				continue
			}
			b.Logf("%s %s: %d frames, %.1f%% named, %.1f%% with a line", a.name, g, c.frames,
				100*float64(c.named)/float64(c.frames), 100*float64(c.lined)/float64(c.frames))
			b.ReportMetric(100*float64(c.named)/float64(c.frames), fmt.Sprintf("%s-%s-named-%%", a.name, g))
			b.ReportMetric(100*float64(c.lined)/float64(c.frames), fmt.Sprintf("%s-%s-lined-%%", a.name, g))
		}
	}
}
