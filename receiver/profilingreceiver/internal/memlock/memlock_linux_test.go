// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package memlock

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/ebpf-profiler/rlimit"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"
)

// childEnv selects what this test binary does when started by a test:
// "filter" runs filterChecks (the filter is installed in that child only, so
// the test binary itself is never filtered); "fewer-caps" first drops
// CAP_SYS_ADMIN and CAP_IPC_LOCK from the bounding set and executes itself
// again as "filter", so that Install has to set no_new_privs and mlock is
// bound by RLIMIT_MEMLOCK.
const childEnv = "MEMLOCK_TEST_CHILD"

// ChildEnv and ChildModes let the external tests of this folder run a child
// of this test binary: ChildEnv=<mode> runs ChildModes[mode] instead of the
// tests.
const ChildEnv = childEnv

var ChildModes = map[string]func() int{}

func TestMain(m *testing.M) {
	if f, ok := ChildModes[os.Getenv(childEnv)]; ok {
		os.Exit(f())
	}
	switch os.Getenv(childEnv) {
	case "filter":
		os.Exit(filterChecks())
	case "fewer-caps":
		runtime.LockOSThread() // the bounding set is per thread; Exec runs on this one
		for _, c := range []int{unix.CAP_SYS_ADMIN, unix.CAP_IPC_LOCK} {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
				println("child: PR_CAPBSET_DROP:", err.Error())
				os.Exit(3)
			}
		}
		os.Setenv(childEnv, "filter")
		err := syscall.Exec("/proc/self/exe", os.Args, os.Environ())
		println("child: exec:", err.Error())
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// filterChecks runs in a child process: it installs the filter the way
// Prepare does and prints one "name: result" line per check.
func filterChecks() int {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	say := func(name string, v any) { out.WriteString(name + ": " + toString(v) + "\n") }
	memlock := func() unix.Rlimit {
		var l unix.Rlimit
		if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, nil, &l); err != nil {
			say("get-memlock-error", err)
		}
		return l
	}
	inf := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}

	before := memlock()
	say("memlock-before", limitString(before))
	say("sys-admin", hasCap(unix.CAP_SYS_ADMIN))
	say("ipc-lock", hasCap(unix.CAP_IPC_LOCK))
	say("set-memlock-unfiltered", errString(unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &inf, nil)))
	if memlock() != before { // it worked (CAP_SYS_RESOURCE): put it back for the checks below
		_ = unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &before, nil)
	}

	// Threads that exist before the filter: TSYNC must give it to them too.
	type result struct{ err error }
	start, done := make(chan struct{}), make(chan result)
	for range 4 {
		ready := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			close(ready)
			<-start
			done <- result{unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &inf, nil)}
		}()
		<-ready
	}

	setNNP, err := Install()
	say("install", errString(err))
	say("set-no-new-privs", setNNP)
	say("no-new-privs", statusField("NoNewPrivs"))
	say("seccomp-mode", statusField("Seccomp"))

	close(start)
	threadsOK := true
	for range 4 {
		if r := <-done; r.err != nil {
			threadsOK = false
		}
	}
	say("set-memlock-on-older-threads", threadsOK)

	// What upstream's profiler does, through its own package.
	restore, err := rlimit.MaximizeMemlock()
	say("upstream-maximize", errString(err))
	if restore != nil {
		restore()
	}
	say("memlock-after-upstream", limitString(memlock()))

	var old unix.Rlimit
	say("prlimit-set-memlock", errString(unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &inf, &old)))
	say("prlimit-set-memlock-old", limitString(old)) // not run: left as it was (zero)
	zero := unix.Rlimit{}
	_, _, e := unix.RawSyscall(unix.SYS_SETRLIMIT, unix.RLIMIT_MEMLOCK, uintptr(unsafe.Pointer(&zero)), 0)
	say("setrlimit-memlock", errnoString(e))
	say("memlock-after-sets", limitString(memlock()))
	// prlimit64 on this process by its pid, not 0: runs for real.
	say("prlimit-by-pid", errString(unix.Prlimit(os.Getpid(), unix.RLIMIT_MEMLOCK, &inf, nil)))
	// Lowering the soft limit is allowed and runs for real; so does a read.
	lower := unix.Rlimit{Cur: before.Cur / 2, Max: before.Max}
	_ = unix.Prlimit(os.Getpid(), unix.RLIMIT_MEMLOCK, &lower, nil)
	say("memlock-lowered-by-pid", limitString(memlock()))
	_ = unix.Prlimit(os.Getpid(), unix.RLIMIT_MEMLOCK, &before, nil)

	// Another limit keeps its behaviour: above the hard limit is refused,
	// lowering the soft limit takes effect.
	var nofile unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile)
	above := unix.Rlimit{Cur: nofile.Max + 1, Max: nofile.Max + 1}
	say("nofile-above-hard", errString(unix.Setrlimit(unix.RLIMIT_NOFILE, &above)))
	low := unix.Rlimit{Cur: nofile.Cur - 1, Max: nofile.Max}
	say("nofile-lower", errString(unix.Setrlimit(unix.RLIMIT_NOFILE, &low)))
	var now unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &now)
	say("nofile-lowered-by", nofile.Cur-now.Cur)

	// Other system calls.
	say("getpid", unix.Getpid() == os.Getpid())
	_, err = os.ReadFile("/proc/self/status")
	say("read-file", errString(err))
	say("mlock-over-limit", errString(mlockOver(before.Cur)))

	// A thread created after the filter inherits it.
	newThread := make(chan error)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
		newThread <- unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &inf, nil)
	}()
	say("set-memlock-on-new-thread", errString(<-newThread))
	return 0
}

