// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package execsync

import (
	"context"
	"encoding/binary"
	"math/bits"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/perf"
	"go.opentelemetry.io/ebpf-profiler/support"
	"golang.org/x/sys/unix"
)

// upstreamLikeMaps creates, in this process, maps with the names, types and
// sizes of upstream's (support/ebpf/interpreter_dispatcher.ebpf.c), so that
// FindMaps finds them as it finds upstream's in the collector.
func upstreamLikeMaps(t *testing.T) (pidEvents, inhibit, report, mappings *ebpf.Map) {
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
	mappings = mk(&ebpf.MapSpec{Name: PIDMappingsMap, Type: ebpf.LPMTrie, KeySize: 16, ValueSize: 16, MaxEntries: 1024, Flags: unix.BPF_F_NO_PREALLOC})
	return
}

// attach finds the maps upstreamLikeMaps made and attaches the program
// with perSecond, detached when the test ends.
func attach(t *testing.T, perSecond uint64) *Hook {
	t.Helper()
	maps, err := FindMaps()
	if err != nil {
		t.Fatal(err)
	}
	h, err := Attach(maps, perSecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func TestExecRecordsThePIDAndWakesUserSpaceOnce(t *testing.T) {
	pidEvents, inhibit, report, _ := upstreamLikeMaps(t)
	rd, err := perf.NewReader(report, os.Getpagesize())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	h := attach(t, 1000)

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
	pidEvents, _, _, _ := upstreamLikeMaps(t)
	const limit = 5
	h := attach(t, limit)
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

// TestLatencyFromExecToTheMarker: a process execs and lives 300 ms; once
// its exec is the last recorded, and 50 ms later, the test writes the
// marker upstream writes for a process it has read. Latency reports Read
// and at least those 50 ms; for a process that ends unread, Gone.
func TestLatencyFromExecToTheMarker(t *testing.T) {
	_, _, _, mappings := upstreamLikeMaps(t)
	h := attach(t, 1000)

	// Latency takes the last exec recorded: wait until it is the child's
	// (another process on the host may exec just after it: a few tries).
	var start time.Time
	var pid uint32
	for try := 0; pid == 0; try++ {
		if try == 5 {
			t.Fatal("in 5 tries, the child's exec was never the last one recorded")
		}
		start = time.Now()
		cmd := exec.Command("/bin/sleep", "0.3")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Wait()
		for range 300 {
			v := make([]byte, stateSize)
			if err := h.state.Lookup(uint32(0), v); err != nil {
				t.Fatal(err)
			}
			if id := uint32(getU64(v[offLastID:]) >> 32); id == uint32(cmd.Process.Pid) {
				pid = id
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		key := support.PIDPage{PrefixLen: support.BitWidthPID + support.BitWidthPage, Pid: bits.ReverseBytes32(pid)}
		if err := mappings.Put(&key, make([]byte, 16)); err != nil {
			t.Error(err)
		}
	}()
	d, outcome, err := h.Latency(context.Background())
	if err != nil || outcome != Read {
		t.Fatalf("Latency = %v, %d, %v; want Read", d, outcome, err)
	}
	if d < 50*time.Millisecond || d > time.Since(start) {
		t.Errorf("latency %v; want from 50 ms to %v", d, time.Since(start))
	}
	t.Logf("latency %v", d)

	// Another process on the host may exec after /bin/true and be the last
	// exec: a few tries.
	outcome = -1
	for i := 0; i < 10 && outcome != Gone; i++ {
		if err := exec.Command("/bin/true").Run(); err != nil {
			t.Fatal(err)
		}
		_, outcome, _ = h.Latency(context.Background())
	}
	if outcome != Gone {
		t.Errorf("a process that ended unread: outcome %d, want Gone (%d)", outcome, Gone)
	}
}

// TestFindMapsRefusesAnotherLayout: a pid_events map with other sizes than
// upstream's (a later upstream version) is not written to.
func TestFindMapsRefusesAnotherLayout(t *testing.T) {
	for _, spec := range []*ebpf.MapSpec{
		{Name: PIDEventsMap, Type: ebpf.Hash, KeySize: 4, ValueSize: 1, MaxEntries: 16},
		{Name: InhibitEventsMap, Type: ebpf.Hash, KeySize: 4, ValueSize: 1, MaxEntries: 2},
		{Name: ReportEventsMap, Type: ebpf.PerfEventArray},
	} {
		m, err := ebpf.NewMap(spec)
		if err != nil {
			t.Fatalf("this test needs eBPF (run as root on Linux 5.x+): creating %s: %v", spec.Name, err)
		}
		defer m.Close()
	}
	_, err := FindMaps()
	if err == nil || !strings.Contains(err.Error(), "pid_events is a Hash with 4-byte keys") {
		t.Fatalf("FindMaps: %v; want a refusal naming pid_events and its layout", err)
	}
}
