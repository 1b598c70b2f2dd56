// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter/internal/metadata"
)

// loadConfig unmarshals the named configuration of testdata/config.yaml over the defaults.
func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	id := component.NewID(metadata.Type)
	if name != "" {
		id = component.NewIDWithName(metadata.Type, name)
	}
	sub, err := cm.Sub(id.String())
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig()
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg.(*Config)
}

func TestDefaultConfig(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	assert.Equal(t, "https://ingest.nexovue.com", cfg.ClientConfig.Endpoint)
	assert.Equal(t, "https://ingest.nexovue.com/v1development/profiles", cfg.profilesURL())
	assert.Equal(t, configcompression.TypeGzip, cfg.ClientConfig.Compression)
	assert.Equal(t, 30*time.Second, cfg.ClientConfig.Timeout)
	assert.Equal(t, 20_000, cfg.RateLimit.SamplesPerSecond)
	assert.Equal(t, "/v1development/profiles", cfg.ProfilesPath)
	assert.Equal(t, AttributeEncodingStringTable, cfg.AttributeEncoding)
	assert.Equal(t, configretry.NewDefaultBackOffConfig(), cfg.RetryConfig)
	require.True(t, cfg.QueueConfig.HasValue())
	assert.Equal(t, exporterhelper.NewDefaultQueueConfig(), *cfg.QueueConfig.Get())
	assert.Empty(t, cfg.Key)

	// The default config has no key, so it does not validate.
	require.NoError(t, confmap.New().Unmarshal(&cfg))
	assert.ErrorContains(t, confmap.Validate(cfg), "key")
}

func TestLoadConfig(t *testing.T) {
	t.Run("key only", func(t *testing.T) {
		cfg := loadConfig(t, "")
		want := NewFactory().CreateDefaultConfig().(*Config)
		want.Key = "secret-ingest-key"
		assert.Equal(t, want, cfg)
		assert.NoError(t, confmap.Validate(cfg))
	})

	t.Run("full", func(t *testing.T) {
		cfg := loadConfig(t, "full")
		require.NoError(t, confmap.Validate(cfg))
		assert.Equal(t, configopaque.String("secret-ingest-key"), cfg.Key)
		assert.Equal(t, "https://eu.ingest.nexovue.com/", cfg.ClientConfig.Endpoint)
		assert.Equal(t, "https://eu.ingest.nexovue.com/v1development/profiles", cfg.profilesURL())
		assert.Equal(t, 10*time.Second, cfg.ClientConfig.Timeout)
		assert.Equal(t, configcompression.Level(1), cfg.ClientConfig.CompressionParams.Level)
		assert.Equal(t, "http://proxy.internal:3128", cfg.ClientConfig.ProxyURL)
		assert.Equal(t, "/etc/ssl/nexovue-ca.pem", cfg.ClientConfig.TLS.CAFile)
		assert.Equal(t, 5000, cfg.RateLimit.SamplesPerSecond)

		q := cfg.QueueConfig.Get()
		require.NotNil(t, q)
		assert.Equal(t, 4, q.NumConsumers)
		assert.Equal(t, int64(500), q.QueueSize)
		require.NotNil(t, q.StorageID)
		assert.Equal(t, component.MustNewIDWithName("file_storage", "nexovue"), *q.StorageID)

		assert.True(t, cfg.RetryConfig.Enabled)
		assert.Equal(t, time.Second, cfg.RetryConfig.InitialInterval)
		assert.Equal(t, 10*time.Second, cfg.RetryConfig.MaxInterval)
		assert.Equal(t, 2*time.Minute, cfg.RetryConfig.MaxElapsedTime)
	})

	t.Run("another OTLP/HTTP profiles endpoint", func(t *testing.T) {
		cfg := loadConfig(t, "pyroscope")
		require.NoError(t, confmap.Validate(cfg), "no key is needed outside nexovue.com")
		assert.Equal(t, "http://pyroscope.monitoring:4040/v1development/profiles", cfg.profilesURL())
		assert.Equal(t, AttributeEncodingLiteral, cfg.AttributeEncoding)
		assert.Equal(t, 0, cfg.RateLimit.SamplesPerSecond)
		h := cfg.header("ua")
		assert.Empty(t, h.Values(keyHeader), "no key header without a key")
		assert.Equal(t, "application/x-protobuf", h.Get("Content-Type"))
		v, ok := cfg.ClientConfig.Headers.Get("X-Scope-OrgID")
		require.True(t, ok)
		assert.Equal(t, configopaque.String("team-a"), v)
	})

	t.Run("pacing off", func(t *testing.T) {
		cfg := loadConfig(t, "nopacing")
		require.NoError(t, confmap.Validate(cfg))
		assert.Equal(t, 0, cfg.RateLimit.SamplesPerSecond)
	})
}

