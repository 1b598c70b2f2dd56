// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package convert

import (
	"bytes"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var startLineSink [][]byte

// allocForStartLine allocates, so that the heap profile holds this
// function (its func line is checked).
//
//go:noinline
func allocForStartLine() {
	for range 64 {
		startLineSink = append(startLineSink, make([]byte, 1<<16))
	}
}

// TestStartLinesOfGoProfile: a heap profile written by the Go runtime
// (runtime/pprof, which sets Function.start_line since Go 1.20) keeps
// every function's start line through the conversion; this file's
// allocating function's is its func line.
func TestStartLinesOfGoProfile(t *testing.T) {
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	allocForStartLine()
	runtime.GC() // the heap profile shows allocations as of the last GC
	var buf bytes.Buffer
	require.NoError(t, pprof.Lookup("heap").WriteTo(&buf, 0))
	p, err := Parse(buf.Bytes(), 64<<20)
	require.NoError(t, err)
	pd, err := Convert(p)
	require.NoError(t, err)

	want := map[[2]string]int64{}
	for _, f := range p.Function {
		want[[2]string{f.Name, f.Filename}] = f.StartLine
	}
	d := pd.Dictionary()
	got := map[[2]string]int64{}
	for _, f := range d.FunctionTable().All() {
		got[[2]string{str(pd, f.NameStrindex()), str(pd, f.FilenameStrindex())}] = f.StartLine()
	}
	delete(got, [2]string{"", ""}) // the zero function
	require.Equal(t, want, got)

	src, err := os.ReadFile("startline_test.go")
	require.NoError(t, err)
	var line int64
	for i, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, "func allocForStartLine(") {
			line = int64(i + 1)
		}
	}
	found := false
	for k, v := range got {
		if strings.HasSuffix(k[0], ".allocForStartLine") {
			require.Equal(t, line, v)
			found = true
		}
	}
	require.True(t, found, "allocForStartLine in the heap profile")
}
