// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package memlock // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/memlock"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// host is what Prepare asks of the system; tests replace it to simulate
// the probe's answers.
type host struct {
	// kernelRelease is uname -r.
	kernelRelease func() string
	// hardLimit is RLIMIT_MEMLOCK's hard limit in bytes.
	hardLimit func() (uint64, error)
	// canRaise reports whether RLIMIT_MEMLOCK can be raised to infinity, as
	// the profiler does.
	canRaise func() (bool, error)
	// memcgAccounting reports whether the kernel charges BPF memory to the
	// memory cgroup instead of RLIMIT_MEMLOCK.
	memcgAccounting func() (bool, error)
	// install installs Filter on every thread and reports whether it set
	// no_new_privs.
	install func() (bool, error)
}

var thisHost = host{
	kernelRelease:   kernelRelease,
	hardLimit:       hardLimit,
	canRaise:        canRaise,
	memcgAccounting: probeMemcgAccounting,
	install:         Install,
}

var (
	mu sync.Mutex
	// installed is set once the filter is on: it lasts as long as the
	// process, so a receiver started again (a reload) finds it there.
	installed bool
)

// Prepare makes the profiler's memlock calls work where they would fail and
// the limit does not apply, or returns an error saying what to grant. Call
// it before starting the profiler. See the package comment.
func Prepare(logger *zap.Logger) error {
	return thisHost.prepare(logger)
}

func (h host) prepare(logger *zap.Logger) error {
	mu.Lock()
	defer mu.Unlock()
	if installed {
		return nil
	}
	ok, err := h.canRaise()
	if err != nil {
		return err
	}
	if ok {
		// CAP_SYS_RESOURCE, or no hard limit: upstream's calls work.
		return nil
	}
	release := h.kernelRelease()
	limit := "unknown"
	if l, err := h.hardLimit(); err == nil {
		limit = formatLimit(l)
	}
	accounted, err := h.memcgAccounting()
	if err != nil {
		return fmt.Errorf("the eBPF profiler may not raise RLIMIT_MEMLOCK here (no CAP_SYS_RESOURCE) and "+
			"checking whether kernel %s charges BPF memory to the memory cgroup failed: %w", release, err)
	}
	if !accounted {
		return NeedsCapabilityError(release, limit)
	}
	setNNP, err := h.install()
	if err != nil {
		return fmt.Errorf("the eBPF profiler may not raise RLIMIT_MEMLOCK here (no CAP_SYS_RESOURCE); kernel %s "+
			"does not apply that limit to BPF memory, but making the profiler's call succeed failed: %w. "+
			"Grant CAP_SYS_RESOURCE instead (docker run --cap-add SYS_RESOURCE, or --privileged; "+
			"in Kubernetes, SYS_RESOURCE in the container's securityContext.capabilities.add)", release, err)
	}
	installed = true
	logger.Info("RLIMIT_MEMLOCK may not be raised here (no CAP_SYS_RESOURCE), but this kernel charges BPF memory "+
		"to the memory cgroup, so that limit does not apply to the eBPF profiler: its calls setting "+
		"RLIMIT_MEMLOCK now succeed without effect (a seccomp filter answers them; every other system call runs as usual)",
		zap.String("kernel", release),
		zap.String("memlock_hard_limit", limit),
		zap.Bool("no_new_privs_set", setNNP))
	return nil
}

// NeedsCapabilityError is the error where the kernel still charges BPF
// memory to RLIMIT_MEMLOCK and the process may not raise it.
func NeedsCapabilityError(release, hardLimit string) error {
	return fmt.Errorf("the eBPF profiler needs CAP_SYS_RESOURCE here: kernel %s charges BPF memory to "+
		"RLIMIT_MEMLOCK (hard limit %s), which only CAP_SYS_RESOURCE may raise, and this process lacks it "+
		"(Linux 5.11 and newer charge BPF memory to the memory cgroup and need no such grant). "+
		"Grant it: docker run --cap-add SYS_RESOURCE (or --privileged); in Kubernetes, add SYS_RESOURCE to the "+
		"chart's agent.capabilities (charts/otelcol-nexovue, whose least-privilege default drops it) or the "+
		"DaemonSet container's securityContext.capabilities.add, or run it privileged (agent.privileged)", release, hardLimit)
}

func formatLimit(b uint64) string {
	switch {
	case b == unix.RLIM_INFINITY:
		return "unlimited"
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d bytes", b)
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}

func hardLimit() (uint64, error) {
	var l unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, nil, &l); err != nil {
		return 0, err
	}
	return l.Max, nil
}

// canRaise tries what the profiler does, raising RLIMIT_MEMLOCK to infinity,
// and puts the limit back when it worked.
func canRaise() (bool, error) {
	var old unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, nil, &old); err != nil {
		return false, fmt.Errorf("reading RLIMIT_MEMLOCK: %w", err)
	}
	if old.Max == unix.RLIM_INFINITY {
		return true, nil
	}
	inf := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &inf, nil)
	if errors.Is(err, unix.EPERM) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("raising RLIMIT_MEMLOCK: %w", err)
	}
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &old, nil); err != nil {
		return false, fmt.Errorf("restoring RLIMIT_MEMLOCK: %w", err)
	}
	return true, nil
}

// probeMemcgAccounting creates a one-entry BPF array map with the soft
// RLIMIT_MEMLOCK at 0 (lowering a soft limit is always allowed), then puts the
// limit back. Where the kernel charges BPF memory to RLIMIT_MEMLOCK the map
// is refused with EPERM; where it charges the memory cgroup, it is created.
// An EPERM is told apart from a missing permission to create maps at all by
// creating the map again under the restored limit. It runs before the
// profiler starts, when nothing else in the process uses the limit.
func probeMemcgAccounting() (bool, error) {
	var old unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, nil, &old); err != nil {
		return false, fmt.Errorf("reading RLIMIT_MEMLOCK: %w", err)
	}
	zero := unix.Rlimit{Cur: 0, Max: old.Max}
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &zero, nil); err != nil {
		return false, fmt.Errorf("lowering RLIMIT_MEMLOCK for the probe: %w", err)
	}
	fd, mapErr := createProbeMap()
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &old, nil); err != nil {
		if mapErr == nil {
			unix.Close(fd)
		}
		return false, fmt.Errorf("restoring RLIMIT_MEMLOCK after the probe: %w", err)
	}
	if mapErr == nil {
		unix.Close(fd)
		return true, nil
	}
	if !errors.Is(mapErr, unix.EPERM) {
		return false, fmt.Errorf("creating a BPF map: %w", mapErr)
	}
	fd, err := createProbeMap()
	if err != nil {
		return false, fmt.Errorf("creating a BPF map failed even within RLIMIT_MEMLOCK (%w): "+
			"the eBPF profiler needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)", err)
	}
	unix.Close(fd)
	return false, nil
}

// createProbeMap is bpf(BPF_MAP_CREATE) of an array map with one 4-byte
// key and value. The attribute is the start of union bpf_attr.
func createProbeMap() (int, error) {
	attr := struct {
		mapType, keySize, valueSize, maxEntries, mapFlags uint32
	}{mapType: unix.BPF_MAP_TYPE_ARRAY, keySize: 4, valueSize: 4, maxEntries: 1}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
