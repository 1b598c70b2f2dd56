// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilesgateconverter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

func TestConvert(t *testing.T) {
	withProfiles := map[string]any{"service": map[string]any{"pipelines": map[string]any{
		"traces":           map[string]any{},
		"profiles/nexovue": map[string]any{"receivers": []any{"profiling"}},
	}}}
	withoutProfiles := map[string]any{"service": map[string]any{"pipelines": map[string]any{
		"traces": map[string]any{},
	}}}
	tests := []struct {
		name                string
		conf                map[string]any
		enabled, registered bool
		version             string
		wantErr             string
	}{
		{name: "gate off, profiles pipeline", conf: withProfiles, registered: true, version: "0.170.1",
			wantErr: "service::pipelines::profiles/nexovue: profiles are an alpha signal in this Collector (0.170.1); start the collector with --feature-gates=service.profilesSupport"},
		{name: "gate off, version unknown", conf: withProfiles, registered: true,
			wantErr: "service::pipelines::profiles/nexovue: profiles are an alpha signal in this Collector; start the collector with --feature-gates=service.profilesSupport"},
		{name: "gate on", conf: withProfiles, registered: true, enabled: true},
		{name: "gate not registered", conf: withProfiles},
		{name: "no profiles pipeline", conf: withoutProfiles, registered: true},
		{name: "no service section", conf: map[string]any{"receivers": map[string]any{}}, registered: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := converter{
				gateEnabled: func() (bool, bool) { return tt.enabled, tt.registered },
				version:     func() string { return tt.version },
			}
			conf := confmap.NewFromStringMap(tt.conf)
			before := conf.ToStringMap()
			err := c.Convert(context.Background(), conf)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, before, conf.ToStringMap(), "the converter must not change the configuration")
		})
	}
}
