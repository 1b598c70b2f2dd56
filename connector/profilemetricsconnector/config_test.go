// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilemetricsconnector

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/nexovue/otelcol-nexovue/connector/profilemetricsconnector/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		id          component.ID
		expected    *Config
		errContains string
	}{
		{id: component.NewID(metadata.Type), expected: &Config{
			GroupBy:      []string{"service.name", "service.namespace", "k8s.namespace.name", "k8s.pod.name"},
			Interval:     time.Minute,
			TopFunctions: 20,
			MaxSeries:    10_000,
			SeriesExpiry: 5 * time.Minute,
			Temporality:  "cumulative",
		}},
		{id: component.NewIDWithName(metadata.Type, "custom"), expected: &Config{
			GroupBy:       []string{"service.name", "host.name"},
			Interval:      15 * time.Second,
			TopFunctions:  5,
			InclusiveTime: true,
			MaxSeries:     500,
			SeriesExpiry:  2 * time.Minute,
			Temporality:   "delta",
		}},
		{id: component.NewIDWithName(metadata.Type, "bad_group_by"), errContains: "group_by[1]: must not be empty"},
		{id: component.NewIDWithName(metadata.Type, "bad_interval"), errContains: "interval: must be positive, got 0s"},
		{id: component.NewIDWithName(metadata.Type, "bad_top_functions"), errContains: "top_functions: must be between 0 and 1000, got -1"},
		{id: component.NewIDWithName(metadata.Type, "bad_max_series"), errContains: "max_series: must be between 1 and 1000000, got 0"},
		{id: component.NewIDWithName(metadata.Type, "bad_expiry"), errContains: "series_expiry: must be at least interval (1m0s), got 30s"},
		{id: component.NewIDWithName(metadata.Type, "bad_temporality"), errContains: `temporality: must be "cumulative" or "delta", got "monthly"`},
		{id: component.NewIDWithName(metadata.Type, "bad_inclusive"), errContains: "inclusive_time: needs top_functions above 0"},
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
	require.ErrorContains(t, sub.Unmarshal(NewFactory().CreateDefaultConfig()), "top_function")
}

func TestDuplicateGroupBy(t *testing.T) {
	cfg := testConfig(func(c *Config) { c.GroupBy = []string{"service.name", "service.name"} })
	require.ErrorContains(t, cfg.Validate(), `group_by[1]: "service.name" is listed twice`)
}
