package ingest

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// WriteTop writes a plain-text table of a window for a person to read: a
// header line with the time and totals, the busiest services (samples and
// share of all samples, at most services rows), for each its hottest leaf
// functions (at most functions rows, with their share of the service's
// samples), and a line counting the answers by status.
func WriteTop(out io.Writer, w Window, services, functions int) error {
	bw := bufio.NewWriter(out)
	secs := w.End.Sub(w.Start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(w.Samples) / secs
	}
	var offCPU, ranked int64
	for _, n := range w.OffCPU {
		offCPU += n
	}
	for _, n := range w.Services {
		ranked += n
	}
	offNote := ""
	if offCPU > 0 {
		offNote = fmt.Sprintf(" (%d off-CPU samples among them, not ranked: waiting is not busy)", offCPU)
	}
	fmt.Fprintf(bw, "nexovue-ingest %s  busiest services in the last %s: %d samples (%.0f/s)%s from %d services\n",
		w.End.UTC().Format("2006-01-02 15:04:05 MST"), roundDuration(w.End.Sub(w.Start)), w.Samples, rate, offNote, len(w.Services))
	if ranked == 0 {
		fmt.Fprintln(bw, "  no samples accepted")
	} else {
		fmt.Fprintf(bw, "  %3s  %-*s %9s %7s\n", "#", nameWidth, "SERVICE, then its hottest functions (leaf samples)", "SAMPLES", "SHARE")
		byService := TopCounts(w.Services, 0)
		for i, svc := range byService {
			if i == services {
				var rest int64
				for _, r := range byService[i:] {
					rest += r.Samples
				}
				row(bw, "", fmt.Sprintf("(%d more services)", len(byService)-i), rest, ranked)
				break
			}
			row(bw, fmt.Sprint(i+1), serviceLabel(svc.Function), svc.Samples, ranked)
			for _, fn := range TopCounts(w.Leaf[svc.Function], functions) {
				row(bw, "", "  "+fn.Function, fn.Samples, svc.Samples)
			}
		}
		fmt.Fprintln(bw, "  SHARE: a service's share of all samples; a function's share of its service's samples")
		fmt.Fprintf(bw, "  linked to a span: %d samples (%.1f%%)\n", w.Linked, pct(w.Linked, w.Samples))
	}
	fmt.Fprintf(bw, "  answers: %s\n", answers(w))
	return bw.Flush()
}

// nameWidth is the width of the name column of WriteTop's table.
const nameWidth = 56

func row(w io.Writer, rank, name string, n, of int64) {
	fmt.Fprintf(w, "  %3s  %-*s %9d %6.1f%%\n", rank, nameWidth, clip(name, nameWidth), n, pct(n, of))
}

func answers(w Window) string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(w.Statuses)) {
		parts = append(parts, fmt.Sprintf("%d x%d", code, w.Statuses[code]))
	}
	if w.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("dropped x%d", w.Dropped))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// roundDuration rounds to whole seconds, or milliseconds below a second.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

func pct(n, of int64) float64 {
	return 100 * float64(n) / float64(cmp.Or(of, 1))
}

func serviceLabel(name string) string {
	if name == "" {
		return "(no service.name)"
	}
	return name
}

// clip shortens s to at most n runes, marking the cut with "...".
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}
