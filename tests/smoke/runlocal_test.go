package smoke

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// runLocalEnv is what `make run` without a key gets, on ports and in a
// folder of the test's own: the script is the README's first command.
func runLocalEnv(t *testing.T, ingestAddr string) (env []string, runDir string) {
	runDir = t.TempDir()
	return []string{
		"NEXOVUE_KEY=", // never the real ingest, whatever the test's environment holds
		"OTELCOL_NEXOVUE_BIN=" + testenv.Binary(t),
		"NEXOVUE_RUN_DIR=" + runDir,
		"NEXOVUE_LOCAL_INGEST=" + ingestAddr,
		"NEXOVUE_HEALTH_ENDPOINT=" + testenv.FreeAddr(t),
		"NEXOVUE_METRICS_PORT=" + strconv.Itoa(testenv.FreePort(t)),
		"NEXOVUE_VIEW_ENDPOINT=" + testenv.FreeAddr(t),
	}, runDir
}

// TestRunLocal runs `make run`'s script without NEXOVUE_KEY while a
// CPU-bound program runs: the local ingest's table names that program's
// service, and Ctrl-C (SIGINT to the process group, as a terminal sends it)
// stops the collector and the ingest, which prints what it accepted.
func TestRunLocal(t *testing.T) {
	t.Parallel() // all but TestViewInBrowser, see there
	testenv.RequireTracefs(t)
	script := filepath.Join(testenv.RepoRoot(t), "internal", "buildtools", "run-local.sh")
	service := fmt.Sprintf("nxv-run-%d", os.Getpid())
	burner := testenv.BuildGo(t, "testdata/smokeburner", "smokeburner")
	testenv.Start(t, []string{"OTEL_SERVICE_NAME=" + service}, burner, "300")

	env, runDir := runLocalEnv(t, testenv.FreeAddr(t))
	run := testenv.Start(t, env, script)
	row := regexp.MustCompile(`(?m)^\s+\d+\s+` + regexp.QuoteMeta(service) + `\s+(\d+)\s`)
	testenv.WaitFor(t, 90*time.Second, service+" in the local ingest's table", func() (bool, error) {
		if done, err := run.Exited(); done {
			return false, fmt.Errorf("run-local.sh exited (%v):\n%s", err, run.Output())
		}
		return row.MatchString(run.Output()), nil
	})

	require.NoError(t, syscall.Kill(-run.Cmd.Process.Pid, syscall.SIGINT))
	err := run.Wait(60 * time.Second)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "run-local.sh after SIGINT:\n%s", run.Output())
	require.Equal(t, 130, exit.ExitCode(), "run-local.sh's status after SIGINT")
	stopped := regexp.MustCompile(`nexovue-ingest: stopped; accepted (\d+) samples`).FindStringSubmatch(run.Output())
	require.NotNil(t, stopped, "the ingest's last line, in:\n%s", run.Output())
	accepted, _ := strconv.Atoi(stopped[1])
	require.Positive(t, accepted)
	require.ErrorIs(t, syscall.Kill(-run.Cmd.Process.Pid, 0), syscall.ESRCH, "a process of run-local.sh's group is still running")
	log, err := os.ReadFile(filepath.Join(runDir, "collector.log"))
	require.NoError(t, err)
	require.Contains(t, string(log), "Shutdown complete.", "the collector's log")
	t.Logf("run-local: %s in the table; %s samples accepted in all", service, stopped[1])
}

// TestRunLocalIngestPortTaken: with the local ingest's port held by another
// program, the script says so, names the setting to change, and does not
// start the collector.
func TestRunLocalIngestPortTaken(t *testing.T) {
	t.Parallel() // all but TestViewInBrowser, see there
	script := filepath.Join(testenv.RepoRoot(t), "internal", "buildtools", "run-local.sh")
	addr := testenv.FreeAddr(t)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	defer ln.Close()

	env, runDir := runLocalEnv(t, addr)
	run := testenv.Start(t, env, script)
	err = run.Wait(90 * time.Second)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "run-local.sh with %s taken:\n%s", addr, run.Output())
	require.Equal(t, 1, exit.ExitCode())
	out := run.Output()
	require.Contains(t, out, "listen tcp "+addr+": bind: address already in use")
	require.Contains(t, out, "The local ingest could not start on "+addr+" (above), so the collector was not started.")
	require.Contains(t, out, "NEXOVUE_LOCAL_INGEST=")
	_, err = os.Stat(filepath.Join(runDir, "collector.log"))
	require.True(t, errors.Is(err, os.ErrNotExist), "the collector started: %v", err)
}

// TestRunLocalWithKeyOnATerminal: with a key, the collector's log is shown
// as it is written. When the collector stops at start (its health_check
// port is taken), the script ends at once with its status and names the
// setting to change, also when its output is a terminal: it used to read
// the log back from /dev/stderr, which on a terminal waits for the keyboard.
// `script` gives it a terminal, with an input that stays open.
func TestRunLocalWithKeyOnATerminal(t *testing.T) {
	t.Parallel() // all but TestViewInBrowser, see there
	const key = "nxv-run-local-key"
	scriptPath := filepath.Join(testenv.RepoRoot(t), "internal", "buildtools", "run-local.sh")
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{key}})
	health := testenv.FreeAddr(t)
	ln, err := net.Listen("tcp", health)
	require.NoError(t, err)
	defer ln.Close()

	env, runDir := runLocalEnv(t, testenv.FreeAddr(t))
	env = append(env, "NEXOVUE_KEY="+key, "NEXOVUE_ENDPOINT="+srv.URL(), "NEXOVUE_HEALTH_ENDPOINT="+health)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "script", "-qec", scriptPath, "/dev/null")
	cmd.Env = append(os.Environ(), env...) // the last of a duplicate name wins
	stdin, keepOpen, err := os.Pipe()
	require.NoError(t, err)
	defer keepOpen.Close()
	defer stdin.Close()
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "run-local.sh still running a minute after the collector could not start:\n%s", out)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "run-local.sh:\n%s", out)
	require.Equal(t, 1, exit.ExitCode(), "the collector's status:\n%s", out)
	for _, want := range []string{
		"Collector log: below, and in " + filepath.Join(runDir, "collector.log"),
		"Starting otelcol-nexovue...", // the log, shown as it is written
		"failed to bind to address " + health,
		"The collector exited with status 1",
		"NEXOVUE_HEALTH_ENDPOINT (now " + health + ")",
	} {
		require.Contains(t, string(out), want)
	}
	require.NotContains(t, string(out), key, "the key reached the output")
}
