// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		id          component.ID
		expected    *Config
		errContains string
	}{
		{
			id:       component.NewID(metadata.Type),
			expected: &Config{KeepEnvAttributes: false, MaxValueLength: 255, Kubernetes: KubernetesConfig{UseLabels: true}, CoverageWindow: 5 * time.Minute},
		},
		{
			id:       component.NewIDWithName(metadata.Type, "keep_env"),
			expected: &Config{KeepEnvAttributes: true, MaxValueLength: 255, Kubernetes: KubernetesConfig{UseLabels: true}, CoverageWindow: 5 * time.Minute},
		},
		{
			id:       component.NewIDWithName(metadata.Type, "long_values"),
			expected: &Config{KeepEnvAttributes: false, MaxValueLength: 1024, Kubernetes: KubernetesConfig{UseLabels: true}, CoverageWindow: 5 * time.Minute},
		},
		{
			id:       component.NewIDWithName(metadata.Type, "kubernetes"),
			expected: &Config{KeepEnvAttributes: false, MaxValueLength: 255, Kubernetes: KubernetesConfig{Enabled: true, UseLabels: false}, CoverageWindow: 5 * time.Minute},
		},
		{
			id:       component.NewIDWithName(metadata.Type, "short_coverage_window"),
			expected: &Config{KeepEnvAttributes: false, MaxValueLength: 255, Kubernetes: KubernetesConfig{UseLabels: true}, CoverageWindow: 30 * time.Second},
		},
		{
			id:          component.NewIDWithName(metadata.Type, "coverage_window_zero"),
			errContains: "coverage_window: must be between 1s and 24h0m0s, got 0s",
		},
		{
			id:          component.NewIDWithName(metadata.Type, "too_short"),
			errContains: "max_value_length: must be between 32 and 4096 bytes, got 8",
		},
		{
			id:          component.NewIDWithName(metadata.Type, "too_long"),
			errContains: "max_value_length: must be between 32 and 4096 bytes, got 100000",
		},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))

			err = confmap.Validate(cfg)
			if tt.errContains != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.errContains)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.expected, cfg)
		})
	}
}

func TestLoadConfigUnknownKey(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, "unknown_key").String())
	require.NoError(t, err)
	err = sub.Unmarshal(NewFactory().CreateDefaultConfig())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "keep_env")
}

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cfg.Validate())
	assert.False(t, cfg.KeepEnvAttributes)
	assert.Equal(t, 255, cfg.MaxValueLength)
	assert.False(t, cfg.Kubernetes.Enabled)
	assert.True(t, cfg.Kubernetes.UseLabels)
}
