// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package pprofreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/metadata"
)

func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

func TestLoadConfig(t *testing.T) {
	t.Run("documented shape", func(t *testing.T) {
		cfg := loadConfig(t, "")
		require.NoError(t, confmap.Validate(cfg))
		assert.Equal(t, "http://checkout:6060/debug/pprof/heap", cfg.Remote.Client.Endpoint)
		assert.Equal(t, 30*time.Second, cfg.Remote.CollectionInterval)
		assert.Equal(t, int64(64<<20), cfg.Remote.MaxBodySize)
		assert.True(t, cfg.Delta)
		assert.False(t, cfg.KeepOriginalPayload)
		assert.Empty(t, cfg.ServiceName)
		assert.Equal(t, 30*time.Second, cfg.Remote.effectiveTimeout(), "timeout defaults to the interval")
	})
	t.Run("cpu with client settings", func(t *testing.T) {
		cfg := loadConfig(t, "cpu")
		require.NoError(t, confmap.Validate(cfg))
		assert.Equal(t, time.Minute, cfg.Remote.CollectionInterval)
		assert.Equal(t, 20*time.Second, cfg.Remote.effectiveTimeout())
		v, ok := cfg.Remote.Client.Headers.Get("authorization")
		require.True(t, ok)
		assert.Equal(t, configopaque.String("Bearer abc"), v)
		assert.True(t, cfg.Remote.Client.TLS.InsecureSkipVerify)
		assert.Equal(t, int64(1<<20), cfg.Remote.MaxBodySize)
		assert.Equal(t, "checkout", cfg.ServiceName)
		assert.False(t, cfg.Delta)
		assert.True(t, cfg.KeepOriginalPayload)
	})
	t.Run("defaults", func(t *testing.T) {
		cfg := loadConfig(t, "defaults")
		require.NoError(t, confmap.Validate(cfg))
		assert.Equal(t, 30*time.Second, cfg.Remote.CollectionInterval)
		assert.Equal(t, time.Duration(0), cfg.Remote.Client.Timeout)
		assert.Equal(t, 30*time.Second, cfg.Remote.effectiveTimeout())
	})
}

func TestConfigValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wantErr string
	}{
		{"bad_url", `remote::endpoint: not a valid URL: invalid port ":port" after host`},
		{"not_http", `remote::endpoint: scheme must be http or https, got "checkout"`},
		{"no_endpoint", "remote::endpoint: must be set"},
		{"zero_interval", "remote::collection_interval: must be between 1s and 24h0m0s, got 0s"},
		{"negative_interval", "remote::collection_interval: must be between 1s and 24h0m0s, got -5s"},
		{"interval_too_short", "remote::collection_interval: must be between 1s and 24h0m0s, got 1ms"},
		{"interval_too_long", "remote::collection_interval: must be between 1s and 24h0m0s, got 25h0m0s"},
		{"cpu_default_seconds", "remote::endpoint: without a seconds parameter Go records a CPU profile for 30s, which does not fit inside remote::collection_interval 30s"},
		{"fractional_seconds", `remote::endpoint: query parameter seconds="1.5" must be a positive whole number`},
		{"cpu_too_long", "remote::endpoint: profile duration seconds=30s does not fit inside remote::collection_interval 30s"},
		{"bad_seconds", `remote::endpoint: query parameter seconds="ten" must be a positive whole number`},
		{"timeout_too_short", "remote::timeout: 5s does not cover the profile duration seconds=10s"},
		{"zero_max_body_size", "remote::max_body_size: must be positive, got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := loadConfig(t, tc.name)
			err := confmap.Validate(cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestValidateNeverLeaksCredentials(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Remote.Client.Endpoint = "http://user:s3cret@checkout:port/debug/pprof/heap"
	err := cfg.Validate()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cret")
}

func TestUnknownKeyRejected(t *testing.T) {
	cm := confmap.NewFromStringMap(map[string]any{
		"remote": map[string]any{
			"endpoint":           "http://checkout:6060/debug/pprof/heap",
			"colection_interval": "30s",
		},
	})
	cfg := createDefaultConfig().(*Config)
	err := cm.Unmarshal(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "colection_interval")
}

func TestDefaultTimeoutCoversCPUProfile(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Remote.Client.Endpoint = "http://checkout:6060/debug/pprof/profile?seconds=10"
	require.NoError(t, cfg.Validate())
	u, err := parseEndpoint(cfg.Remote.Client.Endpoint)
	require.NoError(t, err)
	secs, ok, err := profileSeconds(u)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 10*time.Second, secs)
	assert.Greater(t, cfg.Remote.effectiveTimeout(), secs)
}
