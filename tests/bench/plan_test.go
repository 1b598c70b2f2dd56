//go:build bench

package bench

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// How long each section is planned to take, from its durations and counts
// and what starting and stopping its processes took in the last runs on a
// loaded 2-core machine. The agent-only run prints it at the start, and
// every run prints it beside what each section took; the busy processes'
// -for is derived from it, so that they cannot outlive the run by much.
const (
	agentPairSetup  = 25 * time.Second // start 8 agents, read, stop 8 agents
	pmRunSetup      = 5 * time.Second  // start and stop one agent
	overheadRunCost = 4 * time.Second  // start and stop the agent around a run
	gatewayRunSetup = 4 * time.Second
	splitRun        = 10 * time.Second
	microBudget     = 90 * time.Second
	// busyMargin is how long busy processes outlive their section's plan:
	// the section may run late on a loaded machine, and ends earlier.
	busyMargin = 10 * time.Minute
)

func (h *harness) agentPlanned() time.Duration {
	p := h.p
	return time.Duration(p.agentPairs) * (p.agentWarmup + p.agentWindow + agentPairSetup)
}

func (h *harness) pmPlanned() time.Duration {
	p := h.p
	return time.Duration(2*p.pmReps) * (p.pmWarmup + p.pmWindow + pmRunSetup)
}

func (h *harness) overheadPlanned() time.Duration {
	p := h.p
	return time.Duration(2*p.overheadPairs+2)*p.workTime + time.Duration(p.overheadPairs)*(p.settle+overheadRunCost)
}

// planned is the planned time of each section by name.
func (h *harness) planned() map[string]time.Duration {
	p := h.p
	return map[string]time.Duration{
		"overhead":        h.overheadPlanned(),
		"agent":           h.agentPlanned(),
		"gateway":         time.Duration(2*p.gatewayReps) * (p.gatewayWarmup + p.gatewayWindow + gatewayRunSetup),
		"split":           time.Duration(2*p.splitReps) * splitRun,
		"micro":           microBudget,
		"profile_metrics": h.pmPlanned(),
	}
}

// announce says how long the sections that will run should take.
func announce(plan map[string]time.Duration, names []string) string {
	var total time.Duration
	parts := make([]string, 0, len(names))
	for _, n := range names {
		total += plan[n]
		parts = append(parts, fmt.Sprintf("%s %s", n, plan[n].Round(time.Second)))
	}
	return fmt.Sprintf("make bench: the harness will take about %s (%s), after the build", total.Round(time.Second), strings.Join(parts, ", "))
}

// busyGroup is the busy benchload processes of a section.
type busyGroup []*testenv.Process

// startBusy starts p.busyProcs busy benchload processes, service(i) their
// OTEL_SERVICE_NAME ("" for none), that end by themselves busyMargin after
// the section's planned time (the test's cleanup stops them before).
func (h *harness) startBusy(t *testing.T, planned time.Duration, service func(int) string) busyGroup {
	t.Helper()
	life := (planned + busyMargin).Round(time.Second)
	var g busyGroup
	for i := range h.p.busyProcs {
		var env []string
		if name := service(i); name != "" {
			env = append(env, "OTEL_SERVICE_NAME="+name)
		}
		g = append(g, testenv.Start(t, env, h.load, "-for", life.String(), "-duty", strconv.FormatFloat(h.p.busyDuty, 'f', -1, 64), "busy", strconv.Itoa(i)))
	}
	return g
}

// alive fails the test if a busy process has ended (its -for ran out: the
// section ran far past its plan, and the load it measures changed).
func (g busyGroup) alive(t *testing.T) {
	t.Helper()
	for i, p := range g {
		if done, err := p.Exited(); done {
			t.Fatalf("busy process %d ended (%v) before its section did: the section ran past its planned time plus %s\n%s", i, err, busyMargin, p.Output())
		}
	}
}
