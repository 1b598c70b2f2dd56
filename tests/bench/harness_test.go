//go:build bench

package bench

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// The harness's files carry the build tag `bench`: `go test ./...` leaves
// them out (make test vets them with -tags bench), and make bench runs:
//
//	go test -tags bench -run '^TestBench$' -timeout 60m -v ./tests/bench -args -bench.run -bench.out=BENCHMARKS.md
var (
	flagRun   = flag.Bool("bench.run", false, "run the benchmarks (several minutes) and write the report")
	flagOut   = flag.String("bench.out", "", "write the report here (default: BENCHMARKS.md at the repository root)")
	flagQuick = flag.Bool("bench.quick", false, "tiny durations and counts, to try the harness (figures meaningless)")
	flagOnly  = flag.String("bench.only", "", "comma-separated sections to run (overhead,agent,gateway,split,micro); default all")
	// For ablations: section 2 runs a variant of agent.yaml in its place,
	// side by side with plain and the queue in memory as usual.
	flagOurs       = flag.String("bench.ours", "", "section 2: run this collector configuration (a path relative to the repository, or absolute) in place of the shipped agent.yaml: a variant, to measure one component's cost")
	flagAgentPairs = flag.Int("bench.agent-pairs", 0, "section 2: pairs to run (0: the default, 5)")
	// bench.mk passes when make started, so that the report can say how
	// long `make bench` took with its build.
	flagMakeStart = flag.Int64("bench.make-start", 0, "unix time `make bench` started (0: unknown)")
)

// params are the durations and counts of one run.
type params struct {
	// overhead
	overheadPairs int
	workTime      time.Duration // fixed work calibrated to take about this long
	settle        time.Duration // after the collector starts, before timing
	// agent cost
	agentPairs    int // pairs of concurrent runs
	agentEach     int // agents of ours and of plain running at once in a pair
	agentMemQueue int // agents of ours with the queue in memory beside them
	agentWarmup   time.Duration
	agentWindow   time.Duration
	busyProcs     int
	busyDuty      float64
	// profile_metrics (section 6): alternating runs
	pmReps   int // per variant
	pmWarmup time.Duration
	pmWindow time.Duration
	// gateway
	gatewayReps   int // per pipeline
	gatewayWarmup time.Duration
	gatewayWindow time.Duration
	// splitting
	splitReps int // per variant
	// micro-benchmarks
	microCount int
}

var fullParams = params{
	overheadPairs: 8, workTime: 2500 * time.Millisecond, settle: 5 * time.Second,
	agentPairs: 5, agentEach: 3, agentMemQueue: 2, agentWarmup: 60 * time.Second, agentWindow: 300 * time.Second, busyProcs: 20, busyDuty: 0.04,
	pmReps: 3, pmWarmup: 8 * time.Second, pmWindow: 30 * time.Second,
	gatewayReps: 3, gatewayWarmup: 3 * time.Second, gatewayWindow: 15 * time.Second,
	splitReps:  3,
	microCount: 5,
}

var quickParams = params{
	overheadPairs: 2, workTime: 500 * time.Millisecond, settle: time.Second,
	agentPairs: 1, agentEach: 1, agentMemQueue: 1, agentWarmup: 3 * time.Second, agentWindow: 5 * time.Second, busyProcs: 4, busyDuty: 0.04,
	pmReps: 1, pmWarmup: 3 * time.Second, pmWindow: 5 * time.Second,
	gatewayReps: 1, gatewayWarmup: time.Second, gatewayWindow: 3 * time.Second,
	splitReps:  1,
	microCount: 2,
}

// harness is what every section shares.
type harness struct {
	p    params
	root string
	load string // the benchload program
}

