// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"
	"go.opentelemetry.io/ebpf-profiler/collector/config"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/metadatatest"
	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/offcpu"
)

// createWithProbe runs withOffCPUFallback with threshold and a probe that
// answers r, and returns the configuration upstream's create was given, the
// warnings, the telemetry and how often the probe ran.
func createWithProbe(t *testing.T, threshold float64, r offcpu.Result) (*config.Config, *observer.ObservedLogs, *componenttest.Telemetry, int) {
	t.Helper()
	var got *config.Config
	create := func(_ context.Context, _ receiver.Settings, cfg component.Config, _ xconsumer.Profiles) (xreceiver.Profiles, error) {
		got = cfg.(*config.Config)
		return &fakeProfiles{}, nil
	}
	probes := 0
	probe := func() offcpu.Result { probes++; return r }
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	core, logs := observer.New(zap.WarnLevel)
	set := metadatatest.NewSettings(tt)
	set.Logger = zap.New(core)
	cfg := &NewFactory().CreateDefaultConfig().(*Config).Config
	cfg.OffCPUThreshold = threshold
	_, err := withOffCPUFallback(create, probe)(context.Background(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	assert.InDelta(t, threshold, cfg.OffCPUThreshold, 0, "the user's configuration is never changed")
	return got, logs, tt, probes
}

func TestOffCPUFallbackWithoutKprobes(t *testing.T) {
	missing := offcpu.Result{Missing: "CONFIG_KPROBES", Err: errors.New("kprobe finish_task_switch.isra.0: open /sys/kernel/tracing/kprobe_events: no such file or directory")}
	got, logs, tt, probes := createWithProbe(t, 0.5, missing)
	assert.Equal(t, 1, probes)
	assert.Zero(t, got.OffCPUThreshold, "upstream is created with off-CPU off")
	want := &NewFactory().CreateDefaultConfig().(*Config).Config
	assert.Equal(t, want, got, "nothing else changes")

	require.Equal(t, 1, logs.Len(), "one warning")
	e := logs.All()[0]
	assert.Equal(t, OffCPUUnavailableMessage, e.Message)
	fields := e.ContextMap()
	assert.Equal(t, "CONFIG_KPROBES", fields["missing"])
	assert.Equal(t, "off_cpu_threshold", fields["setting"])
	assert.InDelta(t, 0.5, fields["off_cpu_threshold"], 0)
	metadatatest.AssertEqualReceiverProfilingOffCPUAvailable(t, tt,
		[]metricdata.DataPoint[int64]{{Value: 0}}, metricdatatest.IgnoreTimestamp())
}

func TestOffCPUFallbackWhereKprobesWork(t *testing.T) {
	got, logs, tt, probes := createWithProbe(t, 0.5, offcpu.Result{Available: true})
	assert.Equal(t, 1, probes)
	assert.InDelta(t, 0.5, got.OffCPUThreshold, 0, "nothing changes")
	assert.Zero(t, logs.Len())
	metadatatest.AssertEqualReceiverProfilingOffCPUAvailable(t, tt,
		[]metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
}

func TestOffCPUFallbackNotAsked(t *testing.T) {
	got, logs, tt, probes := createWithProbe(t, 0, offcpu.Result{Missing: "CONFIG_KPROBES"})
	assert.Zero(t, probes, "no probe when off_cpu_threshold is 0")
	assert.Zero(t, got.OffCPUThreshold)
	assert.Zero(t, logs.Len())
	_, err := tt.GetMetric("otelcol_receiver_profiling_off_cpu_available")
	assert.Error(t, err, "not recorded when off-CPU is not asked for")
}
