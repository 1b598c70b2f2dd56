// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter // import "github.com/nexovue/otelcol-nexovue/exporter/profileviewexporter"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/exporter/xexporter"

	"github.com/nexovue/otelcol-nexovue/exporter/profileviewexporter/internal/metadata"
)

// NewFactory creates a factory for the profile view exporter.
func NewFactory() exporter.Factory {
	return xexporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		xexporter.WithProfiles(createProfiles, metadata.ProfilesStability),
	)
}

func createDefaultConfig() component.Config {
	server := confighttp.NewDefaultServerConfig()
	server.NetAddr.Endpoint = DefaultEndpoint
	server.MaxRequestBodySize = DefaultMaxRequestBytes
	return &Config{
		ServerConfig:         server,
		Window:               DefaultWindow,
		MaxMemoryMiB:         DefaultMaxMemoryMiB,
		MaxConcurrentRenders: DefaultMaxConcurrentRenders,
		MaxProfileBytes:      DefaultMaxProfileBytes,
	}
}

func createProfiles(ctx context.Context, set exporter.Settings, cfg component.Config) (xexporter.Profiles, error) {
	v, err := newView(cfg.(*Config), set)
	if err != nil {
		return nil, err
	}
	return xexporterhelper.NewProfiles(ctx, set, cfg,
		v.consume,
		exporterhelper.WithStart(v.start),
		exporterhelper.WithShutdown(v.shutdown),
		// A sink: no queue, no retry; it only reads what it receives.
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
	)
}
