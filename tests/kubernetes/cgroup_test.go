// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cgroups makes the "container" cgroups of the test's processes.
//
// This machine mounts cgroup v1 controllers under /sys/fs/cgroup/<controller>
// (cgroup v2 only as /sys/fs/cgroup/unified, with no controllers), like a
// node whose kubelet uses the cgroupfs driver on cgroup v1. Such a kubelet
// puts a container in <controller>/kubepods/<qos>/pod<uid>/<container id>,
// and /proc/<pid>/cgroup then ends each line with the 64-hex id, which is
// what the eBPF profiler reads as container.id. The test builds that layout
// under the pids controller (one that limits nothing unless asked), below a
// folder of its own so that it never meets another test's cgroups.
type cgroups struct {
	root string
	mu   sync.Mutex
	dirs []string // made, in order
}

// cgroupV1Pids is where the cgroup v1 pids controller is mounted.
const cgroupV1Pids = "/sys/fs/cgroup/pids"

func newCgroups(t testing.TB) *cgroups {
	t.Helper()
	base := cgroupV1Pids
	if _, err := os.Stat(filepath.Join(base, "cgroup.procs")); err != nil {
		t.Fatalf("no cgroup v1 pids hierarchy at %s (%v): the test builds a kubelet's cgroup layout there", base, err)
	}
	cg := &cgroups{root: filepath.Join(base, "nxv-k8s-test-"+randHex(t, 4))}
	t.Cleanup(func() {
		cg.mu.Lock()
		defer cg.mu.Unlock()
		// Children first; their processes are gone by now (process
		// cleanups run after this one, so kill them here).
		for i := len(cg.dirs) - 1; i >= 0; i-- {
			killAll(filepath.Join(cg.dirs[i], "cgroup.procs"))
			_ = os.Remove(cg.dirs[i])
		}
	})
	return cg
}

// dir makes (once) the cgroup at rel below the test's root and returns its
// cgroup.procs file.
func (cg *cgroups) dir(t testing.TB, rel string) string {
	t.Helper()
	cg.mu.Lock()
	defer cg.mu.Unlock()
	path := cg.root
	for _, part := range append([]string{""}, strings.Split(rel, "/")...) {
		path = filepath.Join(path, part)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatalf("make cgroup %s: %v", path, err)
		}
		cg.dirs = append(cg.dirs, path)
	}
	return filepath.Join(path, "cgroup.procs")
}

// killAll kills the processes of a cgroup and waits a moment for them to go.
func killAll(procs string) {
	for range 50 {
		b, err := os.ReadFile(procs)
		if err != nil || strings.TrimSpace(string(b)) == "" {
			return
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func randHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
