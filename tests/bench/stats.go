// Package bench is the benchmark harness behind `make bench`: it measures the
// built otelcol-nexovue against baselines measured in the same run and
// writes BENCHMARKS.md. The measurements are Go tests behind the build tag
// `bench` that run only with the flag -bench.run (harness_test.go), so
// `go test ./...` leaves them out; this file and report.go hold the pure helpers (medians, ratios,
// /proc readings, `go test -bench` parsing, the Markdown report), which
// stats_test.go tests.
package bench // import "github.com/nexovue/otelcol-nexovue/tests/bench"

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// Median returns the median of xs (the mean of the two middle values for an
// even count); NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Summary is the median of repetitions and their spread.
type Summary struct {
	Median, Min, Max float64
	N                int
}

// Summarize returns the Summary of xs.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	return Summary{Median: Median(xs), Min: slices.Min(xs), Max: slices.Max(xs), N: len(xs)}
}

// Spread is the largest distance from the median to the extremes, relative
// to the median, in percent: the "± x%" of a benchstat-style line.
func (s Summary) Spread() float64 {
	if s.N == 0 || s.Median == 0 {
		return math.NaN()
	}
	return 100 * math.Max(s.Max-s.Median, s.Median-s.Min) / math.Abs(s.Median)
}

// Ratios returns a[i]/b[i] for each pair.
func Ratios(a, b []float64) []float64 {
	n := min(len(a), len(b))
	out := make([]float64, n)
	for i := range n {
		out[i] = a[i] / b[i]
	}
	return out
}

// SlowdownPercent turns a time ratio (with/without) into a slowdown in
// percent: 1.012 -> 1.2.
func SlowdownPercent(ratio float64) float64 { return (ratio - 1) * 100 }

// ABBA returns the order of n runs of two variants that alternates them in
// pairs, A B B A A B ..., so that a drift of the machine falls on both
// alike. true stands for A.
func ABBA(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = (i%4 == 0) || (i%4 == 3)
	}
	return out
}

// ProcCPU returns the CPU time (user + system) that process pid has used,
// from /proc/<pid>/stat.
func ProcCPU(pid int) (time.Duration, error) {
	st, err := testenv.ReadProcStat(pid)
	return st.CPU, err
}

// ProcCPUClock returns the CPU time process pid has used, from its process
// CPU clock (clock_gettime on the clock ID made from the pid, as
// clock_getcpuclockid(3) makes it): the scheduler's count in nanoseconds
// for every thread of the process, those that ended included. /proc's
// utime+stime count in ticks of 10 ms, which is 4% of what an idle agent
// uses in 30 s; this clock leaves no such step.
func ProcCPUClock(pid int) (time.Duration, error) {
	var ts unix.Timespec
	// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) in the kernel's
	// include/linux/posix-timers.h.
	if err := unix.ClockGettime(int32(^pid<<3|2), &ts); err != nil {
		return 0, fmt.Errorf("bench: CPU clock of process %d: %w", pid, err)
	}
	return time.Duration(ts.Nano()), nil
}

// ProcMemory returns the peak resident set size (VmHWM) and the current one
// (VmRSS) of process pid in bytes, from /proc/<pid>/status.
func ProcMemory(pid int) (peak, current int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseStatusMemory(b)
}

func parseStatusMemory(b []byte) (peak, current int64, err error) {
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmHWM" && key != "VmRSS") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("bench: unexpected %s line %q", key, sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("bench: %s: %w", key, err)
		}
		if key == "VmHWM" {
			peak = kb << 10
		} else {
			current = kb << 10
		}
		found++
	}
	if found != 2 {
		return 0, 0, errors.New("bench: VmHWM or VmRSS missing from /proc status")
	}
	return peak, current, nil
}

// GoBench is one result line of `go test -bench`.
type GoBench struct {
	Pkg     string
	Name    string // without the -GOMAXPROCS suffix
	Iters   int64
	Metrics map[string]float64 // unit -> value, e.g. "ns/op" -> 1234
	Units   []string           // in the order printed
}

// ParseGoBench reads the output of `go test -bench` (several packages,
// -count repetitions) and returns its result lines in order.
func ParseGoBench(out []byte) ([]GoBench, error) {
	var res []GoBench
	pkg := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || len(f)%2 != 0 {
			continue // a benchmark's own log line
		}
		iters, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		b := GoBench{Pkg: pkg, Name: trimProcs(f[0]), Iters: iters, Metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("bench: %q: value %q: %w", line, f[i], err)
			}
			b.Metrics[f[i+1]] = v
			b.Units = append(b.Units, f[i+1])
		}
		res = append(res, b)
	}
	return res, sc.Err()
}

// trimProcs drops the "-N" GOMAXPROCS suffix go test adds to a name.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// BenchSummary is the median of every metric of one benchmark over its
// repetitions.
type BenchSummary struct {
	Pkg, Name string
	Units     []string
	Metrics   map[string]Summary
}

// SummarizeGoBench groups results by package and name (in first-seen order)
// and summarizes each metric.
func SummarizeGoBench(res []GoBench) []BenchSummary {
	var out []BenchSummary
	idx := map[[2]string]int{}
	values := map[[2]string]map[string][]float64{}
	for _, r := range res {
		k := [2]string{r.Pkg, r.Name}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, BenchSummary{Pkg: r.Pkg, Name: r.Name, Metrics: map[string]Summary{}})
			values[k] = map[string][]float64{}
		}
		for _, u := range r.Units {
			if _, seen := values[k][u]; !seen {
				out[i].Units = append(out[i].Units, u)
			}
			values[k][u] = append(values[k][u], r.Metrics[u])
		}
	}
	for i := range out {
		k := [2]string{out[i].Pkg, out[i].Name}
		for u, vs := range values[k] {
			out[i].Metrics[u] = Summarize(vs)
		}
	}
	return out
}

// Runs holds the measurements of two variants, A (ours) and B (the
// baseline), by metric, in the order they ran.
type Runs struct {
	a, b map[string][]float64
}

// Add records one run of variant A (a) or B (!a).
func (r *Runs) Add(a bool, metrics map[string]float64) {
	if r.a == nil {
		r.a, r.b = map[string][]float64{}, map[string][]float64{}
	}
	m := r.b
	if a {
		m = r.a
	}
	for k, v := range metrics {
		m[k] = append(m[k], v)
	}
}

// Of returns the values of metric for variant A (a) or B (!a).
func (r *Runs) Of(a bool, metric string) []float64 {
	if a {
		return r.a[metric]
	}
	return r.b[metric]
}

// Ratio summarizes A/B of metric over the pairs of runs (the i-th run of A
// with the i-th of B).
func (r *Runs) Ratio(metric string) Summary {
	return Summarize(Ratios(r.Of(true, metric), r.Of(false, metric)))
}
