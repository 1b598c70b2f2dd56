// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package mtlsextension

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/otel/attribute"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	tests := []struct {
		id          string
		errContains []string
		check       func(t *testing.T, cfg *Config)
	}{
		{id: "mtls/server", check: func(t *testing.T, cfg *Config) {
			require.NotNil(t, cfg.Server)
			assert.Equal(t, "/etc/otelcol-nexovue/tls/ca.crt", cfg.Server.ClientCAFile)
			assert.True(t, cfg.Server.ReloadClientCAFile)
			assert.Equal(t, time.Minute, cfg.Server.ReloadInterval)
			assert.Nil(t, cfg.Client)
		}},
		{id: "mtls/client", check: func(t *testing.T, cfg *Config) {
			require.NotNil(t, cfg.Client)
			assert.Equal(t, "/etc/otelcol-nexovue/tls/ca.crt", cfg.Client.CAFile)
			assert.Equal(t, "/etc/otelcol-nexovue/tls/tls.crt", cfg.Client.CertFile)
		}},
		{id: "mtls/insecure", check: func(t *testing.T, cfg *Config) { assert.True(t, cfg.Insecure) }},
		{id: "mtls/nothing", errContains: []string{"server, client: one must be set"}},
		{id: "mtls/server_without_client_ca", errContains: []string{"server::client_ca_file: must be set"}},
		{id: "mtls/client_without_ca", errContains: []string{"client::ca_file: must be set"}},
		{id: "mtls/client_skip_verify", errContains: []string{"client::insecure_skip_verify: must not be set"}},
		{id: "mtls/client_without_cert", errContains: []string{"client::cert_file: must be set", "client::key_file: must be set"}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig().(*Config)
			sub, err := cm.Sub(tt.id)
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.errContains != nil {
				for _, s := range tt.errContains {
					require.ErrorContains(t, err, s)
				}
				return
			}
			require.NoError(t, err)
			tt.check(t, cfg)
		})
	}
}

// attrs are the attributes of a data point: the role, and the reason when
// not empty.
func attrs(role, reason string) attribute.Set {
	if reason == "" {
		return attribute.NewSet(attribute.String("role", role))
	}
	return attribute.NewSet(attribute.String("role", role), attribute.String("reason", reason))
}
