package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/exporter/xexporter"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
)

// These tests send through the Collector's own otlphttp exporter (v0.161.0),
// proving the double's answers are what that client understands.

func newExporter(t *testing.T, srv *ingest.Server, key string, edit func(*otlphttpexporter.Config)) xexporter.Profiles {
	t.Helper()
	f := otlphttpexporter.NewFactory().(xexporter.Factory)
	cfg := f.CreateDefaultConfig().(*otlphttpexporter.Config)
	cfg.ClientConfig.Endpoint = srv.URL()
	cfg.ClientConfig.Headers.Set(ingest.KeyHeader, configopaque.String(key))
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = false
	if edit != nil {
		edit(cfg)
	}
	exp, err := f.CreateProfiles(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	return exp
}

func TestOTLPHTTPExporterIsAccepted(t *testing.T) {
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{"k"}})
	for _, tc := range []struct {
		name string
		edit func(*otlphttpexporter.Config)
	}{
		{"proto gzip (default)", nil},
		{"proto zstd", func(c *otlphttpexporter.Config) { c.ClientConfig.Compression = configcompression.TypeZstd }},
		{"json uncompressed", func(c *otlphttpexporter.Config) {
			c.Encoding = otlphttpexporter.EncodingJSON
			c.ClientConfig.Compression = ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := newExporter(t, srv, "k", tc.edit)
			pd := ingest.NewRequestBuilder().SeqRange("checkout", 0, 10, "leaf", "root").Profiles()
			require.NoError(t, exp.ConsumeProfiles(context.Background(), pd))
		})
	}
	assert.Equal(t, int64(30), srv.SamplesAccepted())
	assert.Equal(t, 3, srv.Requests(200))
	assert.Equal(t, []ingest.FunctionCount{{Function: "leaf", Samples: 30}}, srv.TopLeafFunctions("checkout", 0))
}

func TestOTLPHTTPExporterReportsRefusals(t *testing.T) {
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{"k"}, MaxFrames: 5})
	good := ingest.NewRequestBuilder().Sample("a", "f", "g")

	err := newExporter(t, srv, "wrong", nil).ConsumeProfiles(context.Background(), good.Profiles())
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err))
	assert.Contains(t, err.Error(), "Status Code 401, Message=unknown x-nexovue-key")
	assert.NotContains(t, err.Error(), "wrong")

	exp := newExporter(t, srv, "k", nil)
	bad := good.Profiles()
	bad.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0).Samples().At(0).SetStackIndex(57)
	err = exp.ConsumeProfiles(context.Background(), bad)
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err))
	assert.Contains(t, err.Error(), "Status Code 400, Message=invalid stack_table index 57 (table has 2 entries)")

	err = exp.ConsumeProfiles(context.Background(), ingest.NewRequestBuilder().Samples("a", 3, "f", "g").Profiles())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Status Code 413, Message=request stacks write out to 6 frames, more than the limit of 5")
}

func TestOTLPHTTPExporterHonoursRetryAfter(t *testing.T) {
	for _, httpDate := range []bool{false, true} {
		t.Run(map[bool]string{false: "delay-seconds", true: "HTTP-date"}[httpDate], func(t *testing.T) {
			srv := ingest.StartForTest(t, ingest.Config{Keys: []string{"k"}, SamplesPerSecond: 10, RetryAfterHTTPDate: httpDate})
			exp := newExporter(t, srv, "k", func(c *otlphttpexporter.Config) {
				c.RetryConfig.Enabled = true
				c.RetryConfig.InitialInterval = 10 * time.Millisecond
				c.RetryConfig.MaxElapsedTime = 10 * time.Second
			})
			require.NoError(t, exp.ConsumeProfiles(context.Background(), ingest.NewRequestBuilder().SeqRange("a", 0, 10, "f").Profiles()))
			// Over the limit: 429, the exporter waits as told and retries.
			require.NoError(t, exp.ConsumeProfiles(context.Background(), ingest.NewRequestBuilder().SeqRange("a", 10, 15, "f").Profiles()))
			assert.Equal(t, 1, srv.Requests(429))
			assert.Equal(t, 0, srv.EarlyRetries(), "the exporter waited as announced")
			assert.Empty(t, srv.MissingSeq(15))
		})
	}
}
