// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	ebpfcollector "go.opentelemetry.io/ebpf-profiler/collector"
	"go.opentelemetry.io/ebpf-profiler/collector/config"
)

func TestDefaultConfigOnlyChangesIncludeEnvVars(t *testing.T) {
	ours := NewFactory().CreateDefaultConfig().(*config.Config)
	upstream := ebpfcollector.NewFactory().CreateDefaultConfig().(*config.Config)
	assert.Equal(t, "OTEL_SERVICE_NAME,OTEL_RESOURCE_ATTRIBUTES", ours.IncludeEnvVars)
	assert.Empty(t, upstream.IncludeEnvVars, "upstream's default changed: revisit this wrapper")
	upstream.IncludeEnvVars = ours.IncludeEnvVars
	assert.Equal(t, upstream, ours)
	assert.Equal(t, ebpfcollector.NewFactory().Type(), NewFactory().Type())
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	tests := []struct {
		id      component.ID
		envVars string
		sps     int
	}{
		{id: component.MustNewID("profiling"), envVars: DefaultIncludeEnvVars, sps: 19},
		{id: component.MustNewIDWithName("profiling", "own_env_vars"), envVars: "OTEL_SERVICE_NAME,DEPLOYMENT", sps: 20},
		{id: component.MustNewIDWithName("profiling", "no_env_vars"), envVars: "", sps: 20},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			require.NoError(t, confmap.Validate(cfg))
			c := cfg.(*config.Config)
			assert.Equal(t, tt.envVars, c.IncludeEnvVars, "a value the user sets wins")
			assert.Equal(t, tt.sps, c.SamplesPerSecond)
		})
	}
}
