// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"
	"go.opentelemetry.io/ebpf-profiler/collector/config"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/execsync"
	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/metadatatest"
)

type fakeHook struct {
	st       execsync.State
	closed   bool
	latency  time.Duration
	outcomes chan int // what Latency reports, in turn; NoExec once empty
}

func (h *fakeHook) State() (execsync.State, error) { return h.st, nil }
func (h *fakeHook) Close() error                   { h.closed = true; return nil }
func (h *fakeHook) Latency(context.Context) (time.Duration, int, error) {
	select {
	case o := <-h.outcomes:
		if o == execsync.Read {
			return h.latency, o, nil
		}
		return 0, o, nil
	default:
		return 0, execsync.NoExec, nil
	}
}

// startExecSync runs withExecSync with perSecond, and an attach that returns
// hook or err; it returns the configuration upstream's create was given,
// the rate attach was called with (0: not called), the receiver and logs.
func startExecSync(t *testing.T, perSecond int, hook *fakeHook, err error) (*config.Config, uint64, xreceiver.Profiles, *observer.ObservedLogs, *componenttest.Telemetry) {
	t.Helper()
	var got *config.Config
	create := func(_ context.Context, _ receiver.Settings, cfg component.Config, _ xconsumer.Profiles) (xreceiver.Profiles, error) {
		got = cfg.(*config.Config)
		return &fakeProfiles{}, nil
	}
	var rate uint64
	attach := func(n uint64) (execSyncHook, error) {
		rate = n
		if err != nil {
			return nil, err
		}
		return hook, nil
	}
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	core, logs := observer.New(zap.InfoLevel)
	set := metadatatest.NewSettings(tt)
	set.Logger = zap.New(core)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ExecSyncPerSecond = perSecond
	r, cerr := withExecSync(create, attach)(context.Background(), set, cfg, consumertest.NewNop())
	require.NoError(t, cerr)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	assert.Same(t, &cfg.Config, got, "upstream gets its own part of the configuration")
	return got, rate, r, logs, tt
}

func TestExecSyncAttachesAfterStartAndCounts(t *testing.T) {
	hook := &fakeHook{st: execsync.State{Synced: 7, Skipped: 2, Failed: 1}, outcomes: make(chan int)}
	_, rate, r, _, tt := startExecSync(t, 300, hook, nil)
	assert.Equal(t, uint64(300), rate)
	assert.True(t, r.(*execSyncReceiver).Profiles.(*fakeProfiles).started)
	metadatatest.AssertEqualReceiverProfilingExecSyncExecs(t, tt, []metricdata.DataPoint[int64]{
		{Value: 7, Attributes: attribute.NewSet(attribute.String("outcome", "synchronised"))},
		{Value: 2, Attributes: attribute.NewSet(attribute.String("outcome", "over_rate"))},
		{Value: 1, Attributes: attribute.NewSet(attribute.String("outcome", "pid_events_full"))},
	}, metricdatatest.IgnoreTimestamp())
	require.NoError(t, r.Shutdown(context.Background()))
	assert.True(t, hook.closed)
}

func TestExecSyncOffAttachesNothing(t *testing.T) {
	_, rate, r, _, _ := startExecSync(t, 0, nil, nil)
	assert.Zero(t, rate)
	_, wrapped := r.(*execSyncReceiver)
	assert.False(t, wrapped)
}

func TestExecSyncUnavailableWarnsAndRunsOn(t *testing.T) {
	_, _, r, logs, _ := startExecSync(t, 500, nil, errors.New("the collector runs in a PID namespace of its own"))
	assert.True(t, r.(*execSyncReceiver).Profiles.(*fakeProfiles).started)
	w := logs.FilterMessage(ExecSyncUnavailableMessage)
	require.Equal(t, 1, w.Len())
	assert.Equal(t, "exec_sync_per_second", w.All()[0].ContextMap()["setting"])
	require.NoError(t, r.Shutdown(context.Background()))
}

func TestNestedPIDNamespace(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		status string
		nested bool
	}{
		{"Name:\tx\nNSpid:\t4242\n", false},
		{"Name:\tx\nNSpid:\t4242\t7\n", true},
	} {
		p := filepath.Join(dir, "status")
		require.NoError(t, os.WriteFile(p, []byte(tc.status), 0o600))
		got, err := nestedPIDNamespace(p)
		require.NoError(t, err)
		assert.Equal(t, tc.nested, got, tc.status)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "status"), []byte("Name:\tx\n"), 0o600))
	_, err := nestedPIDNamespace(filepath.Join(dir, "status"))
	assert.ErrorContains(t, err, "NSpid")
}

// TestExecSyncLatencyIsRecorded: the watch records the latency of an exec
// read, and counts each exec watched by whether it was read.
func TestExecSyncLatencyIsRecorded(t *testing.T) {
	every := latencyEvery
	latencyEvery = 5 * time.Millisecond
	t.Cleanup(func() { latencyEvery = every })
	hook := &fakeHook{latency: 7 * time.Millisecond, outcomes: make(chan int, 3)}
	hook.outcomes <- execsync.Read
	hook.outcomes <- execsync.Gone
	hook.outcomes <- execsync.NotRead
	_, _, r, _, tt := startExecSync(t, 500, hook, nil)
	require.Eventually(t, func() bool { return len(hook.outcomes) == 0 }, 10*time.Second, time.Millisecond)
	// Stopping the watch waits for the Latency call under way.
	require.NoError(t, r.Shutdown(context.Background()))
	metadatatest.AssertEqualReceiverProfilingExecSyncSampled(t, tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("read", "read"))},
		{Value: 1, Attributes: attribute.NewSet(attribute.String("read", "gone"))},
		{Value: 1, Attributes: attribute.NewSet(attribute.String("read", "not_read"))},
	}, metricdatatest.IgnoreTimestamp())
	m, err := tt.GetMetric("otelcol_receiver_profiling_exec_sync_latency")
	require.NoError(t, err)
	h := m.Data.(metricdata.Histogram[float64]).DataPoints
	require.Len(t, h, 1)
	assert.Equal(t, uint64(1), h[0].Count)
	assert.InDelta(t, 7.0, h[0].Sum, 1e-9)
}
