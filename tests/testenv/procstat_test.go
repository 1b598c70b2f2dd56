package testenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseProcStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "4242 (otel col (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 300 1000 200 18446744073709551615\n"
	st, err := ParseProcStat([]byte(line))
	require.NoError(t, err)
	assert.Equal(t, ProcStat{Comm: "otel col (x)", State: "S", CPU: 3250 * time.Millisecond}, st)
	_, err = ParseProcStat([]byte("4242 (x) S 1 2"))
	assert.Error(t, err)
	_, err = ParseProcStat([]byte("no parenthesis"))
	assert.Error(t, err)
}

// This process's stat agrees with getrusage, read just before and after,
// to two clock ticks (stat counts utime and stime in whole ticks each),
// after it has used some CPU.
func TestReadProcStatOfThisProcess(t *testing.T) {
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	before := rusageCPU(t)
	st, err := ReadProcStat(os.Getpid())
	require.NoError(t, err)
	after := rusageCPU(t)
	const ticks = 2 * 10 * time.Millisecond
	assert.GreaterOrEqual(t, st.CPU, before-ticks, "stat's CPU against getrusage before")
	assert.LessOrEqual(t, st.CPU, after+ticks, "stat's CPU against getrusage after")
	exe := filepath.Base(os.Args[0])
	assert.Equal(t, exe[:min(len(exe), 15)], st.Comm, "the kernel's comm is the executable's name, cut at 15 bytes")
	_, err = ReadProcStat(-1)
	assert.Error(t, err)
}

func rusageCPU(t *testing.T) time.Duration {
	d, err := OwnCPU()
	require.NoError(t, err)
	return d
}
