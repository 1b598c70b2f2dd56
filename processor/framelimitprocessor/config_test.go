// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package framelimitprocessor

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/nexovue/otelcol-nexovue/processor/framelimitprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		id          component.ID
		expected    *Config
		errContains string
	}{
		{id: component.NewID(metadata.Type), expected: &Config{MaxFrames: 1_000_000}},
		{id: component.NewIDWithName(metadata.Type, "small"), expected: &Config{MaxFrames: 5000}},
		{id: component.NewIDWithName(metadata.Type, "one"), expected: &Config{MaxFrames: 1}},
		{id: component.NewIDWithName(metadata.Type, "zero"), errContains: "max_frames: must be between 1 and 1000000, got 0"},
		{id: component.NewIDWithName(metadata.Type, "negative"), errContains: "max_frames: must be between 1 and 1000000, got -3"},
		{id: component.NewIDWithName(metadata.Type, "too_large"), errContains: "max_frames: must be between 1 and 1000000, got 1000001"},
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
	require.ErrorContains(t, err, "max_stack_depth")
}
