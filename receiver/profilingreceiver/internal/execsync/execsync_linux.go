// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux

// Package execsync asks the eBPF profiler to synchronise a process (read its
// mappings from /proc) when the process execs, instead of when the first
// sample of it is dropped.
//
// Upstream's unwinder drops a sample of a process it has not synchronised
// yet and only then records the process in its pid_events map and wakes its
// user space through its report_events perf event array (report_pid in
// support/ebpf/tracemgmt.h); a process that lives less than that round trip
// is never profiled. Program, a small eBPF program of ours on the
// sched/sched_process_exec tracepoint, does the same two things at exec: it
// records the exec'ing process in upstream's pid_events map and, unless
// upstream's inhibit_events latch says user space is already woken, sends
// the same one-field event to report_events. Upstream's own user space then
// drains pid_events and synchronises the process as for any reported PID.
// The maps are upstream's, found by name among the BPF maps this process
// holds (FindMaps); no upstream code runs or is changed.
//
// A rate limit (execs per second, in one-second windows of the kernel's
// monotonic clock) bounds what an exec storm costs: execs above it are
// counted and left to upstream's own reporting.
package execsync // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/execsync"

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"go.opentelemetry.io/ebpf-profiler/support"
)

// Names of upstream's maps (support/ebpf/interpreter_dispatcher.ebpf.c) as
// the kernel shows them.
const (
	PIDEventsMap     = "pid_events"
	ReportEventsMap  = "report_events"
	InhibitEventsMap = "inhibit_events"
	// PIDMappingsMap is pid_page_to_mapping_info, cut to the kernel's 15
	// characters of a map's name.
	PIDMappingsMap = "pid_page_to_map"
)

// Maps are upstream's maps that the program writes to, and the one that
// says which processes upstream has read.
type Maps struct {
	PIDEvents, ReportEvents, InhibitEvents *ebpf.Map
	// PIDMappings is pid_page_to_mapping_info (may be nil: Latency then
	// reports nothing).
	PIDMappings *ebpf.Map
}

// Close closes the descriptors FindMaps opened.
func (m *Maps) Close() {
	for _, x := range []*ebpf.Map{m.PIDEvents, m.ReportEvents, m.InhibitEvents, m.PIDMappings} {
		if x != nil {
			x.Close()
		}
	}
}

// FindMaps returns upstream's maps among the BPF maps that this process holds
// open (/proc/self/fd and fdinfo), so that another profiler on the host, with
// maps of the same names, is never written to.
func FindMaps() (*Maps, error) {
	return findMaps("/proc/self")
}

func findMaps(proc string) (*Maps, error) {
	ents, err := os.ReadDir(filepath.Join(proc, "fd"))
	if err != nil {
		return nil, err
	}
	found := map[string]*ebpf.Map{}
	seen := map[uint32]bool{}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(proc, "fd", e.Name()))
		if err != nil || target != "anon_inode:bpf-map" {
			continue
		}
		id, ok := fdinfoMapID(filepath.Join(proc, "fdinfo", e.Name()))
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		m, err := ebpf.NewMapFromID(ebpf.MapID(id))
		if err != nil {
			continue
		}
		info, err := m.Info()
		if err != nil {
			m.Close()
			continue
		}
		switch name := info.Name; name {
		case PIDEventsMap, ReportEventsMap, InhibitEventsMap, PIDMappingsMap:
			if found[name] != nil {
				m.Close()
				for _, x := range found {
					x.Close()
				}
				return nil, fmt.Errorf("more than one BPF map named %s in this process", name)
			}
			found[name] = m
		default:
			m.Close()
		}
	}
	maps := &Maps{PIDEvents: found[PIDEventsMap], ReportEvents: found[ReportEventsMap], InhibitEvents: found[InhibitEventsMap], PIDMappings: found[PIDMappingsMap]}
	if err := checkLayouts(found); err != nil {
		maps.Close()
		return nil, err
	}
	var missing []string
	for _, n := range []string{PIDEventsMap, ReportEventsMap, InhibitEventsMap} {
		if found[n] == nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		maps.Close()
		return nil, fmt.Errorf("the eBPF profiler's maps %s are not among this process's BPF maps", strings.Join(missing, ", "))
	}
	return maps, nil
}

// layout is what the program (and Latency) take a map of upstream's to be.
type layout struct {
	typ              ebpf.MapType
	keySize, valSize uint32 // 0: any (a perf event array's are the kernel's)
}

// layouts are upstream's maps at v0.0.202633
// (support/ebpf/interpreter_dispatcher.ebpf.c).
var layouts = map[string]layout{
	PIDEventsMap:     {ebpf.Hash, 8, 1},
	InhibitEventsMap: {ebpf.Hash, 4, 1},
	ReportEventsMap:  {ebpf.PerfEventArray, 0, 0},
	PIDMappingsMap:   {ebpf.LPMTrie, 16, 0},
}

