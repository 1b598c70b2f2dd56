// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/nexovue/otelcol-nexovue/extension/queuestorageextension/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	tests := []struct {
		id          component.ID
		expected    *Config
		errContains string
	}{
		{id: component.NewID(metadata.Type), expected: &Config{Directory: "/var/lib/otelcol/queue", CreateDirectory: true, MaxSizeMiB: 256}},
		{id: component.NewIDWithName(metadata.Type, "bounded"), expected: &Config{Directory: "/var/lib/otelcol/queue", MaxSizeMiB: 64}},
		{id: component.NewIDWithName(metadata.Type, "no_directory"), errContains: "directory: must be set"},
		{id: component.NewIDWithName(metadata.Type, "zero_bound"), errContains: "max_size_mib: must be between 1 and 1048576, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.errContains != "" {
				require.ErrorContains(t, err, tt.errContains)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.expected, cfg)
		})
	}
}
