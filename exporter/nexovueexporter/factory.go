// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/exporter/xexporter"

	"github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter/internal/metadata"
	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
)

// NewFactory creates a factory for the nexovue exporter.
func NewFactory() exporter.Factory {
	return xexporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		xexporter.WithProfiles(createProfiles, metadata.ProfilesStability),
	)
}

func createDefaultConfig() component.Config {
	clientConfig := confighttp.NewDefaultClientConfig()
	clientConfig.Endpoint = DefaultEndpoint
	clientConfig.Timeout = 30 * time.Second
	clientConfig.Compression = configcompression.TypeGzip
	// Requests are large and answers small.
	clientConfig.WriteBufferSize = 512 * 1024

	return &Config{
		ClientConfig: clientConfig,
		QueueConfig:  configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
		RetryConfig:  configretry.NewDefaultBackOffConfig(),
		RateLimit:    RateLimitConfig{SamplesPerSecond: DefaultSamplesPerSecond},
		Routing:      RoutingConfig{RejectedKeyRetryInterval: DefaultRejectedKeyRetryInterval},
		// The default encoding is chosen by bytes per sample: see literal.go.
		ProfilesPath:      DefaultProfilesPath,
		AttributeEncoding: DefaultAttributeEncoding,
	}
}

func createProfiles(ctx context.Context, set exporter.Settings, cfg component.Config) (xexporter.Profiles, error) {
	return newProfilesExporter(ctx, set, cfg.(*Config), defaultHalve)
}

func newProfilesExporter(ctx context.Context, set exporter.Settings, cfg *Config, halve halveFunc) (xexporter.Profiles, error) {
	if cfg.Routing.enabled() {
		return newRoutedExporter(ctx, set, cfg, halve)
	}
	return newSingleKeyExporter(ctx, set, cfg, halve, routeOptions{parent: set.ID, keyPath: "key_file"})
}

// routeOptions tell an exporter of one key which route it serves.
type routeOptions struct {
	// parent is the configured exporter's ID, the exporter attribute of
	// every metric.
	parent component.ID
	// route is the rule's name (DefaultRoute for the rest); empty without
	// routing, and then metrics carry no route attribute.
	route string
	// keyPath names the key_file setting in errors.
	keyPath string
	// holdRejected > 0 keeps the requests the ingest refused the key of
	// queued, tried again at this interval; 0 drops them (without routing).
	holdRejected time.Duration
}

func newSingleKeyExporter(ctx context.Context, set exporter.Settings, cfg *Config, halve halveFunc, opts routeOptions) (*profilesExporter, error) {
	e, err := newExporter(cfg, set, halve, opts)
	if err != nil {
		return nil, err
	}
	helper, err := xexporterhelper.NewProfiles(ctx, set, cfg,
		e.push,
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		// Marshaling rewrites strings as dictionary references, as upstream's does.
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		// The HTTP client's timeout bounds each request; a helper timeout would
		// also cut pacing and Retry-After waits short.
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: 0}),
		exporterhelper.WithRetry(cfg.RetryConfig),
		exporterhelper.WithQueue(cfg.QueueConfig),
	)
	if err != nil {
		return nil, err
	}
	return &profilesExporter{Profiles: helper, exp: e}, nil
}

// profilesExporter tells the exporter that shutdown begins before the helper
// drains its queue (the helper calls the exporter's own shutdown last): see
// beginShutdown for what happens to requests held back by pacing or Retry-After.
type profilesExporter struct {
	xexporter.Profiles
	exp *nexovueExporter
}

func (p *profilesExporter) Shutdown(ctx context.Context) error {
	p.exp.beginShutdown(ctx)
	return p.Profiles.Shutdown(ctx)
}

// defaultHalve is the shared splitting code of the frame_limit processor:
// two halves by frames, each with its own compacted dictionary.
var defaultHalve halveFunc = profilesplit.HalveChecked
