// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package execsync // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/execsync"

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"go.opentelemetry.io/ebpf-profiler/support"
	"golang.org/x/sys/unix"
)

// Latency outcomes.
const (
	// Read: upstream had read the process (its marker in
	// pid_page_to_mapping_info appeared) after the returned time.
	Read = iota
	// Gone: the process ended before it was seen read.
	Gone
	// NotRead: neither within maxWait.
	NotRead
	// NoExec: no exec was recorded since the last call.
	NoExec
)

// latencyPoll is how often Latency looks for the marker: its figures are
// this coarse.
const latencyPoll = 200 * time.Microsecond

// maxWait bounds one Latency call.
const maxWait = time.Second

// Latency takes the last exec the program recorded, if it is not the one
// of the previous call, and waits (polling every 200 µs, at most 1 s) for
// upstream to have read the process: it returns the time from the exec to
// when the marker upstream writes for a process it has read
// (pid_page_to_mapping_info at the process's PID and page 0, as upstream's
// pid_information looks it up) was seen, and Read; or Gone, NotRead or
// NoExec with 0.
func (h *Hook) Latency(ctx context.Context) (time.Duration, int, error) {
	if h.maps.PIDMappings == nil {
		return 0, NoExec, errors.New("pid_page_to_mapping_info is not among this process's BPF maps")
	}
	v := make([]byte, stateSize)
	if err := h.state.Lookup(uint32(0), v); err != nil {
		return 0, NoExec, err
	}
	id, at := getU64(v[offLastID:]), getU64(v[offLastTime:])
	if id == 0 || id == h.lastID && at == h.lastTime {
		return 0, NoExec, nil
	}
	h.lastID, h.lastTime = id, at
	pid := uint32(id >> 32)
	key := support.PIDPage{PrefixLen: support.BitWidthPID + support.BitWidthPage, Pid: bits.ReverseBytes32(pid)}
	value := make([]byte, h.maps.PIDMappings.ValueSize())
	proc := fmt.Sprintf("/proc/%d", pid)
	tick := time.NewTicker(latencyPoll)
	defer tick.Stop()
	for deadline := time.Now().Add(maxWait); time.Now().Before(deadline); {
		err := h.maps.PIDMappings.Lookup(&key, value)
		if err == nil {
			return monotonicSince(at), Read, nil
		}
		if !errors.Is(err, ebpf.ErrKeyNotExist) {
			return 0, NotRead, err
		}
		if _, err := os.Stat(proc); err != nil {
			return 0, Gone, nil
		}
		select {
		case <-ctx.Done():
			return 0, NotRead, ctx.Err()
		case <-tick.C:
		}
	}
	return 0, NotRead, nil
}

// monotonicSince is the CLOCK_MONOTONIC time since ns (bpf_ktime_get_ns).
func monotonicSince(ns uint64) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano() - int64(ns))
}
