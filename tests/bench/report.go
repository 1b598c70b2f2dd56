package bench

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// Report is the content of BENCHMARKS.md.
type Report struct {
	Started  time.Time
	Duration time.Duration // of the harness
	// MakeDuration is the wall time of `make bench` up to the report,
	// build included (0: not run by make).
	MakeDuration time.Duration
	Machine      Machine
	// LoadBefore and LoadAfter are /proc/loadavg at the start and the end:
	// the machine may be shared.
	LoadBefore, LoadAfter string
	// WakeBefore and WakeAfter are WakeupCost at the start and the end.
	WakeBefore, WakeAfter Wakeups
	Commands              []string
	Sections              []*Section
}

// Section is one benchmark of the report.
type Section struct {
	Title string
	Text  []string // paragraphs before the tables
	// Tables follow the text.
	Tables []Table
	Goals  []Goal
	// Err says why the section is incomplete ("" when it ran).
	Err string
}

// Table is a Markdown table.
type Table struct {
	Caption string
	Header  []string
	Rows    [][]string
}

// Goal is one goal of the issue and whether this run met it.
type Goal struct {
	Name     string
	Goal     string
	Measured string
	// Holds: the goal holds (for a goal made by AtMost, even at the bound
	// of the measurement's spread).
	Holds bool
	// Inconclusive: the median meets the goal but the spread's bound does
	// not, so the run cannot tell.
	Inconclusive bool
	// Lever is the next thing to try when the goal does not hold.
	Lever string
}

// Machine describes where the run happened.
type Machine struct {
	CPU       string
	Cores     int
	MemoryGiB float64
	Kernel    string
	Go        string
	OS        string
}