// checkLayouts refuses maps whose type or sizes are not those the program
// was written for: an upstream version that changed them is not written to.
func checkLayouts(found map[string]*ebpf.Map) error {
	for name, m := range found {
		want := layouts[name]
		if m.Type() != want.typ || want.keySize != 0 && m.KeySize() != want.keySize || want.valSize != 0 && m.ValueSize() != want.valSize {
			return fmt.Errorf("the eBPF profiler's map %s is a %s with %d-byte keys and %d-byte values, not the %s with %d-byte keys and %d-byte values this receiver writes for",
				name, m.Type(), m.KeySize(), m.ValueSize(), want.typ, want.keySize, want.valSize)
		}
	}
	return nil
}

func fdinfoMapID(path string) (uint32, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "map_id:"); ok {
			id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			return uint32(id), err == nil
		}
	}
	return 0, false
}

// Offsets in the state map's one value (State).
const (
	offWindow    = 0
	offCount     = 8
	offLimit     = 16
	offSynced    = 24
	offSkipped   = 32
	offFailed    = 40
	offTriggered = 48
	offLastID    = 56 // the pid_events key of the last exec recorded
	offLastTime  = 64 // and when (bpf_ktime_get_ns: CLOCK_MONOTONIC)
	stateSize    = 72
)

// State is what the program counted since it was loaded.
type State struct {
	// Synced are the execs recorded in pid_events.
	Synced uint64
	// Skipped are the execs above the rate limit, not recorded.
	Skipped uint64
	// Failed are the execs whose pid_events update failed (the map full).
	Failed uint64
	// Triggered are the events sent to report_events (at most one per
	// user space wake-up, as upstream's latch allows).
	Triggered uint64
}

// Hook is the loaded and attached program.
type Hook struct {
	maps  *Maps
	state *ebpf.Map
	prog  *ebpf.Program
	link  link.Link
	// The exec Latency took last.
	lastID, lastTime uint64
}

