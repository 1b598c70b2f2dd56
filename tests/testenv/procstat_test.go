package testenv

import (
	"os"
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

func TestReadProcStatOfThisProcess(t *testing.T) {
	st, err := ReadProcStat(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, "R", st.State, "this process reads its own stat while running")
	assert.GreaterOrEqual(t, st.CPU, time.Duration(0))
	_, err = ReadProcStat(-1)
	assert.Error(t, err)
}
