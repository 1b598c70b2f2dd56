// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package memlock lets the eBPF profiler start where the process may not
// raise RLIMIT_MEMLOCK but the kernel no longer uses that limit for BPF
// memory.
//
// The upstream profiler raises RLIMIT_MEMLOCK to infinity around every load
// (go.opentelemetry.io/ebpf-profiler/rlimit.MaximizeMemlock), unconditionally,
// and stops with "failed to set temporary rlimit: operation not permitted"
// when the process lacks CAP_SYS_RESOURCE. Since Linux 5.11 the kernel charges
// BPF maps and programs to the memory cgroup and no longer checks
// RLIMIT_MEMLOCK for them, so there that call changes nothing but fails.
//
// Prepare runs in the receiver's Start, before the profiler's:
//
//   - If RLIMIT_MEMLOCK can be raised (CAP_SYS_RESOURCE, or a hard limit of
//     infinity), it does nothing: upstream's calls work as they are.
//   - Otherwise it probes, as cilium/ebpf's rlimit package does, whether the
//     kernel charges BPF memory to the memory cgroup: with the soft limit at
//     0, it creates a one-entry BPF array map. That succeeds only where
//     RLIMIT_MEMLOCK is not checked for BPF memory. The limit is restored
//     right after.
//   - Accounted: it installs a seccomp filter (Filter) on every thread of the
//     process (SECCOMP_FILTER_FLAG_TSYNC; threads created later inherit it)
//     that answers 0 to the calls that set RLIMIT_MEMLOCK of the process
//     itself, without running them, and logs one info line saying so and why.
//   - Not accounted: it returns an error that names CAP_SYS_RESOURCE, the
//     kernel version and what to grant, in place of upstream's message.
//
// Installing a seccomp filter needs CAP_SYS_ADMIN, else the no_new_privs bit.
// Install tries without no_new_privs first, so a process that has
// CAP_SYS_ADMIN (docker --privileged, a privileged DaemonSet) keeps its
// no_new_privs bit as it was; only without CAP_SYS_ADMIN does it set
// no_new_privs, which changes nothing the collector does: it executes no
// program, and no_new_privs only stops an executed program from gaining
// privileges (setuid bits, file capabilities). In the least-privilege
// Kubernetes base it is already set (allowPrivilegeEscalation: false).
package memlock // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/memlock"
