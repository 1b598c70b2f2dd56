package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// The benchmark harness (tests/bench, make bench) starts collectors, busy
// benchload processes and, in its micro section, go test: however the run
// ends, none of them may outlive it (a 25-minute timeout once left 20 busy
// processes burning 73% of a CPU for two hours). These tests start a real
// run of its agent section (-bench.quick: agents of ours, plain and ours
// with the queue in memory beside 4 busy processes, against the built
// binary), end it the ways a run ends while its agents and busy processes
// run, and then look in /proc for any process whose environment carries the
// run's marker.

// benchMarkVar marks the processes of one harness run: they inherit it.
const benchMarkVar = "NEXOVUE_BENCH_RUN_MARK"

// benchArgs are the harness's arguments: the quick agent section, with
// more pairs than the test waits for, so that it is still running.
func benchArgs(out string) []string {
	return []string{"-bench.run", "-bench.quick", "-bench.only=agent", "-bench.agent-pairs=20", "-bench.out=" + out}
}

// marked is a process whose environment carries a run's marker.
type marked struct {
	pid  int
	args string
}

// markedProcesses scans /proc for the processes whose environment holds
// benchMarkVar=mark.
func markedProcesses(mark string) []marked {
	want := []byte(benchMarkVar + "=" + mark + "\x00")
	entries, _ := os.ReadDir("/proc")
	var out []marked
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(append(env, 0), want) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, marked{pid, strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))})
	}
	return out
}

// running counts the run's collectors and busy benchload processes.
func running(ps []marked) (collectors, busy int) {
	for _, p := range ps {
		first, _, _ := strings.Cut(p.args, " ")
		switch filepath.Base(first) {
		case "otelcol-nexovue":
			collectors++
		case "benchload":
			if strings.Contains(p.args, " busy ") {
				busy++
			}
		}
	}
	return collectors, busy
}

func describe(ps []marked) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %d %.160s\n", p.pid, p.args)
	}
	return b.String()
}

// killedBenchLeavesNothing starts cmd (a harness run carrying a fresh
// marker), waits until its collectors and busy processes run, calls end,
// waits for cmd to end, and then fails if any marked process is still alive
// after a grace for the kernel to deliver the signals (polled).
func killedBenchLeavesNothing(t *testing.T, cmd *exec.Cmd, end func(cmd *exec.Cmd)) {
	mark := fmt.Sprintf("%s-%d-%d", t.Name(), os.Getpid(), time.Now().UnixNano())
	// TMPDIR in this test's own temporary folder: a harness run killed by
	// SIGKILL cannot remove its temporary folders; this test's cleanup does.
	cmd.Env = append(os.Environ(), benchMarkVar+"="+mark, "TMPDIR="+t.TempDir())
	cmd.Dir = filepath.Join(testenv.RepoRoot(t), "tests", "bench")
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// StartCmd puts it in a process group of its own, as a shell does
	// with a job: the group the signals below go to.
	if err := testenv.StartCmd(cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); testenv.Ended(cmd) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		// Whatever the test found, leave nothing behind.
		for _, p := range markedProcesses(mark) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})
	t0 := time.Now()
	var seen []marked
	testenv.WaitFor(t, 3*time.Minute, "the harness's collectors and busy processes to run", func() (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("the harness ended first (%v):\n%s", err, out.String())
		default:
		}
		seen = markedProcesses(mark)
		c, b := running(seen)
		return c >= 1 && b >= 4, nil
	})
	c, b := running(seen)
	t.Logf("after %s: %d processes of the run, %d collectors and %d busy among them; ending it", time.Since(t0).Round(100*time.Millisecond), len(seen), c, b)
	end(cmd)
	select {
	case err := <-done:
		t.Logf("the harness ended: %v", err)
	case <-time.After(time.Minute):
		t.Fatalf("the harness still runs a minute after it was ended:\n%s", lastLines(out.String()))
	}
	var left []marked
	deadline := time.Now().Add(30 * time.Second)
	for {
		if left = markedProcesses(mark); len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("e2e %s: processes of the run alive %s after it ended: %d (of %d seen while it ran)", t.Name(), time.Since(t0).Round(100*time.Millisecond), len(left), len(seen))
	if len(left) > 0 {
		t.Errorf("%d processes of the harness run outlived it by 30 s:\n%s\nwhile it ran:\n%s", len(left), describe(left), describe(seen))
	}
}

func lastLines(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// TestBenchHarnessLeavesNothing ends three harness runs at once (make
// bench's go test command, each in a process group of its own, as a shell
// runs a job): SIGKILL of the go command, which cannot pass anything on (the
// test binary ends by its parent-death signal, as it would after a -timeout
// panic, without its cleanups); SIGTERM to the group, as timeout sends it;
// SIGINT to the group, as Ctrl-C does. The children are in groups of their
// own, so the group's signal does not reach them.
func TestBenchHarnessLeavesNothing(t *testing.T) {
	// Not parallel with the other tests: its three runs build and run the
	// benchmark harness at once, which takes the machine's CPU.
	testenv.Binary(t)
	for _, tc := range []struct {
		name string
		end  func(cmd *exec.Cmd)
	}{
		{"SIGKILL of go test", func(cmd *exec.Cmd) { _ = cmd.Process.Signal(syscall.SIGKILL) }},
		{"SIGTERM to its group", func(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }},
		{"SIGINT to its group", func(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"test", "-tags", "bench", "-run", "^TestBench$", "-count=1", "-timeout", "10m", "-v", ".", "-args"}, benchArgs(filepath.Join(t.TempDir(), "bench.md"))...)
			killedBenchLeavesNothing(t, exec.Command("go", args...), tc.end)
		})
	}
}
