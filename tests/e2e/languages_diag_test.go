package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// agentSamplesPerSecond is samples_per_second of the shipped agent config:
// a program that used s seconds of CPU should send about s times this.
const agentSamplesPerSecond = 19

// procUsage is what /proc says of a program's process.
type procUsage struct {
	read time.Time // when it was read (zero: never)
	testenv.ProcStat
	exe string // the /proc/<pid>/exe link
}

// readProcUsage reads /proc/<pid>/stat and exe; false when the process is
// gone.
func readProcUsage(pid int) (procUsage, bool) {
	st, err := testenv.ReadProcStat(pid)
	if err != nil {
		return procUsage{}, false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		exe = "unreadable (" + err.Error() + ")"
	}
	return procUsage{read: time.Now(), ProcStat: st, exe: exe}, true
}

// shortProgram is a runtime whose service is short of samples at the double.
type shortProgram struct {
	name, service string
	pid           int
	usage         procUsage
	started       time.Time
	// functions are the functions in the stacks of the service's samples
	// at the double, as "name=samples", most first.
	functions []string
}

// languageDiagnosis says why runtimes may be short of samples: what their
// programs used of the CPU (from /proc, so that "did not run" is told from
// "ran, not profiled"), every service that did arrive at the double with its
// samples (a program's samples under another name show there), the eBPF
// profiler's counters of dropped or unwound samples, and the collector's
// warnings, errors and lines about the programs' PIDs.
func languageDiagnosis(short []shortProgram, atDouble map[string]int64, sinkPath string, collector *testenv.Process) string {
	var b strings.Builder
	sink, sinkErr := readSinkCounts(sinkPath)
	for _, p := range short {
		fmt.Fprintf(&b, "  %s: service %s, %d samples at the double; pid %d", p.name, p.service, atDouble[p.service], p.pid)
		if p.usage.read.IsZero() {
			b.WriteString(", /proc/<pid>/stat never read")
		} else {
			fmt.Fprintf(&b, " (%s, exe %s, state %s) used %s of CPU in its first %s: the profiler should have taken about %d samples of it (%d a second of CPU)",
				p.usage.Comm, p.usage.exe, p.usage.State, p.usage.CPU.Round(10*time.Millisecond),
				p.usage.read.Sub(p.started).Round(time.Second),
				int64(p.usage.CPU.Seconds()*agentSamplesPerSecond), agentSamplesPerSecond)
		}
		switch {
		case sinkErr != nil:
			fmt.Fprintf(&b, "; reading the file exporter's output failed: %v\n", sinkErr)
		case len(sink.byPID[int64(p.pid)]) == 0:
			fmt.Fprintf(&b, "; the file exporter's output holds no sample of pid %d\n", p.pid)
		default:
			fmt.Fprintf(&b, "; the file exporter's output holds, of pid %d: %s\n", p.pid, sink.byPID[int64(p.pid)])
		}
		if len(p.functions) > 0 {
			fmt.Fprintf(&b, "    functions in the stacks of its samples at the double: %s\n", strings.Join(p.functions, " "))
		}
	}
	fmt.Fprintf(&b, "  services at the double (sample records; identical stacks of one report share one): %s\n", serviceCounts(atDouble))
	if m := profilerCounters(collector); m != "" {
		fmt.Fprintf(&b, "  eBPF profiler counters (whole host; single-error-frame traces are dropped):\n%s", m)
	}
	if l := profilerLogLines(collector.Output(), short); l != "" {
		fmt.Fprintf(&b, "  collector log lines (warnings, errors, the programs' PIDs; the profiler logs attaching to an interpreter only at debug level):\n%s", l)
	} else {
		b.WriteString("  the collector logged no warning, error or line about the programs' PIDs (it logs attaching to an interpreter only at debug level)\n")
	}
	return b.String()
}

// sinkCount is what the file exporter wrote for one service (or one PID
// under one service): sample records, and the samples the profiler took
// (their timestamps; identical stacks of one report share a record).
type sinkCount struct{ records, taken int64 }

// sinkCounts is the file exporter's output per PID and service.
type sinkCounts struct {
	byPID map[int64]pidCounts
}

// pidCounts is one PID's sinkCount per service.
type pidCounts map[string]*sinkCount

