// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package execsync

import (
	"encoding/binary"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/perf"
	"go.opentelemetry.io/ebpf-profiler/support"
)

// upstreamLikeMaps creates, in this process, maps with the names, types and
// sizes of upstream's (support/ebpf/interpreter_dispatcher.ebpf.c), so that
// FindMaps finds them as it finds upstream's in the collector.
func upstreamLikeMaps(t *testing.T) (pidEvents, inhibit, report *ebpf.Map) {
	t.Helper()
	mk := func(spec *ebpf.MapSpec) *ebpf.Map {
		m, err := ebpf.NewMap(spec)
		if err != nil {
			t.Fatalf("this test needs eBPF (run as root on Linux 5.x+): creating %s: %v", spec.Name, err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	pidEvents = mk(&ebpf.MapSpec{Name: PIDEventsMap, Type: ebpf.Hash, KeySize: 8, ValueSize: 1, MaxEntries: 65536})
	inhibit = mk(&ebpf.MapSpec{Name: InhibitEventsMap, Type: ebpf.Hash, KeySize: 4, ValueSize: 1, MaxEntries: 2})
	report = mk(&ebpf.MapSpec{Name: ReportEventsMap, Type: ebpf.PerfEventArray})
	return
}

func TestExecRecordsThePIDAndWakesUserSpaceOnce(t *testing.T) {
	pidEvents, inhibit, report := upstreamLikeMaps(t)
	rd, err := perf.NewReader(report, os.Getpagesize())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	maps, err := FindMaps()
	if err != nil {
		t.Fatal(err)
	}
	h, err := Attach(maps, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	var pids []int
	for range 3 {
		cmd := exec.Command("/bin/true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, cmd.Process.Pid)
	}
	for _, pid := range pids {
		key := uint64(pid)<<32 | uint64(pid)
		var v uint8
		if err := pidEvents.Lookup(key, &v); err != nil || v != 1 {
			t.Errorf("pid_events[%d<<32|%d] = %d, %v; want 1 (true)", pid, pid, v, err)
		}
	}
	rd.SetDeadline(time.Now().Add(2 * time.Second))
	rec, err := rd.Read()
	if err != nil {
		t.Fatalf("no event in report_events: %v", err)
	}
	if got := binary.LittleEndian.Uint32(rec.RawSample); got != support.EventTypeGenericPID {
		t.Errorf("event type %d, want %d (EventTypeGenericPID)", got, support.EventTypeGenericPID)
	}
	var latched uint8
	if err := inhibit.Lookup(uint32(support.EventTypeGenericPID), &latched); err != nil {
		t.Errorf("inhibit_events holds no latch after the event: %v", err)
	}
	st, err := h.State()
	if err != nil {
		t.Fatal(err)
	}
	// Other processes on the host exec too: at least ours were counted,
	// and the latch let exactly one event through.
	if st.Synced < 3 || st.Triggered != 1 || st.Skipped != 0 || st.Failed != 0 {
		t.Errorf("state %+v; want Synced >= 3, Triggered 1, no skips or failures", st)
	}
	t.Logf("state %+v", st)
}

func TestExecsAboveTheRateAreCountedNotRecorded(t *testing.T) {
	pidEvents, _, _ := upstreamLikeMaps(t)
	maps, err := FindMaps()
	if err != nil {
		t.Fatal(err)
	}
	const limit = 5
	h, err := Attach(maps, limit)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for range 40 {
		if err := exec.Command("/bin/true").Run(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := h.State()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	it := pidEvents.Iterate()
	var k uint64
	var v uint8
	for it.Next(&k, &v) {
		n++
	}
	// 40 execs take well under a second here, but may straddle one window
	// boundary: at most two windows' worth are recorded.
	if st.Synced > 2*limit || uint64(n) != st.Synced || st.Skipped < 40-2*limit {
		t.Errorf("state %+v, %d entries in pid_events; want at most %d recorded (= entries) and the rest skipped", st, n, 2*limit)
	}
	t.Logf("state %+v, pid_events entries %d", st, n)
}
