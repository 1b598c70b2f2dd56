package bench

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These test the harness's pure helpers; the measurements themselves run
// only with -tags bench and -bench.run (make bench).

func TestMedian(t *testing.T) {
	assert.True(t, math.IsNaN(Median(nil)))
	assert.Equal(t, 3.0, Median([]float64{5, 1, 3}))
	assert.Equal(t, 2.5, Median([]float64{4, 1, 3, 2}))
	xs := []float64{3, 1, 2}
	Median(xs)
	assert.Equal(t, []float64{3, 1, 2}, xs, "Median must not reorder its input")
}

func TestSummarizeAndSpread(t *testing.T) {
	s := Summarize([]float64{100, 90, 104, 101, 99})
	assert.Equal(t, Summary{Median: 100, Min: 90, Max: 104, N: 5}, s)
	assert.InDelta(t, 10.0, s.Spread(), 1e-9)
	assert.True(t, math.IsNaN(Summarize(nil).Median))
	assert.True(t, math.IsNaN(Summary{}.Spread()))
}

func TestRatiosAndSlowdown(t *testing.T) {
	assert.Equal(t, []float64{2, 0.5}, Ratios([]float64{2, 1, 7}, []float64{1, 2}))
	assert.InDelta(t, 1.2, SlowdownPercent(1.012), 1e-9)
	assert.InDelta(t, -0.5, SlowdownPercent(0.995), 1e-9)
}

func TestABBA(t *testing.T) {
	assert.Equal(t, []bool{true, false, false, true, true, false}, ABBA(6))
	// Each adjacent pair holds one of each.
	o := ABBA(10)
	for i := 0; i < len(o); i += 2 {
		assert.NotEqual(t, o[i], o[i+1], "pair %d", i/2)
	}
}

func TestParseStatusMemory(t *testing.T) {
	status := "Name:\totelcol\nVmPeak:\t  999 kB\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t12\n"
	peak, cur, err := parseStatusMemory([]byte(status))
	require.NoError(t, err)
	assert.Equal(t, int64(2048<<10), peak)
	assert.Equal(t, int64(1024<<10), cur)
	_, _, err = parseStatusMemory([]byte("Name:\tx\n"))
	assert.Error(t, err)
}

func TestProcOfThisProcess(t *testing.T) {
	cpu, err := ProcCPU(os.Getpid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, cpu, time.Duration(0))
	peak, cur, err := ProcMemory(os.Getpid())
	require.NoError(t, err)
	assert.Greater(t, cur, int64(0))
	assert.GreaterOrEqual(t, peak, cur)
}

// The process CPU clock counts what getrusage counts for this process, to
// the nanosecond instead of the tick, and fails for a process that is gone.
func TestProcCPUClock(t *testing.T) {
	before, err := ProcCPUClock(os.Getpid())
	require.NoError(t, err)
	var ru0, ru1 syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru0))
	// Burn at least 200 ms of CPU time in this thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	burnStart := threadCPU(t)
	x := uint64(1)
	for threadCPU(t)-burnStart < 200*time.Millisecond {
		for range 100000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru1))
	after, err := ProcCPUClock(os.Getpid())
	require.NoError(t, err)
	clock := after - before
	rusage := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
	assert.GreaterOrEqual(t, clock, 200*time.Millisecond, "x=%d", x)
	assert.InDelta(t, rusage.Seconds(), clock.Seconds(), 0.05, "process CPU clock %s, getrusage %s", clock, rusage)

	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	_, err = ProcCPUClock(cmd.Process.Pid)
	assert.Error(t, err, "the clock of a process that has been reaped")
}

func threadCPU(t *testing.T) time.Duration {
	var ts unix.Timespec
	require.NoError(t, unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts))
	return time.Duration(ts.Nano())
}

const goBenchOutput = `goos: linux
goarch: amd64
pkg: example.com/a
cpu: AMD EPYC
BenchmarkX-2   	     100	     12000 ns/op	  7.5 frames/s	  64 B/op	       2 allocs/op
BenchmarkX-2   	     100	     10000 ns/op	  8.5 frames/s	  64 B/op	       2 allocs/op
BenchmarkX-2   	     100	     11000 ns/op	  9.5 frames/s	  64 B/op	       2 allocs/op
BenchmarkY/sub-case-2         	  5	  300 ns/op
    bench_test.go:12: a log line of the benchmark
PASS
ok  	example.com/a	1.2s
pkg: example.com/b
BenchmarkX-2   	     10	     500 ns/op
PASS
`