func TestConfigValidationErrors(t *testing.T) {
	tests := []struct {
		name string
		want []string // every fragment must appear in the error
	}{
		{name: "nokey", want: []string{"key:", "NEXOVUE_KEY"}},
		{name: "negativerate", want: []string{"rate_limit::samples_per_second", "-1"}},
		{name: "badendpoint", want: []string{"endpoint:", "https://"}},
		{name: "emptyendpoint", want: []string{"endpoint:", "must not be empty"}},
		{name: "keyheader", want: []string{"headers::x-nexovue-key", "`key`"}},
		{name: "zerotimeout", want: []string{"timeout:", "must be positive"}},
		{name: "nokeyeu", want: []string{"key:", "NEXOVUE_KEY"}},
		{name: "badencoding", want: []string{"attribute_encoding:", `"string_table"`, `"literal"`, `"inline"`}},
		{name: "badpath", want: []string{"profiles_path:", "must start with /"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, tt.name))
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			// A validation error never echoes the key.
			assert.NotContains(t, err.Error(), "secret-ingest-key")
		})
	}
}

func TestValidateEndpointForms(t *testing.T) {
	valid := []string{"https://ingest.nexovue.com", "http://127.0.0.1:4318", "https://ingest.nexovue.com/prefix/"}
	for _, ep := range valid {
		assert.NoError(t, validateEndpoint(ep), ep)
	}
	invalid := map[string]string{
		"ftp://ingest.nexovue.com": "must start with https://",
		"https://":                 "has no host",
		"https://user:secret-pw@ingest.nexovue.com": "user information",
		"https://ingest.nexovue.com/?key=abc":       "query",
		"http://[::1":                               "not a valid URL",
	}
	for ep, want := range invalid {
		err := validateEndpoint(ep)
		require.Error(t, err, ep)
		assert.Contains(t, err.Error(), "endpoint:")
		assert.Contains(t, err.Error(), want, ep)
		assert.NotContains(t, err.Error(), "secret-pw")
	}
}

func TestIsNexovueEndpoint(t *testing.T) {
	for ep, want := range map[string]bool{
		"https://ingest.nexovue.com":         true,
		"https://eu.ingest.nexovue.com:443/": true,
		"https://INGEST.NEXOVUE.COM.":        true,
		"https://nexovue.com":                true,
		"http://127.0.0.1:4040":              false,
		"http://pyroscope:4040":              false,
		"https://notnexovue.com":             false,
		"https://ingest.nexovue.com.evil":    false,
		"ingest.nexovue.com":                 true, // no scheme: refused by endpoint, key asked for too
	} {
		assert.Equal(t, want, isNexovueEndpoint(ep), ep)
	}
}

func TestKeyWithLineBreakIsRejectedWithoutEchoingIt(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Key = "secret-ingest-key\n"
	err := confmap.Validate(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "key:")
	assert.Contains(t, err.Error(), "NEXOVUE_KEY")
	assert.NotContains(t, err.Error(), "secret-ingest-key")
}
