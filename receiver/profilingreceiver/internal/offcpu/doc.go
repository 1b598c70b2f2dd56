// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package offcpu says whether this kernel can attach what the upstream eBPF
// profiler's off-CPU profiling needs, before the profiler tries.
//
// Upstream (go.opentelemetry.io/ebpf-profiler v0.0.202633,
// tracer/tracer.go, StartOffCPUProfiling) attaches a kprobe, with
// cilium/ebpf's link.Kprobe, to every kernel symbol whose name starts with
// "finish_task_switch" (compilers rename it, e.g. finish_task_switch.isra.0),
// needs one of them to succeed, then attaches a program to the
// sched/sched_switch tracepoint with link.Tracepoint. When either fails,
// the controller (internal/controller/controller.go) returns the error and
// the whole receiver, so the collector, does not start: on a kernel built
// without CONFIG_KPROBES that is "failed to attach to one of 1 symbols with
// prefix 'finish_task_switch'".
//
// Probe does the same with two programs that only return 0 (raising
// RLIMIT_MEMLOCK around the loads where it may, as upstream does): it reads the
// symbols from /proc/kallsyms, attaches a kprobe to each until one holds,
// attaches the tracepoint, and detaches and unloads everything at once. Its
// Result names what is missing (CONFIG_KPROBES when no kprobe could be
// attached because the kernel has no kprobe support).
package offcpu // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/offcpu"