func TestParseAndSummarizeGoBench(t *testing.T) {
	res, err := ParseGoBench([]byte(goBenchOutput))
	require.NoError(t, err)
	require.Len(t, res, 5)
	assert.Equal(t, "example.com/a", res[0].Pkg)
	assert.Equal(t, "BenchmarkX", res[0].Name)
	assert.Equal(t, "BenchmarkY/sub-case", res[3].Name, "only a numeric suffix is GOMAXPROCS")
	assert.Equal(t, []string{"ns/op", "frames/s", "B/op", "allocs/op"}, res[0].Units)

	sums := SummarizeGoBench(res)
	require.Len(t, sums, 3)
	assert.Equal(t, "example.com/a", sums[0].Pkg)
	assert.Equal(t, Summary{Median: 11000, Min: 10000, Max: 12000, N: 3}, sums[0].Metrics["ns/op"])
	assert.Equal(t, 8.5, sums[0].Metrics["frames/s"].Median)
	assert.Equal(t, []string{"ns/op", "frames/s", "B/op", "allocs/op"}, sums[0].Units)
	assert.Equal(t, "example.com/b", sums[2].Pkg)
	assert.Equal(t, 1, sums[2].Metrics["ns/op"].N)
}

func TestNum(t *testing.T) {
	for x, want := range map[float64]string{
		0: "0", 0.012345: "0.0123", 1.2345: "1.23", 12.345: "12.3", 123.45: "123",
		1234.5: "1,235", 0.99996: "1.00", 999.9: "1,000", 0.0999: "0.0999", 0.09999: "0.100", 1234567: "1,234,567", -2500: "-2,500", math.NaN(): "n/a",
	} {
		assert.Equal(t, want, Num(x), "%v", x)
	}
	assert.Equal(t, "1.50 MiB", MiB(1.5*(1<<20)))
	assert.Equal(t, "1.01× ± 1.98% (n=3)", WithSpread(Summary{Median: 1.01, Min: 0.99, Max: 1.02, N: 3}, "×"))
	assert.Equal(t, "5.00 ms (n=1)", WithSpread(Summary{Median: 5, Min: 5, Max: 5, N: 1}, "ms"))
	assert.Equal(t, "0", Cell(Summary{N: 3}, ""))
	assert.Equal(t, "7.00 B/op", Cell(Summary{Median: 7, Min: 7, Max: 7, N: 3}, "B/op"))
	assert.Equal(t, "200: 3,400; 413: 2", Statuses(map[int]int{413: 2, 200: 3400}))
	assert.Equal(t, "none", Statuses(nil))
	assert.Equal(t, "1.00, 2.50", Reps([]float64{1, 2.5}, Num))
}

// AtMost holds only at the bound of the spread, is inconclusive when only
// the median meets the bound, and fails when the median does not.
func TestAtMost(t *testing.T) {
	for _, c := range []struct {
		xs                  []float64
		holds, inconclusive bool
	}{
		{[]float64{1.02, 1.04, 1.05}, true, false},
		{[]float64{1.02, 1.04, 1.12}, false, true},
		{[]float64{1.08, 1.12, 1.15}, false, false},
	} {
		g := AtMost("cpu", 1.10, Summarize(c.xs), "lever")
		assert.Equal(t, c.holds, g.Holds, "%v", c.xs)
		assert.Equal(t, c.inconclusive, g.Inconclusive, "%v", c.xs)
		assert.Equal(t, "≤ 1.10×", g.Goal)
	}
}

