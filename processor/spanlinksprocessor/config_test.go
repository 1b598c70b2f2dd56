// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package spanlinksprocessor

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/nexovue/otelcol-nexovue/processor/spanlinksprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		id          component.ID
		expected    *Config
		errContains string
	}{
		{id: component.NewID(metadata.Type), expected: &Config{SpanIDLabel: "span_id", TraceIDLabel: "trace_id", KeepLabels: true}},
		{id: component.NewIDWithName(metadata.Type, "custom"), expected: &Config{SpanIDLabel: "dd.span_id", TraceIDLabel: "dd.trace_id", KeepLabels: false}},
		{id: component.NewIDWithName(metadata.Type, "empty_span"), errContains: "span_id_label: must not be empty"},
		{id: component.NewIDWithName(metadata.Type, "empty_trace"), errContains: "trace_id_label: must not be empty"},
		{id: component.NewIDWithName(metadata.Type, "same"), errContains: "trace_id_label: must differ from span_id_label"},
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
	require.ErrorContains(t, err, "span_label")
}
