//go:build bench

package bench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// microGroup is one `go test -bench` run: packages and how long each
// benchmark runs per repetition.
type microGroup struct {
	benchtime string
	pkgs      []string
}

// microGroups are the packages whose benchmarks the report collects: the
// processors, the exporter, the pprof conversion and the frame splitter.
// frame_limit's and symbolize's benchmarks copy a large batch outside the
// timer before every op, so a time budget would run them for minutes: they run a fixed
// number of ops.
func (h *harness) microGroups() []microGroup {
	if *flagQuick {
		return []microGroup{{"1x", []string{
			"./processor/servicenameprocessor", "./processor/framelimitprocessor", "./processor/symbolizeprocessor", "./exporter/nexovueexporter",
			"./receiver/pprofreceiver/...", "./internal/profilesplit",
		}}}
	}
	return []microGroup{
		{"100ms", []string{"./processor/servicenameprocessor", "./exporter/nexovueexporter", "./receiver/pprofreceiver/...", "./internal/profilesplit"}},
		{"20x", []string{"./processor/framelimitprocessor", "./processor/symbolizeprocessor"}},
	}
}

func (h *harness) microArgs(g microGroup) []string {
	args := []string{"test", "-run", "^$", "-bench", ".", "-benchmem",
		"-count", fmt.Sprint(h.p.microCount), "-benchtime", g.benchtime}
	return append(args, g.pkgs...)
}

func (h *harness) microCommands() []string {
	var out []string
	for _, g := range h.microGroups() {
		args := h.microArgs(g)
		for i, a := range args {
			if a == "^$" || a == "." {
				args[i] = "'" + a + "'"
			}
		}
		out = append(out, "go "+strings.Join(args, " "))
	}
	return out
}

// micro runs the components' Go benchmarks and reports the median of each
// metric over the repetitions.
func (h *harness) micro(t *testing.T, s *Section) {
	var res []GoBench
	for i, g := range h.microGroups() {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		cmd := exec.CommandContext(ctx, "go", h.microArgs(g)...)
		cmd.Dir = h.root
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		runErr := testenv.RunCmd(cmd) // ends with the test, its test binaries too
		cancel()
		out := buf.Bytes()
		r, err := ParseGoBench(out)
		if err != nil {
			fail(t, s, "reading the benchmark output: %v", err)
		}
		res = append(res, r...)
		if runErr != nil {
			s.Err += fmt.Sprintf("`%s` failed (%v); the results it printed are below. Its last lines:\n\n```\n%s\n```\n\n", h.microCommands()[i], runErr, LastLines(string(out), 15))
		}
	}
	s.Text = append(s.Text, fmt.Sprintf("From the repository root:\n\n```sh\n%s\n```\n\nEach cell is the median of the %d repetitions with the spread (± the largest distance from the median to another repetition, in percent), benchstat-style; n is the number of repetitions.",
		strings.Join(h.microCommands(), "\n"), h.p.microCount))
	sums := SummarizeGoBench(res)
	var pkgs []string
	for _, b := range sums {
		if len(pkgs) == 0 || pkgs[len(pkgs)-1] != b.Pkg {
			pkgs = append(pkgs, b.Pkg)
		}
	}
	for _, pkg := range pkgs {
		tab := Table{Caption: "`" + pkg + "`", Header: []string{"benchmark", "n", "time/op", "B/op", "allocs/op", "other metrics"}}
		for _, b := range sums {
			if b.Pkg != pkg {
				continue
			}
			cell := func(u string) string {
				if m, ok := b.Metrics[u]; ok {
					return Cell(m, "")
				}
				return ""
			}
			var other []string
			for _, u := range b.Units {
				if u != "ns/op" && u != "B/op" && u != "allocs/op" {
					other = append(other, Cell(b.Metrics[u], u))
				}
			}
			tab.Rows = append(tab.Rows, []string{strings.TrimPrefix(b.Name, "Benchmark"), fmt.Sprint(b.Metrics["ns/op"].N),
				NsCell(b.Metrics["ns/op"]), cell("B/op"), cell("allocs/op"), strings.Join(other, "; ")})
		}
		s.Tables = append(s.Tables, tab)
	}
	var none []string
	for _, g := range h.microGroups() {
		for _, p := range g.pkgs {
			name := strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/...")
			found := false
			for _, pkg := range pkgs {
				found = found || strings.Contains(pkg, "/"+name)
			}
			if !found {
				none = append(none, "`"+name+"`")
			}
		}
	}
	if len(none) > 0 {
		s.Text = append(s.Text, "No benchmark results from "+strings.Join(none, ", ")+" in this run.")
	}
}
