// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package offcpu

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHookSymbols(t *testing.T) {
	listing := `ffffffff813aea70 t __pfx_finish_task_switch.isra.0
ffffffff813aea80 t finish_task_switch.isra.0
ffffffff813aeb80 T finish_task_switch
ffffffff813aec00 T schedule
ffffffffc0001000 t finish_task_switch_mod	[some_module]
`
	syms, err := HookSymbols(strings.NewReader(listing))
	require.NoError(t, err)
	assert.Equal(t, []string{"finish_task_switch.isra.0", "finish_task_switch"}, syms)
}

func TestProbeOrderAndMissing(t *testing.T) {
	var tried []string
	tpCalled := false
	fail := errors.New("attach failed")
	kprobe := func(s string) error {
		tried = append(tried, s)
		if s == "finish_task_switch" {
			return nil
		}
		return fail
	}
	tp := func() error { tpCalled = true; return nil }
	yes := func() bool { return true }
	no := func() bool { return false }

	r := probe([]string{"finish_task_switch.isra.0", "finish_task_switch"}, kprobe, tp, yes)
	assert.Equal(t, Result{Available: true}, r, "one symbol attached is enough, as upstream")
	assert.Equal(t, []string{"finish_task_switch.isra.0", "finish_task_switch"}, tried)
	assert.True(t, tpCalled)

	tpCalled = false
	r = probe([]string{"finish_task_switch.isra.0"}, kprobe, tp, no)
	assert.False(t, r.Available)
	assert.Equal(t, "CONFIG_KPROBES", r.Missing)
	assert.ErrorIs(t, r.Err, fail)
	assert.False(t, tpCalled, "the tracepoint is attached after a kprobe, as upstream")

	r = probe([]string{"finish_task_switch.isra.0"}, kprobe, tp, yes)
	assert.Equal(t, "a kprobe on finish_task_switch", r.Missing, "kprobes exist but this one failed")

	r = probe(nil, kprobe, tp, yes)
	assert.Equal(t, "kernel symbol finish_task_switch", r.Missing)

	r = probe([]string{"finish_task_switch"}, kprobe, func() error { return fail }, yes)
	assert.Equal(t, "the sched/sched_switch tracepoint", r.Missing)
	assert.ErrorIs(t, r.Err, fail)
}

// TestProbeThisKernel runs the real probe and compares it with what the
// kernel's build configuration says (/proc/config.gz, CONFIG_KPROBES). It
// needs root and that file; without them it fails and says so.
func TestProbeThisKernel(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(), "needs root: it loads and attaches eBPF programs")
	f, err := os.Open("/proc/config.gz")
	require.NoError(t, err, "needs /proc/config.gz (CONFIG_IKCONFIG_PROC) to know what to expect")
	defer f.Close()
	z, err := gzip.NewReader(f)
	require.NoError(t, err)
	cfg := new(strings.Builder)
	_, err = io.Copy(cfg, z)
	require.NoError(t, err)
	kprobes := strings.Contains(cfg.String(), "\nCONFIG_KPROBES=y\n")

	r := Probe()
	if kprobes {
		assert.True(t, r.Available, "CONFIG_KPROBES=y but the probe failed: %v (%s)", r.Err, r.Missing)
	} else {
		assert.False(t, r.Available)
		assert.Equal(t, "CONFIG_KPROBES", r.Missing, "%v", r.Err)
	}
	t.Logf("CONFIG_KPROBES=%v: %+v", kprobes, r)
}
