// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/ebpf-profiler/libpf"
	"go.opentelemetry.io/ebpf-profiler/process"
	"go.opentelemetry.io/ebpf-profiler/reporter"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
)

// TestExecutableHolderKeepsTheFileAfterExit: the hook, given what the
// profiler gives it for a real process (upstream's process.New and its
// mapping of its executable), holds the file; after the process has ended
// the held file is still the executable, by the profiler's own file id.
func TestExecutableHolderKeepsTheFileAfterExit(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	sleep, err = filepath.EvalSymlinks(sleep)
	require.NoError(t, err)
	cmd := exec.Command(sleep, "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := libpf.PID(cmd.Process.Pid)
	pr := process.New(pid, pid)
	// cmd.Start returns once exec has run, but a clean-clone make test once
	// read the process's maps without the executable's mapping yet: look
	// again until it is there, for 10 s at most.
	var m *process.RawMapping
	for deadline := time.Now().Add(10 * time.Second); m == nil && time.Now().Before(deadline); {
		_, _ = pr.IterateMappings(func(rm process.RawMapping) bool {
			if rm.IsExecutable() && rm.Path == sleep {
				rm.Path = libpf.Intern(rm.Path).String()
				m = &rm
				return false
			}
			return true
		})
		if m == nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	require.NotNil(t, m, "%s not mapped executable by its process", sleep)
	id, err := libpf.FileIDFromExecutableFile(sleep)
	require.NoError(t, err)

	held := debugfile.NewHeldFiles(4)
	executableHolder{held: held}.ReportExecutable(&reporter.ExecutableMetadata{
		MappingFile: libpf.NewFrameMappingFile(libpf.FrameMappingFileData{FileID: id, FileName: libpf.Intern(filepath.Base(sleep))}),
		Process:     pr,
		Mapping:     m,
	})
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	f, path, ok := held.Open(id.StringNoQuotes())
	require.True(t, ok, "the executable is not held")
	defer f.Close()
	assert.Equal(t, sleep, path)
	got, err := libpf.FileIDFromExecutableReader(f)
	require.NoError(t, err)
	assert.Equal(t, id, got)

	// The vDSO and a mapping without a file id are not held.
	executableHolder{held: held}.ReportExecutable(&reporter.ExecutableMetadata{Process: pr, Mapping: m})
	assert.Equal(t, 1, held.Len())
}
