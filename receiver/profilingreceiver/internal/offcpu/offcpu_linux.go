// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package offcpu // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/offcpu"

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"go.opentelemetry.io/ebpf-profiler/rlimit"
)

// HookPrefix is the prefix of the kernel symbols upstream attaches its
// off-CPU kprobe to (tracer.go: hookSymbolPrefix).
const HookPrefix = "finish_task_switch"

// Result is what Probe found.
type Result struct {
	// Available is true when a kprobe on one finish_task_switch symbol and
	// the sched_switch tracepoint could both be attached.
	Available bool
	// Missing names the kernel feature that is missing when !Available:
	// "CONFIG_KPROBES" when the kernel has no kprobe support, otherwise a
	// short description of what could not be attached.
	Missing string
	// Err is the error of the attach that failed (nil when Available).
	Err error
}

// Probe checks whether upstream's off-CPU hooks can be attached here.
func Probe() Result {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return Result{Missing: "/proc/kallsyms", Err: err}
	}
	defer f.Close()
	syms, err := HookSymbols(f)
	if err != nil {
		return Result{Missing: "/proc/kallsyms", Err: err}
	}
	// As upstream around its own loads: where RLIMIT_MEMLOCK still limits
	// BPF memory (Linux 5.10) a small limit would otherwise fail the probe's
	// loads, not the attaches it means to test. Without CAP_SYS_RESOURCE the
	// raise fails and the probe runs as it is (5.11+ does not need it; on
	// 5.10 the receiver's memlock step refuses to start anyway).
	if restore, err := rlimit.MaximizeMemlock(); err == nil {
		defer restore()
	}
	return probe(syms, attachKprobe, attachTracepoint, kernelHasKprobes)
}

// kprobeFiles are where a kernel with CONFIG_KPROBES (and its kprobe
// events) shows them: the kprobe PMU that perf_event_open uses, and the
// tracefs file cilium/ebpf falls back to.
var kprobeFiles = []string{
	"/sys/bus/event_source/devices/kprobe/type",
	"/sys/kernel/tracing/kprobe_events",
	"/sys/kernel/debug/tracing/kprobe_events",
}

func kernelHasKprobes() bool {
	for _, f := range kprobeFiles {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

// probe runs the two steps in upstream's order: a kprobe on any of syms,
// then the sched_switch tracepoint.
func probe(syms []string, kprobe func(sym string) error, tracepoint func() error, hasKprobes func() bool) Result {
	if len(syms) == 0 {
		return Result{Missing: "kernel symbol " + HookPrefix, Err: errors.New("no " + HookPrefix + " symbols in /proc/kallsyms")}
	}
	var errs []error
	attached := false
	for _, s := range syms {
		err := kprobe(s)
		if err == nil {
			attached = true
			break
		}
		errs = append(errs, fmt.Errorf("kprobe %s: %w", s, err))
	}
	if !attached {
		err := errors.Join(errs...)
		missing := "a kprobe on " + HookPrefix
		if errors.Is(err, link.ErrNotSupported) || errors.Is(err, ebpf.ErrNotSupported) || !hasKprobes() {
			missing = "CONFIG_KPROBES"
		}
		return Result{Missing: missing, Err: err}
	}
	if err := tracepoint(); err != nil {
		return Result{Missing: "the sched/sched_switch tracepoint", Err: fmt.Errorf("tracepoint sched/sched_switch: %w", err)}
	}
	return Result{Available: true}
}

// HookSymbols returns the names in a /proc/kallsyms listing that start with
// HookPrefix (kernel symbols only, as upstream's kallsyms.Kernel module:
// lines with a [module] suffix are left out).
func HookSymbols(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			continue // a module's symbol: "addr type name [module]"
		}
		if strings.HasPrefix(fields[2], HookPrefix) {
			out = append(out, fields[2])
		}
	}
	return out, sc.Err()
}

func returnZero(typ ebpf.ProgramType) (*ebpf.Program, error) {
	return ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "nxv_offcpu_probe",
		Type:         typ,
		License:      "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
}

func attachKprobe(sym string) error {
	prog, err := returnZero(ebpf.Kprobe)
	if err != nil {
		return err
	}
	defer prog.Close()
	l, err := link.Kprobe(sym, prog, nil)
	if err != nil {
		return err
	}
	return l.Close()
}

func attachTracepoint() error {
	prog, err := returnZero(ebpf.TracePoint)
	if err != nil {
		return err
	}
	defer prog.Close()
	l, err := link.Tracepoint("sched", "sched_switch", prog, nil)
	if err != nil {
		return err
	}
	return l.Close()
}