func (c pidCounts) String() string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("service %q: %d sample records, %d samples taken", n, c[n].records, c[n].taken)
	}
	return strings.Join(parts, "; ")
}

// readSinkCounts reads the file exporter's output (JSON lines).
func readSinkCounts(path string) (sinkCounts, error) {
	out := sinkCounts{byPID: map[int64]pidCounts{}}
	err := testenv.ReadProfileLines(path, func(pd pprofile.Profiles) {
		for _, rp := range pd.ResourceProfiles().All() {
			attrs := rp.Resource().Attributes()
			service, pid := "", int64(-1)
			if v, ok := attrs.Get("service.name"); ok {
				service = v.AsString()
			}
			if v, ok := attrs.Get("process.pid"); ok {
				pid = v.Int()
			}
			pc := out.byPID[pid]
			if pc == nil {
				pc = pidCounts{}
				out.byPID[pid] = pc
			}
			c := pc[service]
			if c == nil {
				c = &sinkCount{}
				pc[service] = c
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, p := range sp.Profiles().All() {
					for _, smp := range p.Samples().All() {
						c.records++
						c.taken += int64(max(smp.TimestampsUnixNano().Len(), 1))
					}
				}
			}
		}
	})
	return out, err
}

// serviceCounts returns every service with its samples, most first.
func serviceCounts(m map[string]int64) string {
	var parts []string
	for _, c := range ingest.TopCounts(m, 0) {
		parts = append(parts, fmt.Sprintf("%q=%d", c.Function, c.Samples))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// profilerCounterParts are the parts of the names of the eBPF profiler's
// counters (exported on the collector's Prometheus endpoint) that tell
// where samples go: new and unknown-PC PID events, unwinding errors that
// end a trace in an error frame, V8 unwinding.
var profilerCounterParts = []string{
	"unsupported_anonymous_mapping", "wrong_text_section", "no_vma", "num_unknown_pc",
	"num_proc_new", "num_proc_exit", "pid_events", "reported_pids", "priority_event",
	"bpf_v8_", "agent_v8_symbolization", "empty_stack",
}

// profilerCounters scrapes the collector's Prometheus endpoint (the agent
// config's NEXOVUE_METRICS_HOST and _PORT) for the counters above.
func profilerCounters(collector *testenv.Process) string {
	host, port := metricsEndpoint(collector.Cmd.Env)
	if port == "" {
		return ""
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://%s:%s/metrics", host, port))
	if err != nil {
		return fmt.Sprintf("    (scraping them failed: %v)\n", err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, part := range profilerCounterParts {
			if strings.Contains(line, part) {
				// Labels (scope, instance) say nothing here.
				if i, j := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}'); i > 0 && j > i {
					line = line[:i] + line[j+1:]
				}
				fmt.Fprintf(&b, "    %s\n", line)
				break
			}
		}
	}
	if b.Len() == 0 {
		return fmt.Sprintf("    (none of %v on the endpoint: status %s)\n", profilerCounterParts, resp.Status)
	}
	return b.String()
}

// maxDiagnosisLogLines bounds the collector log lines of a diagnosis.
const maxDiagnosisLogLines = 40

// profilerLogLines returns the collector's warning and error lines and the
// lines that name one of the programs' PIDs, the last maxDiagnosisLogLines.
func profilerLogLines(out string, short []shortProgram) string {
	var pidRes []*regexp.Regexp
	for _, p := range short {
		pidRes = append(pidRes, regexp.MustCompile(fmt.Sprintf(`(?i)\bpid\b\W{0,3}%d\b`, p.pid)))
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		keep := strings.Contains(line, "\twarn\t") || strings.Contains(line, "\terror\t")
		for _, re := range pidRes {
			keep = keep || re.MatchString(line)
		}
		if keep {
			// The resource attributes repeat on every line.
			if i := strings.Index(line, "\t{\"resource\""); i > 0 {
				line = line[:i]
			}
			lines = append(lines, "    "+line)
		}
	}
	if len(lines) > maxDiagnosisLogLines {
		lines = append([]string{fmt.Sprintf("    (%d earlier lines left out)", len(lines)-maxDiagnosisLogLines)}, lines[len(lines)-maxDiagnosisLogLines:]...)
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