// Attach loads the program with perSecond as its rate limit and attaches it
// to sched/sched_process_exec. Hook owns maps from then on; when Attach
// fails, it has closed them.
func Attach(maps *Maps, perSecond uint64) (h *Hook, err error) {
	defer func() {
		if err != nil {
			maps.Close()
		}
	}()
	if perSecond == 0 {
		return nil, errors.New("execsync: a rate of 0 execs per second attaches nothing")
	}
	state, err := ebpf.NewMap(&ebpf.MapSpec{Name: "nxv_execsync", Type: ebpf.Array, KeySize: 4, ValueSize: stateSize, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("execsync: creating its state map: %w", err)
	}
	v := make([]byte, stateSize)
	putU64(v[offLimit:], perSecond)
	if err := state.Put(uint32(0), v); err != nil {
		state.Close()
		return nil, fmt.Errorf("execsync: writing its rate limit: %w", err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "nxv_exec_sync",
		Type:         ebpf.TracePoint,
		License:      "GPL",
		Instructions: instructions(maps, state),
	})
	if err != nil {
		state.Close()
		return nil, fmt.Errorf("execsync: loading its program: %w", err)
	}
	l, err := link.Tracepoint("sched", "sched_process_exec", prog, nil)
	if err != nil {
		prog.Close()
		state.Close()
		return nil, fmt.Errorf("execsync: attaching to sched/sched_process_exec: %w", err)
	}
	return &Hook{maps: maps, state: state, prog: prog, link: l}, nil
}

// State reads the program's counters.
func (h *Hook) State() (State, error) {
	v := make([]byte, stateSize)
	if err := h.state.Lookup(uint32(0), v); err != nil {
		return State{}, err
	}
	return State{Synced: getU64(v[offSynced:]), Skipped: getU64(v[offSkipped:]), Failed: getU64(v[offFailed:]), Triggered: getU64(v[offTriggered:])}, nil
}

// Close detaches the program and closes what Attach and FindMaps opened.
func (h *Hook) Close() error {
	err := h.link.Close()
	h.prog.Close()
	h.state.Close()
	h.maps.Close()
	return err
}

func putU64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

func getU64(b []byte) uint64 {
	var v uint64
	for i := range 8 {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}

// Stack slots of the program.
const (
	slotPIDTID = -8  // u64 key of pid_events: tgid<<32 | pid, as upstream's report_pid
	slotZero   = -12 // u32 key 0 of the state map
	slotTrue   = -16 // u8 true, the value of pid_events and inhibit_events
	slotEvent  = -20 // u32 the event type, key of inhibit_events and the event sent
)

// instructions is the program. In C it would read:
//
//	u64 id = bpf_get_current_pid_tgid();
//	state *s = lookup(&nxv_execsync, &zero); if (!s) return 0;
//	u64 sec = bpf_ktime_get_ns() / 1e9;
//	if (s->window != sec) { s->window = sec; s->count = 0; }
//	if (__sync_add(&s->count, 1) > s->limit) { __sync_add(&s->skipped, 1); return 0; }
//	if (update(&pid_events, &id, &true, BPF_ANY)) { __sync_add(&s->failed, 1); return 0; }
//	__sync_add(&s->synced, 1);
//	s->last_id = id; s->last_time = bpf_ktime_get_ns();
//	if (lookup(&inhibit_events, &type)) return 0;
//	if (update(&inhibit_events, &type, &true, BPF_NOEXIST)) return 0;
//	perf_event_output(ctx, &report_events, BPF_F_CURRENT_CPU, &type, 4);
//	__sync_add(&s->triggered, 1);
//
// The window's reset races between CPUs; at worst a window admits a few
// execs more than the limit.
func instructions(maps *Maps, state *ebpf.Map) asm.Instructions {
	const (
		bpfAny     = 0
		bpfNoExist = 1
		currentCPU = 0xffffffff
	)
	count := func(off int16) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Imm(asm.R1, 1),
			asm.AddAtomic.Mem(asm.R7, asm.R1, asm.DWord, off),
		}
	}
	var in asm.Instructions
	add := func(x ...asm.Instruction) { in = append(in, x...) }
	add(
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, slotPIDTID, asm.R0, asm.DWord),
		asm.StoreImm(asm.RFP, slotZero, 0, asm.Word),
		asm.StoreImm(asm.RFP, slotTrue, 1, asm.Byte),
		asm.StoreImm(asm.RFP, slotEvent, int64(support.EventTypeGenericPID), asm.Word),
		asm.LoadMapPtr(asm.R1, state.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, slotZero),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.FnKtimeGetNs.Call(),
		asm.Div.Imm(asm.R0, 1000000000),
		asm.LoadMem(asm.R1, asm.R7, offWindow, asm.DWord),
		asm.JEq.Reg(asm.R1, asm.R0, "counted"),
		asm.StoreMem(asm.R7, offWindow, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R7, offCount, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 1).WithSymbol("counted"),
		asm.AddAtomic.Mem(asm.R7, asm.R1, asm.DWord, offCount),
		asm.LoadMem(asm.R1, asm.R7, offCount, asm.DWord),
		asm.LoadMem(asm.R2, asm.R7, offLimit, asm.DWord),
		asm.JGT.Reg(asm.R1, asm.R2, "skip"),
	)
	add(update(maps.PIDEvents, slotPIDTID, bpfAny)...)
	add(asm.JNE.Imm(asm.R0, 0, "failed"))
	add(count(offSynced)...)
	add(
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.R7, offLastTime, asm.R0, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, slotPIDTID, asm.DWord),
		asm.StoreMem(asm.R7, offLastID, asm.R1, asm.DWord),
	)
	add(
		asm.LoadMapPtr(asm.R1, maps.InhibitEvents.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, slotEvent),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "exit"),
	)
	add(update(maps.InhibitEvents, slotEvent, bpfNoExist)...)
	add(
		asm.JNE.Imm(asm.R0, 0, "exit"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.LoadMapPtr(asm.R2, maps.ReportEvents.FD()),
		asm.LoadImm(asm.R3, currentCPU, asm.DWord),
		asm.Mov.Reg(asm.R4, asm.RFP),
		asm.Add.Imm(asm.R4, slotEvent),
		asm.Mov.Imm(asm.R5, 4),
		asm.FnPerfEventOutput.Call(),
	)
	add(count(offTriggered)...)
	add(asm.Ja.Label("exit"))
	add(asm.Mov.Imm(asm.R1, 1).WithSymbol("skip"),
		asm.AddAtomic.Mem(asm.R7, asm.R1, asm.DWord, offSkipped),
		asm.Ja.Label("exit"))
	add(asm.Mov.Imm(asm.R1, 1).WithSymbol("failed"),
		asm.AddAtomic.Mem(asm.R7, asm.R1, asm.DWord, offFailed))
	add(asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"), asm.Return())
	return in
}

// update is bpf_map_update_elem(m, fp+keySlot, &true, flags).
func update(m *ebpf.Map, keySlot int32, flags int32) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, keySlot),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, slotTrue),
		asm.Mov.Imm(asm.R4, flags),
		asm.FnMapUpdateElem.Call(),
	}
}
