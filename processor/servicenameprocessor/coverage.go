// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor // import "github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor"

import (
	"sync"
	"time"
)

const (
	// maxCoveredProcesses bounds the processes tracked (about 40 bytes
	// each): far more than a node runs at once, and a bound on the memory
	// whatever the resources that come through carry. Past it, the expired
	// ones are forgotten first; a new process that still finds no room is
	// not counted (the gauge then undercounts, it never grows the memory).
	maxCoveredProcesses = 1 << 16
)

// processSeen is one process's last profile and the rule that named it then.
type processSeen struct {
	last int64 // unix nanoseconds
	src  source
}

// coverage counts the processes, told apart by process.pid, whose profiles
// went through the processor in the last window, by the rule that named
// them: the agent's coverage of its node. Resources without process.pid
// (from OTLP senders or the pprof receiver) are not processes of the node
// and are not counted.
type coverage struct {
	window time.Duration
	max    int

	mu        sync.Mutex
	processes map[int64]processSeen
	// pruned is when expired processes were last forgotten.
	pruned int64
}

func newCoverage(window time.Duration, maxProcesses int) *coverage {
	return &coverage{window: window, max: maxProcesses, processes: make(map[int64]processSeen)}
}

// begin starts recording the processes of one request, seen at now, and
// returns now for add; end must follow. The tracker stays locked between
// them: a request's resources are recorded without a slice of them
// (no allocation) and with one lock.
func (c *coverage) begin(now time.Time) int64 {
	t := now.UnixNano()
	c.mu.Lock()
	// Expired processes are forgotten at most once a window here (and at
	// every count), so that a request costs one map update per process.
	if t-c.pruned > int64(c.window) {
		c.prune(t)
	}
	return t
}

// add records the process pid, named by src, at t (from begin). A pid seen
// again takes the latest rule: the name a process is given may change
// (say, its pod was found).
func (c *coverage) add(t, pid int64, src source) {
	if _, ok := c.processes[pid]; !ok && len(c.processes) >= c.max {
		c.prune(t)
		if len(c.processes) >= c.max {
			return
		}
	}
	c.processes[pid] = processSeen{last: t, src: src}
}

// end ends what begin started.
func (c *coverage) end() { c.mu.Unlock() }

// counts returns, per rule, the processes seen in the window before now.
func (c *coverage) counts(now time.Time) [numSources]int64 {
	var n [numSources]int64
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prune(now.UnixNano())
	for _, p := range c.processes {
		n[p.src]++
	}
	return n
}

// prune forgets the processes not seen in the window before t. c.mu is held.
func (c *coverage) prune(t int64) {
	c.pruned = t
	for pid, p := range c.processes {
		if t-p.last > int64(c.window) {
			delete(c.processes, pid)
		}
	}
}
