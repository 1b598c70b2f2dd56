// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/receiver/xreceiver"
	ebpfcollector "go.opentelemetry.io/ebpf-profiler/collector"
	"go.opentelemetry.io/ebpf-profiler/collector/config"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/memlock"
	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/metadata"
)

// TestDefaultConfigIsUpstreamsWithOurDefaults: upstream's settings keep
// their defaults but include_env_vars; exec_sync_per_second is ours.
func TestDefaultConfigIsUpstreamsWithOurDefaults(t *testing.T) {
	ours := NewFactory().CreateDefaultConfig().(*Config)
	upstream := ebpfcollector.NewFactory().CreateDefaultConfig().(*config.Config)
	assert.Equal(t, "OTEL_SERVICE_NAME,OTEL_RESOURCE_ATTRIBUTES", ours.IncludeEnvVars)
	assert.Empty(t, upstream.IncludeEnvVars, "upstream's default changed: revisit this wrapper")
	upstream.IncludeEnvVars = ours.IncludeEnvVars
	assert.Equal(t, upstream, &ours.Config)
	assert.Equal(t, DefaultExecSyncPerSecond, ours.ExecSyncPerSecond)
	assert.Equal(t, ebpfcollector.NewFactory().Type(), NewFactory().Type())
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	tests := []struct {
		id      component.ID
		envVars string
		sps     int
		execs   int
	}{
		{id: component.MustNewID("profiling"), envVars: DefaultIncludeEnvVars, sps: 19, execs: DefaultExecSyncPerSecond},
		{id: component.MustNewIDWithName("profiling", "own_env_vars"), envVars: "OTEL_SERVICE_NAME,DEPLOYMENT", sps: 20, execs: DefaultExecSyncPerSecond},
		{id: component.MustNewIDWithName("profiling", "no_env_vars"), envVars: "", sps: 20, execs: DefaultExecSyncPerSecond},
		{id: component.MustNewIDWithName("profiling", "no_exec_sync"), envVars: DefaultIncludeEnvVars, sps: 20, execs: 0},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			require.NoError(t, confmap.Validate(cfg))
			c := cfg.(*Config)
			assert.Equal(t, tt.envVars, c.IncludeEnvVars, "a value the user sets wins")
			assert.Equal(t, tt.sps, c.SamplesPerSecond)
			assert.Equal(t, tt.execs, c.ExecSyncPerSecond)
		})
	}
}

func TestExecSyncPerSecondMustNotBeNegative(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.ExecSyncPerSecond = -1
	err := confmap.Validate(cfg)
	require.ErrorContains(t, err, "exec_sync_per_second")
}

// fakeProfiles stands in for upstream's receiver: it records Start.
type fakeProfiles struct {
	component.ShutdownFunc
	started bool
}

func (f *fakeProfiles) Start(context.Context, component.Host) error { f.started = true; return nil }

func startWith(t *testing.T, errorMode config.ErrorMode, prepareErr error) (*fakeProfiles, *observer.ObservedLogs, error) {
	t.Helper()
	upstream := &fakeProfiles{}
	create := createProfiles(func(context.Context, receiver.Settings, component.Config, xconsumer.Profiles) (xreceiver.Profiles, error) {
		return upstream, nil
	}, func(*zap.Logger) error { return prepareErr })
	cfg := &NewFactory().CreateDefaultConfig().(*Config).Config
	cfg.ErrorMode = errorMode
	core, logs := observer.New(zap.InfoLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	r, err := create(context.Background(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	return upstream, logs, r.Start(context.Background(), componenttest.NewNopHost())
}

// TestStartPreparesMemlockFirst: the memlock step's error is what Start
// returns (and the collector prints), in place of upstream's
// "failed to set temporary rlimit"; upstream's Start does not run then.
func TestStartPreparesMemlockFirst(t *testing.T) {
	want := memlock.NeedsCapabilityError("5.10.0-28-amd64", "8 MiB")
	upstream, _, err := startWith(t, config.PropagateError, want)
	require.Equal(t, want, err)
	assert.Contains(t, err.Error(), "CAP_SYS_RESOURCE")
	assert.False(t, upstream.started)

	upstream, _, err = startWith(t, config.PropagateError, nil)
	require.NoError(t, err)
	assert.True(t, upstream.started)

	// error_mode: ignore logs it and lets upstream run as it does in that mode.
	upstream, logs, err := startWith(t, config.IgnoreError, want)
	require.NoError(t, err)
	assert.True(t, upstream.started)
	require.Equal(t, 1, logs.FilterMessage("eBPF profiler cannot start").Len())
}
