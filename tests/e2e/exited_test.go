package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/dwarftest"
	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// exitedInterval is the receiver's reporter_interval in
// TestDebugInfoExitedProcess: far longer than the program's life (2 s),
// so that the batch holding its samples is cut after it has exited.
const exitedInterval = 8 * time.Second

// sinkBatches returns the requests of the sink so far, oldest first.
func sinkBatches(path string) ([]pprofile.Profiles, error) {
	var out []pprofile.Profiles
	err := testenv.ReadProfileLines(path, func(pd pprofile.Profiles) { out = append(out, pd) })
	return out, err
}

// TestDebugInfoExitedProcess runs the shipped agent (real eBPF profiler)
// with a reporter_interval of 8 s, and, just after a batch, a stripped C
// program (inl.c, -g -O2, its debug file next to it through
// .gnu_debuglink) that burns CPU in its inlined hot function for 2 s and
// exits; its binary is then deleted. So the first batch that holds its
// samples reaches the symbolize processor after the process is gone, its
// /proc entries and its file with it: the file comes from the receiver's
// hold on the executables the profiler saw (ExecutableReporter,
// debugfile.Held), its debug file from next to it. That batch's frames of
// the program are all named, those in its code with readelf's frames
// (the inlined function, then its caller, with their lines).
func TestDebugInfoExitedProcess(t *testing.T) {
	t.Parallel() // see main_test.go
	root := testenv.RepoRoot(t)
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "debuginfo-exited", srv, &sent)

	dir := t.TempDir()
	inl := filepath.Join(root, "processor", "symbolizeprocessor", "testdata", "src", "inl.c")
	// load_wait: its default, 2 s, could run out on a loaded machine while
	// the loader reads another file; the wait is TestLoadWait*'s subject.
	sinkPath, _ := startAgentEvery(t, srv, nil, exitedInterval.String(), `
processors:
  symbolize:
    load_wait: 30s
`)
	// The first batch: the agent's start-up scan, when a new process is
	// seen late, is behind it.
	testenv.WaitFor(t, 120*time.Second, "the agent's first batch at the sink", func() (bool, error) {
		all, err := sinkBatches(sinkPath)
		return len(all) > 0, err
	})
	// A process of 2 s may still go unsampled on a loaded machine (the
	// profiler has to see it first): up to three, each a file of its own.
	var prog dwarftest.Program
	var frames []nativeFrame
	for attempt := 1; attempt <= 3 && len(frames) == 0; attempt++ {
		prog = dwarftest.Build(t, inl, dir, fmt.Sprintf("nxv-inl-short%d", attempt), true, fmt.Sprintf("-DNXV_OTHER=%d", 10+attempt))
		frames = runExited(t, sinkPath, prog)
	}
	require.NotEmpty(t, frames, "three short-lived programs ran and no batch held a frame of theirs")

	var seen []string
	inlined := 0
	for _, f := range frames {
		seen = append(seen, fmt.Sprintf("%#x %v", f.addr, f.lines))
	}
	for _, f := range frames {
		require.NotEmpty(t, f.lines, "the program's location %#x unnamed; its locations in that batch:\n%s", f.addr, strings.Join(seen, "\n"))
		if !strings.HasPrefix(f.lines[len(f.lines)-1].Name, "nxv_inl_") {
			continue // _start, main: named from the debug file's symbol table
		}
		require.Equal(t, dwarftest.Frames(t, prog.Oracle, f.addr), f.lines, "at %#x", f.addr)
		if len(f.lines) == 2 && f.lines[0].Name == "nxv_inl_hot" && f.lines[1].Name == "nxv_inl_caller" {
			inlined++
		}
	}
	require.Positive(t, inlined, "no location of nxv_inl_hot inlined into nxv_inl_caller; the program's locations:\n%s", strings.Join(seen, "\n"))
	t.Logf("%d locations of nxv_inl_hot inlined into nxv_inl_caller checked against readelf", inlined)
}

// runExited runs prog for 2 s just after a batch reached the sink,
// deletes its binary once it has exited, and returns its locations in the
// first batch that holds them, cut after it exited (none: no batch held
// them within three reporter intervals).
func runExited(t *testing.T, sinkPath string, prog dwarftest.Program) []nativeFrame {
	t.Helper()
	name := filepath.Base(prog.Bin)
	// Just after a batch: the next is about 8 s away.
	before, err := sinkBatches(sinkPath)
	require.NoError(t, err)
	testenv.WaitFor(t, 120*time.Second, "the next batch at the sink (the agent's first: its start-up)", func() (bool, error) {
		all, err := sinkBatches(sinkPath)
		return len(all) > len(before), err
	})
	start := time.Now()
	out, err := exec.Command(prog.Bin, "for", "2000").CombinedOutput()
	require.NoError(t, err, "%s: %s", prog.Bin, out)
	lived := time.Since(start)
	require.NoError(t, os.Remove(prog.Bin))
	exited, err := sinkBatches(sinkPath)
	require.NoError(t, err)
	for i, pd := range exited {
		require.Empty(t, batchFrames(pd, name), "batch %d held %s's frames before it exited (it lived %s, reporter_interval %s): the test could not run its case", i, name, lived, exitedInterval)
	}
	deadline := time.Now().Add(3 * exitedInterval)
	for time.Now().Before(deadline) {
		all, err := sinkBatches(sinkPath)
		require.NoError(t, err)
		for _, pd := range all[len(exited):] {
			if frames := batchFrames(pd, name); len(frames) > 0 {
				t.Logf("%s lived %s; the first batch holding it came after its exit, with %d of its locations", name, lived, len(frames))
				return frames
			}
		}
		time.Sleep(200 * time.Millisecond) // polling the sink, as testenv.WaitFor does
	}
	t.Logf("%s lived %s; no batch in %s held a frame of it (not sampled)", name, lived, 3*exitedInterval)
	return nil
}
