package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

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

// shortLivedRate is the samples a second of TestShortLivedProcesses' two
// agents (see there).
const shortLivedRate = 97

// pair is the shipped agent and the plain pipeline, each writing what it
// sends to a file.
type pair struct {
	ours, plain         *testenv.Process
	oursSink, plainSink string
}

// startPair starts the shipped agent (sending to srv, its reporter_interval
// 2 s, sampling at rate a second) and the plain pipeline: the same binary
// and receiver settings with exec_sync_per_second 0, profiling -> file.
func startPair(t *testing.T, srv *ingest.Server, rate float64) pair {
	t.Helper()
	var p pair
	p.oursSink, p.ours = startAgentReceiving(t, srv, nil, fmt.Sprintf("reporter_interval: 2s\nsamples_per_second: %g", rate))
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
`, rate, p.plainSink))
	p.plain = startEBPFCollector(t, cfg, testenv.CollectorOptions{})
	return p
}

// markCount counts, in a sink, the samples the profiler took (one per
// timestamp) of the processes whose OTEL_SERVICE_NAME is mark: ours names
// them service.name mark (service_name processor); the plain pipeline
// carries the variable as process.environment_variable.OTEL_SERVICE_NAME.
type markCount struct {
	taken int64
	// distinct are the distinct (process, timestamp) pairs among taken.
	distinct map[[2]int64]bool
	byExe    map[string]int64
	latest   int64 // the latest sample timestamp in the sink, any process
}

func countMarked(path, mark string) (markCount, error) {
	return countMatching(path, func(attrs pcommon.Map) bool {
		return attrIs(attrs, "service.name", mark) || attrIs(attrs, "process.environment_variable.OTEL_SERVICE_NAME", mark)
	}, 0, 0)
}

// countMatching counts, in a sink, the samples taken from from to to (Unix
// ns; 0, 0: any time) of the resources match accepts.
func countMatching(path string, match func(pcommon.Map) bool, from, to int64) (markCount, error) {
	m := markCount{byExe: map[string]int64{}, distinct: map[[2]int64]bool{}}
	err := testenv.ReadProfileLines(path, func(pd pprofile.Profiles) {
		for _, rp := range pd.ResourceProfiles().All() {
			attrs := rp.Resource().Attributes()
			hit := match(attrs)
			exe, pid := "", int64(0)
			if v, ok := attrs.Get("process.executable.name"); ok {
				exe = v.AsString()
			}
			if v, ok := attrs.Get("process.pid"); ok {
				pid = v.Int()
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, p := range sp.Profiles().All() {
					for _, s := range p.Samples().All() {
						ts := s.TimestampsUnixNano()
						for i := range ts.Len() {
							at := int64(ts.At(i))
							m.latest = max(m.latest, at)
							if hit && (to == 0 || at >= from && at < to) {
								m.taken++
								m.byExe[exe]++
								m.distinct[[2]int64{pid, at}] = true
							}
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

// agentUsage follows an agent's CPU time and resident memory over a part of
// a test: its CPU time from start to stop, and the largest VmRSS read every
// 200 ms (rss) and VmHWM (the peak since the agent started) at stop.
type agentUsage struct {
	pid      int
	cpu0     time.Duration
	cpu      time.Duration
	rss, hwm int64 // KiB
	stop     chan struct{}
	done     chan struct{}
}

func followAgent(t *testing.T, p *testenv.Process) *agentUsage {
	t.Helper()
	u := &agentUsage{pid: p.Cmd.Process.Pid, stop: make(chan struct{}), done: make(chan struct{})}
	st, err := testenv.ReadProcStat(u.pid)
	require.NoError(t, err)
	u.cpu0 = st.CPU
	go func() {
		defer close(u.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			u.rss = max(u.rss, statusKiB(u.pid, "VmRSS"))
			select {
			case <-u.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return u
}

// end stops following and returns u.
func (u *agentUsage) end(t *testing.T) *agentUsage {
	t.Helper()
	close(u.stop)
	<-u.done
	st, err := testenv.ReadProcStat(u.pid)
	require.NoError(t, err)
	u.cpu = st.CPU - u.cpu0
	u.hwm = statusKiB(u.pid, "VmHWM")
	return u
}

func (u *agentUsage) String() string {
	return fmt.Sprintf("CPU %.2f s, RSS peak %.0f MiB (VmHWM %.0f MiB)", u.cpu.Seconds(), float64(u.rss)/1024, float64(u.hwm)/1024)
}

// statusKiB reads a "<key>: <n> kB" line of /proc/<pid>/status (0 if none).
func statusKiB(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			var n int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &n)
			return n
		}
	}
	return 0
}

// pct is n as a percentage of of.
func pct(n int64, of float64) float64 { return 100 * float64(n) / of }

// TestShortLivedProcesses runs, with both agents profiling: a busy thread
// (the smoke burner) for 60 s; meanwhile a build, 120 compiles and links of
// a small C file one after the other (gcc -O2 -g: the driver, cc1, as,
// collect2 and ld, each living 10 ms to 1 s), then for 20 s a loop of short
// native programs (30 ms of CPU each, 8 builds with distinct build IDs, run
// in turn). Each's expected samples are its CPU time (wait4's rusage) ×
// the agents' samples a second (shortLivedRate).
func TestShortLivedProcesses(t *testing.T) {
	// Not parallel (E2E_SERIAL): its busy thread needs a CPU of its own.
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "shortlived", srv, &sent)
	// Both agents sample at shortLivedRate, not agent.yaml's 19/s: collect2
	// is 1.2% of the build's CPU time (by perf), 3 expected samples at 19/s
	// (a perfect profiler would miss it in 7% of runs; ours delivered 0 to
	// 5), about 13 at 97/s. At 97/s the plain pipeline does better too (its
	// first dropped sample, which has the process read, comes sooner): the
	// figures at 19/s, from the same test with the rate set to 19, are in
	// the receiver's README.
	rate := float64(shortLivedRate)
	root := testenv.RepoRoot(t)
	dir := t.TempDir()
	src := filepath.Join(root, "tests", "e2e", "testdata", "shortlived")
	const programs = 8
	for i := range programs {
		run(t, dir, "gcc", "-O2", "-g", fmt.Sprintf("-DNXV_ID=%d", i), "-o", filepath.Join(dir, fmt.Sprintf("nxv-short-%d", i)), filepath.Join(src, "short.c"))
	}
	burner := testenv.BuildGo(t, filepath.Join(root, "tests", "smoke", "testdata", "smokeburner"), "nxv-busy")
	p := startPair(t, srv, rate)

	busyMark, buildMark := "nxv-busy-"+filepath.Base(dir), "nxv-build-"+filepath.Base(dir)
	busy := exec.Command(burner, "60")
	busy.Env = append(os.Environ(), "OTEL_SERVICE_NAME="+busyMark)
	busyCPU := make(chan time.Duration, 1)
	busyStart := time.Now()
	var busyWall time.Duration
	go func() {
		out := &testenv.SyncBuffer{}
		busy.Stdout, busy.Stderr = out, out
		if err := testenv.RunCmd(busy); err != nil {
			t.Errorf("busy thread: %v\n%s", err, out.String())
		}
		busyWall = time.Since(busyStart)
		busyCPU <- busy.ProcessState.UserTime() + busy.ProcessState.SystemTime()
	}()

	ours, plain := followAgent(t, p.ours), followAgent(t, p.plain)
	script := fmt.Sprintf(`for i in $(seq 120); do gcc -O2 -g -DNXV_UNIT=$i -o %[1]s/unit %[2]s/unit.c || exit 1; done`, dir, src)
	build := exec.Command("sh", "-c", script)
	build.Env = append(os.Environ(), "OTEL_SERVICE_NAME="+buildMark)
	start := time.Now()
	buildCPU := childrenCPU(t, build)
	buildWall := time.Since(start)
	ours.end(t)
	plain.end(t)
	t.Logf("figure: agents during the build (%s wall): ours %s; plain %s; load %s", buildWall.Round(100*time.Millisecond), ours, plain, testenv.LoadAvg())

	var loopCPU time.Duration
	runs := 0
	loopStart := time.Now()
	for end := loopStart.Add(20 * time.Second); time.Now().Before(end); runs++ {
		loopCPU += childrenCPU(t, exec.Command(filepath.Join(dir, fmt.Sprintf("nxv-short-%d", runs%programs))))
	}
	loopEnd := time.Now()

	cpu := <-busyCPU
	oursBusy, plainBusy := p.waitPast(t, time.Now(), busyMark)
	oursBuild, err := countMarked(p.oursSink, buildMark)
	require.NoError(t, err)
	plainBuild, err := countMarked(p.plainSink, buildMark)
	require.NoError(t, err)
	isShort := func(attrs pcommon.Map) bool {
		v, ok := attrs.Get("process.executable.name")
		return ok && strings.HasPrefix(v.AsString(), "nxv-short-")
	}
	oursLoop, err := countMatching(p.oursSink, isShort, 0, 0)
	require.NoError(t, err)
	plainLoop, err := countMatching(p.plainSink, isShort, 0, 0)
	require.NoError(t, err)

	buildExp, loopExp, busyExp := buildCPU.Seconds()*rate, loopCPU.Seconds()*rate, cpu.Seconds()*rate
	t.Logf("figure: build of 120 gcc -O2 -g compiles, %.1f CPU-s in %s wall: expected %.0f samples (× %g/s); ours %d (%.0f%%), plain %d (%.0f%%); ours by executable %v; plain by executable %v",
		buildCPU.Seconds(), buildWall.Round(100*time.Millisecond), buildExp, rate,
		oursBuild.taken, pct(oursBuild.taken, buildExp), plainBuild.taken, pct(plainBuild.taken, buildExp), oursBuild.byExe, plainBuild.byExe)
	t.Logf("figure: loop of %d runs of %d short native programs (30 ms of CPU each), %.1f CPU-s in %s: expected %.0f samples; ours %d (%.0f%%), plain %d (%.0f%%)",
		runs, programs, loopCPU.Seconds(), loopEnd.Sub(loopStart).Round(100*time.Millisecond), loopExp,
		oursLoop.taken, pct(oursLoop.taken, loopExp), plainLoop.taken, pct(plainLoop.taken, loopExp))
	t.Logf("figure: busy thread, %.1f CPU-s in %s: expected %.0f samples; ours %d (%.1f%%; %d distinct), plain %d (%.1f%%; %d distinct); load %s",
		cpu.Seconds(), busyWall.Round(100*time.Millisecond), busyExp, oursBusy.taken, pct(oursBusy.taken, busyExp), len(oursBusy.distinct),
		plainBusy.taken, pct(plainBusy.taken, busyExp), len(plainBusy.distinct), testenv.LoadAvg())

	latency := map[string]float64{}
	for _, k := range []string{"_count", "_sum"} {
		v, err := scrapeMetric(p.ours.Cmd.Env, execSyncLatencyMetric+k)
		require.NoError(t, err)
		latency[k] = v
	}
	for _, le := range []string{"1", "5", "20", "100"} {
		v, err := scrapeMetric(p.ours.Cmd.Env, execSyncLatencyMetric+"_bucket", `le="`+le+`"`)
		require.NoError(t, err)
		latency["le"+le] = v
	}
	for _, read := range []string{"read", "gone", "not_read"} {
		v, err := scrapeMetric(p.ours.Cmd.Env, execSyncSampledMetric, `read="`+read+`"`)
		require.NoError(t, err)
		latency[read] = v
	}
	t.Logf("figure: execs watched for the synchronisation latency: read %.0f (mean %.2f ms; within 1 ms %.0f, 5 ms %.0f, 20 ms %.0f, 100 ms %.0f), gone before read %.0f, not read in 1 s %.0f",
		latency["read"], latency["_sum"]/max(latency["_count"], 1), latency["le1"], latency["le5"], latency["le20"], latency["le100"], latency["gone"], latency["not_read"])
	assert.Positive(t, latency["_count"], "no synchronisation latency recorded during the run")

	assert.GreaterOrEqual(t, float64(oursBuild.taken), 0.8*buildExp, "ours delivered less than 80% of the build's CPU time × rate")
	for _, want := range []string{"as", "ld", "collect2"} {
		assert.True(t, hasExe(oursBuild.byExe, want), "no samples of %s in ours: %v", want, oursBuild.byExe)
	}
	assert.GreaterOrEqual(t, float64(oursLoop.taken), 0.7*loopExp, "ours delivered less than 70% of the short programs' CPU time × rate")
	for i := range programs {
		service := fmt.Sprintf("unknown_service:nxv-short-%d", i)
		assert.True(t, hasFunction(srv.TopLeafFunctions(service, 3), "nxv_short_work"), "%s's top leaf functions at the double: %v", service, srv.TopLeafFunctions(service, 3))
	}
	tol := busyTolerance(cpu, busyWall, rate)
	t.Logf("figure: busy thread tolerance ±%.1f%% (4%%, or 3 σ of which thread a tick finds on a CPU the thread had %.0f%% of)", 100*tol, 100*cpu.Seconds()/busyWall.Seconds())
	assert.InEpsilon(t, busyExp, float64(oursBusy.taken), tol, "ours: the busy thread's samples against its CPU time × rate")
	// The upstream profiler alone is the comparison, not what is checked:
	// in a clean-clone make test on 2026-12-06, with other engineers'
	// builds at idle priority on the machine (load 12), it missed 7.4% of
	// the busy thread's samples while ours read 100.8%.
	t.Logf("figure: busy thread against its CPU time × rate: ours %+.1f%%, plain %+.1f%% (tolerance ±%.1f%%)",
		100*(float64(oursBusy.taken)/busyExp-1), 100*(float64(plainBusy.taken)/busyExp-1), 100*tol)
}

// busyTolerance is the relative tolerance of a busy thread's samples
// against cpu × rate: 4%, or, when the thread had the CPU only part of the
// time (a shared machine), 3 σ of the binomial count of the wall × rate
// ticks that found it running (p = cpu / wall). 4%, not 2%: the thread
// runs beside the build and the loop of short programs, whose hundreds of
// execs a second the agent synchronises; over clean-clone runs ours read
// -2.3% to +1.0% of cpu × rate (-2.3% on a quiet machine, 2026-12-06,
// while upstream alone read +0.6%: the cost of those reads to the other
// processes' samples, which the closing note reports).
func busyTolerance(cpu, wall time.Duration, rate float64) float64 {
	p := min(cpu.Seconds()/wall.Seconds(), 1)
	ticks := wall.Seconds() * rate
	return max(0.04, 3*math.Sqrt(ticks*p*(1-p))/(ticks*p))
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

// Bounds of the shipped agent's cost in TestShortLivedExecStorm, over the
// 20 s of the storm, against the same agent with exec_sync_per_second 0 in
// the same run (figures in the receiver's README).
const (
	// stormMaxCPUOverNoSync bounds the agent's CPU time above the other's,
	// as a share of one CPU over the storm's wall time: an early
	// synchronisation cost about 0.3 ms of CPU when measured, so the
	// default rate (500 a second) costs about 15% of a CPU at most.
	stormMaxCPUOverNoSync = 0.25
	// stormMaxRSSOverNoSyncMiB bounds the agent's largest resident memory
	// above the other's (two agents alike differ by up to 70 MiB here).
	stormMaxRSSOverNoSyncMiB = 100
	// defaultExecSyncPerSecond is the receiver's DefaultExecSyncPerSecond.
	defaultExecSyncPerSecond = 500
	// execSyncMetric is otelcol_receiver_profiling_exec_sync_execs as the
	// agent's Prometheus endpoint names it.
	execSyncMetric = "otelcol_receiver_profiling_exec_sync_execs"
	// execSyncLatencyMetric and execSyncSampledMetric are the latency's
	// histogram (in ms) and the count of execs watched, by read.
	execSyncLatencyMetric = "otelcol_receiver_profiling_exec_sync_latency"
	execSyncSampledMetric = "otelcol_receiver_profiling_exec_sync_sampled"
)

// TestShortLivedExecStorm runs two shipped agents side by side, one with
// exec_sync_per_second at its default (ours) and one with it 0 (no early
// synchronisation), over a build (the 120 compiles of
// TestShortLivedProcesses) and then an exec storm: two programs running
// /bin/true one after the other as fast as they can for 20 s (thousands a
// second), beside a busy thread. Ours stays under the bounds above, counts
// the execs above its rate as over_rate, and keeps profiling the busy
// thread as the other agent does.
func TestShortLivedExecStorm(t *testing.T) {
	root := testenv.RepoRoot(t)
	dir := t.TempDir()
	src := filepath.Join(root, "tests", "e2e", "testdata", "shortlived")
	storm := filepath.Join(dir, "nxv-storm")
	run(t, dir, "gcc", "-O2", "-o", storm, filepath.Join(src, "storm.c"))
	burner := testenv.BuildGo(t, filepath.Join(root, "tests", "smoke", "testdata", "smokeburner"), "nxv-stormbusy")
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	srvNoSync := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	oursSink, ours := startAgentReceiving(t, srv, nil, "reporter_interval: 2s")
	noSyncSink, noSync := startAgentReceiving(t, srvNoSync, nil, "reporter_interval: 2s\nexec_sync_per_second: 0")

	buildMark := "nxv-stormbuild-" + filepath.Base(dir)
	uo, un := followAgent(t, ours), followAgent(t, noSync)
	build := exec.Command("sh", "-c", fmt.Sprintf(`for i in $(seq 120); do gcc -O2 -g -o %[1]s/unit %[2]s/unit.c || exit 1; done`, dir, src))
	build.Env = append(os.Environ(), "OTEL_SERVICE_NAME="+buildMark)
	start := time.Now()
	buildCPU := childrenCPU(t, build)
	t.Logf("figure: build of 120 compiles, %.1f CPU-s in %s: agent with early sync %s; without %s; load %s",
		buildCPU.Seconds(), time.Since(start).Round(100*time.Millisecond), uo.end(t), un.end(t), testenv.LoadAvg())

	synced0, err := scrapeMetric(ours.Cmd.Env, execSyncMetric, `outcome="synchronised"`)
	require.NoError(t, err)
	over0, err := scrapeMetric(ours.Cmd.Env, execSyncMetric, `outcome="over_rate"`)
	require.NoError(t, err)

	busyMark := "nxv-stormbusy-" + filepath.Base(dir)
	busy := testenv.Start(t, []string{"OTEL_SERVICE_NAME=" + busyMark}, burner, "40")
	uo, un = followAgent(t, ours), followAgent(t, noSync)
	const stormSeconds = 20
	busyStat0, err := testenv.ReadProcStat(busy.Cmd.Process.Pid)
	require.NoError(t, err)
	stormStart := time.Now()
	counts := make(chan string, 2)
	for range 2 {
		go func() {
			out, err := exec.Command(storm, fmt.Sprint(stormSeconds)).Output()
			if err != nil {
				t.Errorf("storm: %v", err)
			}
			counts <- strings.TrimSpace(string(out))
		}()
	}
	var execs int64
	for range 2 {
		var n int64
		fmt.Sscan(<-counts, &n)
		execs += n
	}
	stormEnd := time.Now()
	busyStat1, err := testenv.ReadProcStat(busy.Cmd.Process.Pid)
	require.NoError(t, err)
	wall := stormEnd.Sub(stormStart)
	uo.end(t)
	un.end(t)
	synced, err := scrapeMetric(ours.Cmd.Env, execSyncMetric, `outcome="synchronised"`)
	require.NoError(t, err)
	over, err := scrapeMetric(ours.Cmd.Env, execSyncMetric, `outcome="over_rate"`)
	require.NoError(t, err)
	busy.Stop(5 * time.Second)

	isBusy := func(attrs pcommon.Map) bool { return attrIs(attrs, "service.name", busyMark) }
	var busyOurs, busyNoSync markCount
	var seen string
	testenv.LastSeen(t, &seen)
	testenv.WaitFor(t, time.Minute, "both sinks past the storm's end", func() (bool, error) {
		var err error
		if busyOurs, err = countMatching(oursSink, isBusy, stormStart.UnixNano(), stormEnd.UnixNano()); err != nil {
			return false, err
		}
		if busyNoSync, err = countMatching(noSyncSink, isBusy, stormStart.UnixNano(), stormEnd.UnixNano()); err != nil {
			return false, err
		}
		after := stormEnd.Add(3 * time.Second).UnixNano()
		seen = fmt.Sprintf("latest sample ours %v, without early sync %v", time.Unix(0, busyOurs.latest), time.Unix(0, busyNoSync.latest))
		return busyOurs.latest > after && busyNoSync.latest > after, nil
	})

	t.Logf("figure: exec storm, %d execs in %s (%.0f/s): agent with early sync %s; without %s; synchronised at exec %.0f, over_rate %.0f; busy thread's samples during the storm: with %d, without %d; load %s",
		execs, wall.Round(100*time.Millisecond), float64(execs)/wall.Seconds(), uo, un, synced-synced0, over-over0, busyOurs.taken, busyNoSync.taken, testenv.LoadAvg())

	assert.Greater(t, float64(execs)/wall.Seconds(), float64(defaultExecSyncPerSecond), "the storm ran fewer execs a second than exec_sync_per_second: it tests nothing")
	assert.LessOrEqual(t, (uo.cpu-un.cpu).Seconds()/wall.Seconds(), stormMaxCPUOverNoSync, "the agent's CPU time above the one without early sync, per second of the storm")
	assert.LessOrEqual(t, float64(uo.rss-un.rss)/1024, float64(stormMaxRSSOverNoSyncMiB), "the agent's largest resident memory during the storm above the one without early sync (MiB)")
	// The program admits at most exec_sync_per_second execs in each second
	// of the kernel's clock: over the storm's seconds and a partial one at
	// each end.
	assert.LessOrEqual(t, synced-synced0, float64(defaultExecSyncPerSecond*(stormSeconds+2)), "execs synchronised early during the storm")
	assert.Greater(t, over-over0, 0.0, "no exec counted over_rate during a storm above the rate")
	assert.Positive(t, busyOurs.taken, "the agent stopped profiling the busy thread during the storm")
	// The agent's samples of the busy thread against its CPU time during
	// the storm × rate, no lower than busyTolerance (3 σ of which thread a
	// tick finds) allows: comparing the two agents' counts with each other
	// doubled that noise, and a fixed 90% floor failed a clean-clone run at
	// 89.97% (287 against 319, 2026-12-06) where earlier runs read 0.97 to
	// 1.07.
	rate := float64(agentSamplesPerSecond) // the shipped agent.yaml's, as these agents run it
	busyCPU := busyStat1.CPU - busyStat0.CPU
	busyExp := busyCPU.Seconds() * rate
	tol := busyTolerance(busyCPU, wall, rate)
	t.Logf("figure: busy thread during the storm, %.1f CPU-s in %s: expected %.0f samples; with early sync %d (%+.1f%%), without %d (%+.1f%%); tolerance ±%.1f%%",
		busyCPU.Seconds(), wall.Round(100*time.Millisecond), busyExp, busyOurs.taken, 100*(float64(busyOurs.taken)/busyExp-1),
		busyNoSync.taken, 100*(float64(busyNoSync.taken)/busyExp-1), 100*tol)
	// One-sided: what early sync could cost the other processes is
	// samples (both agents read +1.5% to +3.9% and -1.9% to +2.8% in three
	// quiet runs; a loss is what this guards against).
	assert.GreaterOrEqual(t, float64(busyOurs.taken), busyExp*(1-tol), "the busy thread's samples during the storm against its CPU time × rate, with early sync")
}