// mlockOver locks more memory than RLIMIT_MEMLOCK allows: the limit still
// applies to mlock, since only the calls that set it are answered.
func mlockOver(limit uint64) error {
	if limit == unix.RLIM_INFINITY {
		return errors.New("no limit")
	}
	b, err := unix.Mmap(-1, 0, int(limit)+2*os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return err
	}
	defer unix.Munmap(b)
	err = unix.Mlock(b)
	if err == nil {
		_ = unix.Munlock(b)
	}
	return err
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case uint64:
		return strconv.FormatUint(v, 10)
	}
	return "?"
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func errnoString(e syscall.Errno) string {
	if e == 0 {
		return "ok"
	}
	return e.Error()
}

func limitString(l unix.Rlimit) string {
	return strconv.FormatUint(l.Cur, 10) + "/" + strconv.FormatUint(l.Max, 10)
}

func statusField(name string) string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func hasCap(c uint) bool {
	v, err := strconv.ParseUint(statusField("CapEff"), 16, 64)
	return err == nil && v&(1<<c) != 0
}

// child runs this test binary as a child in mode and returns its lines.
func child(t *testing.T, mode string) map[string]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	t.Logf("child (%s):\n%s", mode, out)
	lines := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok {
			lines[k] = v
		}
	}
	return lines
}