func TestReportMarkdown(t *testing.T) {
	r := &Report{
		Started: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), Duration: 9*time.Minute + 30*time.Second, MakeDuration: 11 * time.Minute,
		Machine:    Machine{CPU: "Test CPU", Cores: 2, MemoryGiB: 24, Kernel: "6.1", Go: "go1.26", OS: "linux/amd64"},
		LoadBefore: "1.00 1.00 1.00", LoadAfter: "2.00 2.00 2.00",
		WakeBefore: Wakeups{N: 2, CPU: 30 * time.Microsecond}, WakeAfter: Wakeups{N: 4, CPU: 400 * time.Microsecond},
		Commands: []string{"make bench"},
		Sections: []*Section{{
			Title: "1. Overhead", Text: []string{"How it was measured."},
			Tables: []Table{{Header: []string{"a", "b|c"}, Rows: [][]string{{"1", "2"}}}},
			Goals: []Goal{
				{Name: "overhead", Goal: "< 1%", Measured: "0.5%", Holds: true, Lever: "unused"},
				{Name: "rate", Goal: "≥ 1", Measured: "0.5", Holds: false, Lever: "profile it"},
				{Name: "cpu", Goal: "≤ 1.10×", Measured: "1.08× ± 4%", Inconclusive: true, Lever: "measure longer"},
			},
		}, {Title: "2. Broken", Err: "it failed"}},
	}
	var buf bytes.Buffer
	require.NoError(t, r.Write(&buf))
	md := buf.String()
	for _, want := range []string{
		"# otelcol-nexovue benchmarks",
		"2026-12-02 12:00 UTC, 9m30s in the harness, 11m0s for all of `make bench` with its build",
		"| CPU | Test CPU |",
		"| cores | 2 |",
		"| CPU per timer wake-up of an idle Go process (time.Sleep(5ms) for 3s; start / end of the run) | 15.0 µs / 100 µs |",
		"| overhead | < 1% | 0.5% | holds | — |",
		"| cpu | ≤ 1.10× | 1.08× ± 4% | **inconclusive** | measure longer |",
		"| rate | ≥ 1 | 0.5 | **no** | profile it |",
		"## 1. Overhead\n\nHow it was measured.\n\n| a | b\\|c |\n| --- | --- |\n| 1 | 2 |\n",
		"## 2. Broken\n\n**Not complete in this run:** it failed",
		"## Commands\n\n```sh\nmake bench\n```",
	} {
		assert.Contains(t, md, want)
	}
	assert.Less(t, strings.Index(md, "## Goals"), strings.Index(md, "## 1. Overhead"))
}

func TestThisMachine(t *testing.T) {
	m := ThisMachine()
	assert.Positive(t, m.Cores)
	assert.NotEmpty(t, m.Go)
	assert.Equal(t, "Intel X", cpuModel("processor\t: 0\nmodel name\t: Intel X\n"))
	assert.InDelta(t, 2.0, memTotalGiB("MemTotal:       2097152 kB\n"), 1e-9)
}

func TestWakeupCost(t *testing.T) {
	w := WakeupCost(200 * time.Millisecond)
	// At most one wake-up per period, at least one in all.
	assert.Positive(t, w.N)
	assert.LessOrEqual(t, w.N, int(200*time.Millisecond/wakeupPeriod)+1)
	assert.Positive(t, w.CPU, "the process used no CPU time over %d wake-ups", w.N)
	assert.Equal(t, "not measured", Wakeups{}.String())
	assert.Equal(t, 100*time.Microsecond, Wakeups{N: 4, CPU: 400 * time.Microsecond}.PerWakeup())
	assert.Equal(t, "100 µs", Wakeups{N: 4, CPU: 400 * time.Microsecond}.String())
}

func TestRuns(t *testing.T) {
	var r Runs
	r.Add(true, map[string]float64{"cpu": 2, "rss": 10})
	r.Add(false, map[string]float64{"cpu": 1, "rss": 10})
	r.Add(false, map[string]float64{"cpu": 2, "rss": 20})
	r.Add(true, map[string]float64{"cpu": 3, "rss": 30})
	assert.Equal(t, []float64{2, 3}, r.Of(true, "cpu"))
	assert.Equal(t, []float64{1, 2}, r.Of(false, "cpu"))
	assert.Equal(t, Summary{Median: 1.75, Min: 1.5, Max: 2, N: 2}, r.Ratio("cpu"))
	assert.Equal(t, 1.25, r.Ratio("rss").Median)
	assert.Nil(t, r.Of(true, "none"))
}

func TestNsCellAndLastLines(t *testing.T) {
	assert.Equal(t, "", NsCell(Summary{}))
	assert.Equal(t, "1.50 ms ± 33.3%", NsCell(Summary{Median: 1.5e6, Min: 1e6, Max: 2e6, N: 3}))
	assert.Equal(t, "2.00 s", NsCell(Summary{Median: 2e9, Min: 2e9, Max: 2e9, N: 1}))
	assert.Equal(t, "850 ns", NsCell(Summary{Median: 850, Min: 850, Max: 850, N: 2}))
	assert.Equal(t, "b\nc", LastLines("a\nb\nc\n", 2))
}
