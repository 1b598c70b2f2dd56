// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// CanRaiseMemlock reports whether a process started by this test may raise
// RLIMIT_MEMLOCK to infinity as the eBPF profiler does: the hard limit is
// already infinity, or it has CAP_SYS_RESOURCE. Where it may not, the
// profiling receiver logs its memlock line at start.
func CanRaiseMemlock(t testing.TB) bool {
	t.Helper()
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &l); err != nil {
		t.Fatalf("getrlimit(RLIMIT_MEMLOCK): %v", err)
	}
	if l.Max == unix.RLIM_INFINITY {
		return true
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatalf("read /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("parse CapEff %q: %v", v, err)
			}
			return caps&(1<<unix.CAP_SYS_RESOURCE) != 0
		}
	}
	t.Fatal("no CapEff line in /proc/self/status")
	return false
}
