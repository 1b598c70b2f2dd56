// Command perfattr tells where two collectors' CPU goes, from `perf script`
// output of each (perf record --call-graph fp, on a binary built with
// symbols: make build LDFLAGS=). Every sample is given to the component of
// its innermost frame that names one (so a gzip call inside the nexovue
// exporter counts for the exporter, a bbolt write under the exporter's queue
// for the persistent queue), and the table shows each component's samples in
// both profiles, and the difference as a share of the second's total:
//
//	go run ./tests/bench/cmd/perfattr -a ours=ours.txt -b plain=plain.txt
//
// The exporter README ("What the agent's CPU pays for") shows how the two
// profiles were taken.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// component is a part of the collector and the frames that belong to it.
type component struct {
	name   string
	frames []string // substrings of a frame's symbol
}

// components in the order they are tried on each frame, from the leaf up.
var components = []component{
	{"memory_limiter processor", []string{"memorylimiter"}},
	{"service_name processor", []string{"servicenameprocessor"}},
	{"symbolize processor", []string{"symbolizeprocessor"}},
	{"frame_limit processor", []string{"framelimitprocessor"}},
	{"persistent queue (queue_storage or bbolt file_storage, request encoding)", []string{"queuestorageextension", "go.etcd.io/bbolt", "storage/filestorage", "profilesEncoding", "persistentQueue"}},
	// Either exporter's gzip: the nexovue exporter's own, otlp_http's in
	// confighttp's transport.
	{"gzip", []string{"compress/flate", "compress/gzip", "klauspost/compress"}},
	{"nexovue exporter (encoding, HTTP)", []string{"nexovueexporter"}},
	{"otlp_http exporter (encoding, HTTP)", []string{"otlphttpexporter"}},
	{"exporter helper (in-memory queue, retry, telemetry)", []string{"exporter/exporterhelper"}},
	{"processor helper and pipeline", []string{"processorhelper", "fanoutconsumer", "refconsumer", "service/internal/graph"}},
	{"self-telemetry (OpenTelemetry SDK, Prometheus)", []string{"otel/sdk/metric", "prometheus"}},
	{"eBPF profiler (receiver)", []string{"ebpf-profiler", "cilium/ebpf"}},
	{"HTTP client and server", []string{"net/http"}},
	{"Go runtime: garbage collector", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge", "runtime.gcAssistAlloc"}},
	{"Go runtime: sysmon and scheduler", []string{"runtime.sysmon", "runtime.mstart", "runtime.mcall", "runtime.schedule", "runtime.findRunnable"}},
}

const other = "other"

// profile is one collector's samples per component.
type profile struct {
	name    string
	total   int
	samples map[string]int
}

// attribute reads `perf script` output: each sample is a header line and
// then one indented line per frame, leaf first, and ends with a blank line.
func attribute(name string, r io.Reader) (profile, error) {
	p := profile{name: name, samples: map[string]int{}}
	var frames []string
	flush := func() {
		if frames == nil {
			return
		}
		p.total++
		p.samples[classify(frames)]++
		frames = nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inSample := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
			inSample = false
		case line[0] == ' ' || line[0] == '\t':
			if !inSample {
				return p, fmt.Errorf("%s: a frame line before any sample header: %q", name, line)
			}
			frames = append(frames, symbol(line))
		default: // a sample's header
			flush()
			inSample = true
			frames = []string{}
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return p, fmt.Errorf("%s: %w", name, err)
	}
	if p.total == 0 {
		return p, fmt.Errorf("%s: no samples (is it `perf script` output?)", name)
	}
	return p, nil
}

// symbol is the function of a frame line, "\tADDR SYMBOL+OFF (DSO)",
// without the address, the offset and the file it is in.
func symbol(line string) string {
	f := strings.TrimSpace(line)
	if _, rest, ok := strings.Cut(f, " "); ok {
		f = rest
	}
	if i := strings.LastIndex(f, " ("); i >= 0 && strings.HasSuffix(f, ")") {
		f = f[:i]
	}
	if i := strings.LastIndex(f, "+0x"); i >= 0 {
		f = f[:i]
	}
	return f
}

// classify names the component of the innermost frame that has one.
func classify(frames []string) string {
	for _, f := range frames {
		for _, c := range components {
			for _, s := range c.frames {
				if strings.Contains(f, s) {
					return c.name
				}
			}
		}
	}
	return other
}

// table renders a and b side by side; the difference is (a - b) in samples
// as a share of b's total, so that the rows add up to a/b - 1 when both
// profiles sampled at the same rate over the same window.
func table(w io.Writer, a, b profile) {
	fmt.Fprintf(w, "| component | %s: samples | %s: samples | %s − %s, share of %s's total |\n| --- | --- | --- | --- |\n", a.name, b.name, a.name, b.name, b.name)
	names := make([]string, 0, len(components)+1)
	for _, c := range components {
		names = append(names, c.name)
	}
	names = append(names, other)
	for _, n := range names {
		x, y := a.samples[n], b.samples[n]
		if x == 0 && y == 0 {
			continue
		}
		fmt.Fprintf(w, "| %s | %d (%.1f%%) | %d (%.1f%%) | %+.2f%% |\n", n, x, pct(x, a.total), y, pct(y, b.total), pct(x-y, b.total))
	}
	fmt.Fprintf(w, "| **all** | %d | %d | **%+.2f%%** |\n", a.total, b.total, pct(a.total-b.total, b.total))
}

func pct(n, total int) float64 { return 100 * float64(n) / float64(total) }

func load(arg string) (profile, error) {
	name, path, ok := strings.Cut(arg, "=")
	if !ok || name == "" || path == "" {
		return profile{}, fmt.Errorf("want name=file, got %q", arg)
	}
	f, err := os.Open(path)
	if err != nil {
		return profile{}, err
	}
	defer f.Close()
	return attribute(name, f)
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("perfattr", flag.ContinueOnError)
	fs.SetOutput(stdout)
	a := fs.String("a", "", "name=file: `perf script` output of the first collector")
	b := fs.String("b", "", "name=file: `perf script` output of the collector to compare it with")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *a == "" || *b == "" {
		return errors.New("-a and -b are both required")
	}
	pa, err := load(*a)
	if err != nil {
		return fmt.Errorf("-a: %w", err)
	}
	pb, err := load(*b)
	if err != nil {
		return fmt.Errorf("-b: %w", err)
	}
	table(stdout, pa, pb)
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "perfattr:", err)
		}
		os.Exit(2)
	}
}