// ThisMachine reads the machine's description from /proc and the runtime.
func ThisMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, CPU: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPU = cpuModel(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemoryGiB = memTotalGiB(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

func cpuModel(cpuinfo string) string {
	sc := bufio.NewScanner(strings.NewReader(cpuinfo))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func memTotalGiB(meminfo string) float64 {
	sc := bufio.NewScanner(strings.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / (1 << 20)
		}
	}
	return 0
}

// Wakeups is what one probe of WakeupCost measured.
type Wakeups struct {
	N   int           // wake-ups
	CPU time.Duration // CPU time of the process over them
}

// PerWakeup is the CPU time per wake-up (0 without one).
func (w Wakeups) PerWakeup() time.Duration {
	if w.N == 0 {
		return 0
	}
	return w.CPU / time.Duration(w.N)
}

func (w Wakeups) String() string {
	if w.N == 0 {
		return "not measured"
	}
	return fmt.Sprintf("%s µs", Num(float64(w.PerWakeup().Nanoseconds())/1e3))
}

// wakeupPeriod is the probe's sleep, in the range of the agents' own
// timers (the eBPF profiler polls its perf buffers every 100 ms each, its
// trace ring every few ms).
const wakeupPeriod = 5 * time.Millisecond

// wakeupProbe is how long the harness probes WakeupCost, at its start and
// at its end.
const wakeupProbe = 3 * time.Second

// WakeupCost sleeps wakeupPeriod over and over for d and returns the CPU
// time the process spent per wake-up (getrusage). An idle agent's CPU is
// mostly such wake-ups (about 160 a second, tens of µs each): what the host
// charges for one (on a VM, the timer and scheduling exits) scales every
// figure of section 2, and has been seen to change tenfold over one VM's
// life. Call it while the process does nothing else.
func WakeupCost(d time.Duration) Wakeups {
	c0, t0 := processCPU(), time.Now()
	n := 0
	for time.Since(t0) < d {
		time.Sleep(wakeupPeriod)
		n++
	}
	return Wakeups{N: n, CPU: processCPU() - c0}
}

// processCPU is this process's CPU time; 0 if getrusage fails, which makes
// the probe read "0 µs" rather than stop the harness.
func processCPU() time.Duration {
	d, _ := testenv.OwnCPU()
	return d
}

// LoadAvg returns the first three fields of /proc/loadavg.
func LoadAvg() string {
	return testenv.LoadAvg()
}

// Write renders the report as Markdown.
func (r *Report) Write(w io.Writer) error {
	ew := &errWriter{w: w}
	p := ew.printf
	p("# otelcol-nexovue benchmarks\n\n")
	p("Written by `make bench` (tests/bench). Every figure is a ratio or a rate measured in this one run against a baseline measured in the same run, over several repetitions; the median is quoted with the spread of the repetitions (± the largest distance from the median to the fastest or slowest one) and their count. No absolute time is asserted anywhere; the times below are what this machine did during this run.\n\n")
	took := roundDur(r.Duration) + " in the harness"
	if r.MakeDuration > 0 {
		took += ", " + roundDur(r.MakeDuration) + " for all of `make bench` with its build"
	}
	p("Run %s, %s (load average %s at the start, %s at the end; the machine may have been shared with other work).\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 MST"), took, r.LoadBefore, r.LoadAfter)
	m := r.Machine
	p("| machine | |\n| --- | --- |\n| CPU | %s |\n| cores | %d |\n| memory | %.1f GiB |\n| kernel | %s |\n| OS | %s |\n| Go | %s |\n",
		m.CPU, m.Cores, m.MemoryGiB, m.Kernel, m.OS, m.Go)
	p("| CPU per timer wake-up of an idle Go process (time.Sleep(%s) for %s; start / end of the run) | %s / %s |\n\n",
		wakeupPeriod, wakeupProbe, r.WakeBefore, r.WakeAfter)

	var goals []Goal
	for _, s := range r.Sections {
		goals = append(goals, s.Goals...)
	}
	if len(goals) > 0 {
		p("## Goals\n\n")
		t := Table{Header: []string{"goal", "target", "measured (median)", "holds", "next lever"}}
		for _, g := range goals {
			lever := "—"
			if !g.Holds {
				lever = g.Lever
			}
			t.Rows = append(t.Rows, []string{g.Name, g.Goal, g.Measured, g.Verdict(), lever})
		}
		t.write(ew)
	}
	for _, s := range r.Sections {
		p("## %s\n\n", s.Title)
		if s.Err != "" {
			p("**Not complete in this run:** %s\n\n", s.Err)
		}
		for _, para := range s.Text {
			p("%s\n\n", para)
		}
		for _, t := range s.Tables {
			t.write(ew)
		}
	}
	if len(r.Commands) > 0 {
		p("## Commands\n\n```sh\n")
		for _, c := range r.Commands {
			p("%s\n", c)
		}
		p("```\n")
	}
	return ew.err
}

func (t Table) write(ew *errWriter) {
	if t.Caption != "" {
		ew.printf("%s\n\n", t.Caption)
	}
	row := func(cells []string) {
		ew.printf("|")
		for _, c := range cells {
			ew.printf(" %s |", strings.ReplaceAll(c, "|", `\|`))
		}
		ew.printf("\n")
	}
	row(t.Header)
	sep := make([]string, len(t.Header))
	for i := range sep {
		sep[i] = "---"
	}
	row(sep)
	for _, r := range t.Rows {
		row(r)
	}
	ew.printf("\n")
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// AtMost is the goal "ratio ≤ bound×" on a measurement with a spread: it
// holds when the largest repetition meets the bound, and is inconclusive
// when only the median does.
func AtMost(name string, bound float64, ratio Summary, lever string) Goal {
	return Goal{
		Name: name, Goal: "≤ " + Num(bound) + "×", Measured: WithSpread(ratio, "×"),
		Holds:        ratio.Max <= bound,
		Inconclusive: ratio.Median <= bound && ratio.Max > bound,
		Lever:        lever,
	}
}

// Verdict renders a goal's state: holds, inconclusive or no.
func (g Goal) Verdict() string {
	switch {
	case g.Holds:
		return "holds"
	case g.Inconclusive:
		return "**inconclusive**"
	}
	return "**no**"
}

// Num formats x with three significant digits and thousands separators
// for large values: 0.0123, 1.23, 123, 12,345.
func Num(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "n/a"
	case x == 0:
		return "0"
	}
	ax := math.Abs(x)
	if ax >= 1000 {
		return thousands(int64(math.Round(x)))
	}
	digits := max(0, 2-int(math.Floor(math.Log10(ax))))
	// 0.9996 rounds to 1.00, not 1.000: count digits after rounding.
	scale := math.Pow(10, float64(digits))
	if r := math.Round(ax*scale) / scale; r >= 1000 {
		return thousands(int64(math.Round(x)))
	} else if r > 0 {
		digits = max(0, 2-int(math.Floor(math.Log10(r))))
	}
	return strconv.FormatFloat(x, 'f', digits, 64)
}

func thousands(v int64) string {
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// WithSpread formats a summary as "median ± spread% (n=N)" with unit after
// the median (see Cell).
func WithSpread(s Summary, unit string) string {
	return fmt.Sprintf("%s (n=%d)", Cell(s, unit), s.N)
}

// Cell formats a summary as "median unit ± spread%", leaving the spread out
// when there is none (one repetition, or all equal).
func Cell(s Summary, unit string) string {
	if unit != "" && unit != "×" {
		unit = " " + unit
	}
	v := Num(s.Median) + unit
	if sp := s.Spread(); s.N > 1 && sp > 0 {
		v += " ± " + Num(sp) + "%"
	}
	return v
}

// Statuses formats answer counts by HTTP status: "200: 3,400; 413: 2".
func Statuses(byStatus map[int]int) string {
	if len(byStatus) == 0 {
		return "none"
	}
	codes := slices.Sorted(maps.Keys(byStatus))
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d: %s", c, thousands(int64(byStatus[c])))
	}
	return strings.Join(parts, "; ")
}

// MiB formats bytes as MiB.
func MiB(b float64) string { return Num(b/(1<<20)) + " MiB" }

// Reps lists repetitions in the order they ran.
func Reps(xs []float64, format func(float64) string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = format(x)
	}
	return strings.Join(parts, ", ")
}

func roundDur(d time.Duration) string {
	return d.Round(time.Second).String()
}

// NsCell formats a time per operation with a readable unit.
func NsCell(m Summary) string {
	if m.N == 0 {
		return ""
	}
	unit, scale := "ns", 1.0
	switch d := time.Duration(m.Median); {
	case d >= time.Second:
		unit, scale = "s", 1e9
	case d >= time.Millisecond:
		unit, scale = "ms", 1e6
	case d >= time.Microsecond:
		unit, scale = "µs", 1e3
	}
	return Cell(Summary{Median: m.Median / scale, Min: m.Min / scale, Max: m.Max / scale, N: m.N}, unit)
}

func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