func TestBench(t *testing.T) {
	if !*flagRun {
		t.Fatal("the benchmark harness runs with `make bench` (-tags bench ... -args -bench.run)")
	}
	// Whatever ends this run (SIGKILL of `go test` included), nothing it
	// started outlives it: this process ends with its parent, and its
	// children with it (testenv.StartCmd).
	if err := testenv.DieWithParent(); err != nil {
		t.Fatal(err)
	}
	h := &harness{p: fullParams, root: testenv.RepoRoot(t)}
	if *flagQuick {
		h.p = quickParams
	}
	if *flagAgentPairs > 0 {
		h.p.agentPairs = *flagAgentPairs
	}
	testenv.Binary(t) // fail early without a build
	h.load = testenv.BuildGo(t, "testdata/benchload", "benchload")

	rep := &Report{Started: time.Now(), Machine: ThisMachine(), LoadBefore: LoadAvg(), WakeBefore: WakeupCost(wakeupProbe)}
	sections := []struct {
		name, title string
		run         func(*testing.T, *Section)
	}{
		{"overhead", "1. Overhead on the profiled host", h.overhead},
		{"agent", "2. Agent cost", h.agentCost},
		{"gateway", "3. Gateway throughput", h.gateway},
		{"split", "4. Frame splitting at scale", h.split},
		{"micro", "5. Component micro-benchmarks", h.micro},
		{"profile_metrics", "6. The profile_metrics connector in the agent", h.profileMetrics},
	}
	only := map[string]bool{}
	for _, s := range strings.Split(*flagOnly, ",") {
		if s = strings.TrimSpace(s); s != "" {
			only[s] = true
		}
	}
	var names []string
	for _, sec := range sections {
		if len(only) == 0 || only[sec.name] {
			names = append(names, sec.name)
		}
	}
	plan := h.planned()
	// Printed, not logged: go test -v shows it at once.
	fmt.Println(announce(plan, names))
	for _, sec := range sections {
		if len(only) > 0 && !only[sec.name] {
			continue
		}
		s := &Section{Title: sec.title}
		rep.Sections = append(rep.Sections, s)
		t0 := time.Now()
		if !t.Run(sec.name, func(t *testing.T) {
			defer func() {
				// Keep the other sections and the report after a panic.
				if r := recover(); r != nil {
					s.Err = fmt.Sprintf("the harness panicked: %v", r)
					t.Error(s.Err)
				}
			}()
			sec.run(t, s)
		}) && s.Err == "" {
			s.Err = "the harness failed in this section; see the output of `make bench`"
		}
		t.Logf("%s: %s (planned %s)", sec.name, time.Since(t0).Round(time.Second), plan[sec.name].Round(time.Second))
	}
	rep.Duration = time.Since(rep.Started)
	if *flagMakeStart > 0 {
		rep.MakeDuration = time.Since(time.Unix(*flagMakeStart, 0))
	}
	rep.LoadAfter = LoadAvg()
	rep.WakeAfter = WakeupCost(wakeupProbe)
	rep.Commands = h.commands()

	out := *flagOut
	if out == "" {
		out = filepath.Join(h.root, "BENCHMARKS.md")
	}
	var buf bytes.Buffer
	if err := rep.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", out)
}

// commands lists how the report was made, for BENCHMARKS.md.
func (h *harness) commands() []string {
	args := []string{}
	if *flagQuick {
		args = append(args, "-bench.quick")
	}
	if *flagOnly != "" {
		args = append(args, "-bench.only="+*flagOnly)
	}
	if *flagOurs != "" {
		args = append(args, "-bench.ours="+*flagOurs)
	}
	if *flagAgentPairs > 0 {
		args = append(args, fmt.Sprintf("-bench.agent-pairs=%d", *flagAgentPairs))
	}
	run := "go test -tags bench -run '^TestBench$' -count=1 -timeout 60m -v ./tests/bench -args -bench.run -bench.out=BENCHMARKS.md"
	if len(args) > 0 {
		run += " " + strings.Join(args, " ")
	}
	return append([]string{
		"make bench   # = make build, then:",
		run,
		"# micro-benchmarks, run by the harness:",
	}, h.microCommands()...)
}

// fail records why a section is incomplete and stops it.
func fail(t *testing.T, s *Section, format string, args ...any) {
	t.Helper()
	s.Err = fmt.Sprintf(format, args...)
	t.Fatal(s.Err)
}

// writeConfig writes a collector configuration into the test's folder.
func writeConfig(t *testing.T, name, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// collectorCPU reads the collector's CPU time (its process CPU clock, to the
// nanosecond), failing the test if it is gone.
func collectorCPU(t *testing.T, p *testenv.Process) time.Duration {
	t.Helper()
	d, err := ProcCPUClock(p.Cmd.Process.Pid)
	if err != nil {
		t.Fatalf("collector CPU time: %v\n%s", err, p.Output())
	}
	return d
}

func collectorMemory(t *testing.T, p *testenv.Process) (peak, current int64) {
	t.Helper()
	peak, current, err := ProcMemory(p.Cmd.Process.Pid)
	if err != nil {
		t.Fatalf("collector memory: %v\n%s", err, p.Output())
	}
	return peak, current
}

// selfCPU is the harness's own CPU time (its clients and the in-process double).
func selfCPU(t *testing.T) time.Duration {
	t.Helper()
	d, err := ProcCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