// TestFilterInChild installs the filter in a child process on this kernel:
// the profiler's memlock calls succeed without changing the limit, on every
// thread; reads, calls on another pid, another limit and other system calls
// behave as without it.
func TestFilterInChild(t *testing.T) {
	for _, mode := range []string{"filter", "fewer-caps"} {
		t.Run(mode, func(t *testing.T) {
			c := child(t, mode)
			before := c["memlock-before"]
			require.NotEmpty(t, before)
			assert.Equal(t, "ok", c["install"])
			assert.Equal(t, "2", c["seccomp-mode"], "seccomp filter mode")
			if mode == "fewer-caps" {
				assert.Equal(t, "false", c["sys-admin"])
				assert.Equal(t, "false", c["ipc-lock"])
				assert.Equal(t, "true", c["set-no-new-privs"], "without CAP_SYS_ADMIN, no_new_privs is needed")
				assert.Equal(t, "1", c["no-new-privs"])
			} else if c["sys-admin"] == "true" {
				assert.Equal(t, "false", c["set-no-new-privs"], "with CAP_SYS_ADMIN, no_new_privs is left as it was")
				assert.Equal(t, "0", c["no-new-privs"])
			}
			// The memlock calls succeed, and change nothing.
			assert.Equal(t, "true", c["set-memlock-on-older-threads"])
			assert.Equal(t, "ok", c["set-memlock-on-new-thread"])
			assert.Equal(t, "ok", c["upstream-maximize"])
			assert.Equal(t, before, c["memlock-after-upstream"], "upstream's raise and restore leave the limit as it was")
			assert.Equal(t, "ok", c["prlimit-set-memlock"])
			assert.Equal(t, "0/0", c["prlimit-set-memlock-old"], "the call did not run")
			assert.Equal(t, "ok", c["setrlimit-memlock"])
			assert.Equal(t, before, c["memlock-after-sets"])
			// Everything else as usual.
			var l unix.Rlimit
			require.NoError(t, unix.Prlimit(0, unix.RLIMIT_MEMLOCK, nil, &l))
			if c["set-memlock-unfiltered"] != "ok" {
				// Without CAP_SYS_RESOURCE (as on this project's machines):
				// the same call on the pid runs, and is refused as before.
				assert.Equal(t, c["set-memlock-unfiltered"], c["prlimit-by-pid"])
				assert.Equal(t, "operation not permitted", c["prlimit-by-pid"])
				assert.Equal(t, "operation not permitted", c["nofile-above-hard"])
			}
			cur, _ := strconv.ParseUint(strings.Split(before, "/")[0], 10, 64)
			assert.Equal(t, strconv.FormatUint(cur/2, 10)+"/"+strings.Split(before, "/")[1], c["memlock-lowered-by-pid"])
			assert.Equal(t, "ok", c["nofile-lower"])
			assert.Equal(t, "1", c["nofile-lowered-by"], "lowering another limit takes effect")
			assert.Equal(t, "true", c["getpid"])
			assert.Equal(t, "ok", c["read-file"])
			if c["ipc-lock"] == "false" && l.Cur != unix.RLIM_INFINITY {
				assert.Contains(t, []string{"cannot allocate memory", "operation not permitted"}, c["mlock-over-limit"],
					"mlock is still bound by RLIMIT_MEMLOCK")
			}
		})
	}
	// The test process itself was never filtered.
	require.Equal(t, "0", statusField("Seccomp"))
}

// TestProbeOnThisKernel runs the real probes here: the kernel is 5.11 or
// newer (this project's machines run 6.x), so it accounts BPF memory to the
// memory cgroup; the probes leave the limit as they found it.
func TestProbeOnThisKernel(t *testing.T) {
	var before, after unix.Rlimit
	require.NoError(t, unix.Prlimit(0, unix.RLIMIT_MEMLOCK, nil, &before))
	accounted, err := probeMemcgAccounting()
	require.NoError(t, err, "the eBPF tests need CAP_BPF")
	raise, err := canRaise()
	require.NoError(t, err)
	require.NoError(t, unix.Prlimit(0, unix.RLIMIT_MEMLOCK, nil, &after))
	assert.Equal(t, before, after, "the probes restore the limit")
	assert.True(t, accounted, "kernel %s: BPF memory is expected to be charged to the memory cgroup", kernelRelease())
	assert.Equal(t, before.Max == unix.RLIM_INFINITY || hasCap(unix.CAP_SYS_RESOURCE), raise)
	t.Logf("kernel %s, RLIMIT_MEMLOCK %s, can raise it: %v, memcg accounting: %v", kernelRelease(), limitString(before), raise, accounted)
}

// fakeHost simulates the probes' answers.
func fakeHost(raise, accounted bool) (host, *int) {
	installs := 0
	return host{
		kernelRelease:   func() string { return "5.10.0-28-amd64" },
		hardLimit:       func() (uint64, error) { return 8 << 20, nil },
		canRaise:        func() (bool, error) { return raise, nil },
		memcgAccounting: func() (bool, error) { return accounted, nil },
		install:         func() (bool, error) { installs++; return true, nil },
	}, &installs
}

