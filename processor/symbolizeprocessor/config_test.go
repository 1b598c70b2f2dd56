// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
	"github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		id          component.ID
		expected    *Config
		errContains string
	}{
		{id: component.NewID(metadata.Type), expected: &Config{CacheSizeMiB: 64, MaxFileSizeMiB: 1024, LoadWait: 2 * time.Second, Debuginfod: debugfile.DefaultDebuginfodConfig()}},
		{id: component.NewIDWithName(metadata.Type, "small"), expected: &Config{CacheSizeMiB: 8, MaxFileSizeMiB: 100, DebugDirs: []string{"/var/lib/nxv-debug", "/opt/debug"}, LoadWait: 500 * time.Millisecond, Debuginfod: debugfile.DefaultDebuginfodConfig()}},
		{id: component.NewIDWithName(metadata.Type, "bounds"), expected: &Config{CacheSizeMiB: 4096, MaxFileSizeMiB: 1, LoadWait: 2 * time.Second, Debuginfod: debugfile.DefaultDebuginfodConfig()}},
		{id: component.NewIDWithName(metadata.Type, "debuginfod"), expected: &Config{CacheSizeMiB: 64, MaxFileSizeMiB: 1024, LoadWait: 2 * time.Second, Debuginfod: debugfile.DebuginfodConfig{
			URLs: []string{"https://debuginfod.debian.net"}, Timeout: 5 * time.Second, MaxFileSizeMiB: 256, MaxConcurrent: 1,
			CacheDir: "/var/cache/nxv", CacheSizeMiB: 512, NegativeCacheTTL: time.Hour,
		}}},
		{id: component.NewIDWithName(metadata.Type, "debuginfod_bad"), errContains: `debuginfod::urls[0]: scheme must be http or https, got "ftp"`},
		{id: component.NewIDWithName(metadata.Type, "debuginfod_bad"), errContains: "debuginfod::max_concurrent: must be between 1 and 64, got 0"},
		{id: component.NewIDWithName(metadata.Type, "cache_zero"), errContains: "cache_size_mib: must be between 1 and 4096, got 0"},
		{id: component.NewIDWithName(metadata.Type, "cache_too_large"), errContains: "cache_size_mib: must be between 1 and 4096, got 4097"},
		{id: component.NewIDWithName(metadata.Type, "file_zero"), errContains: "max_file_size_mib: must be between 1 and 65536, got 0"},
		{id: component.NewIDWithName(metadata.Type, "file_negative"), errContains: "max_file_size_mib: must be between 1 and 65536, got -1"},
		{id: component.NewIDWithName(metadata.Type, "no_wait"), expected: &Config{CacheSizeMiB: 64, MaxFileSizeMiB: 1024, Debuginfod: debugfile.DefaultDebuginfodConfig()}},
		{id: component.NewIDWithName(metadata.Type, "wait_negative"), errContains: "load_wait: must be between 0s and 1m0s, got -1s"},
		{id: component.NewIDWithName(metadata.Type, "wait_too_long"), errContains: "load_wait: must be between 0s and 1m0s, got 2m0s"},
		{id: component.NewIDWithName(metadata.Type, "debug_dir_relative"), errContains: `debug_dirs[1]: must be an absolute path, got "debug"`},
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
	require.ErrorContains(t, err, "cache_size")
}