func resetInstalled(t *testing.T) {
	mu.Lock()
	installed = false
	mu.Unlock()
	t.Cleanup(func() { mu.Lock(); installed = false; mu.Unlock() })
}

// TestPrepareWithoutAccounting is what users see where the kernel charges BPF
// memory to RLIMIT_MEMLOCK and the capability is missing.
func TestPrepareWithoutAccounting(t *testing.T) {
	resetInstalled(t)
	h, installs := fakeHost(false, false)
	core, logs := observer.New(zap.DebugLevel)
	err := h.prepare(zap.New(core))
	require.Error(t, err)
	assert.Equal(t, "the eBPF profiler needs CAP_SYS_RESOURCE here: kernel 5.10.0-28-amd64 charges BPF memory to "+
		"RLIMIT_MEMLOCK (hard limit 8 MiB), which only CAP_SYS_RESOURCE may raise, and this process lacks it "+
		"(Linux 5.11 and newer charge BPF memory to the memory cgroup and need no such grant). "+
		"Grant it: docker run --cap-add SYS_RESOURCE (or --privileged); in Kubernetes, add SYS_RESOURCE to the "+
		"chart's agent.capabilities (charts/otelcol-nexovue, whose least-privilege default drops it) or the "+
		"DaemonSet container's securityContext.capabilities.add, or run it privileged (agent.privileged)", err.Error())
	assert.Zero(t, *installs, "no filter where the limit applies")
	assert.Zero(t, logs.Len())
}

func TestPrepareWithAccounting(t *testing.T) {
	resetInstalled(t)
	h, installs := fakeHost(false, true)
	core, logs := observer.New(zap.DebugLevel)
	require.NoError(t, h.prepare(zap.New(core)))
	require.NoError(t, h.prepare(zap.New(core)), "a second start (reload) finds the filter in place")
	assert.Equal(t, 1, *installs)
	require.Equal(t, 1, logs.Len(), "one line")
	e := logs.All()[0]
	assert.Equal(t, zap.InfoLevel, e.Level)
	assert.Contains(t, e.Message, "no CAP_SYS_RESOURCE")
	assert.Contains(t, e.Message, "charges BPF memory to the memory cgroup")
	assert.Contains(t, e.Message, "succeed without effect")
	assert.Equal(t, map[string]any{"kernel": "5.10.0-28-amd64", "memlock_hard_limit": "8 MiB", "no_new_privs_set": true}, e.ContextMap())
}

func TestPrepareWhenTheLimitCanBeRaised(t *testing.T) {
	resetInstalled(t)
	h, installs := fakeHost(true, true)
	h.memcgAccounting = func() (bool, error) { t.Fatal("no probe needed"); return false, nil }
	core, logs := observer.New(zap.DebugLevel)
	require.NoError(t, h.prepare(zap.New(core)))
	assert.Zero(t, *installs)
	assert.Zero(t, logs.Len(), "nothing to say: upstream's calls work")
}

func TestPrepareProbeAndInstallErrors(t *testing.T) {
	resetInstalled(t)
	h, _ := fakeHost(false, true)
	h.memcgAccounting = func() (bool, error) { return false, errors.New("creating a BPF map: invalid argument") }
	err := h.prepare(zap.NewNop())
	require.ErrorContains(t, err, "kernel 5.10.0-28-amd64")
	require.ErrorContains(t, err, "creating a BPF map: invalid argument")

	h, _ = fakeHost(false, true)
	h.install = func() (bool, error) { return false, errors.New("seccomp: invalid argument") }
	err = h.prepare(zap.NewNop())
	require.ErrorContains(t, err, "seccomp: invalid argument")
	require.ErrorContains(t, err, "--cap-add SYS_RESOURCE")
}

func TestFormatLimit(t *testing.T) {
	assert.Equal(t, "8 MiB", formatLimit(8<<20))
	assert.Equal(t, "64 KiB", formatLimit(64<<10))
	assert.Equal(t, "1000 bytes", formatLimit(1000))
	assert.Equal(t, "unlimited", formatLimit(unix.RLIM_INFINITY))
}
