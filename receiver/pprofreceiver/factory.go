// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package pprofreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"

	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/metadata"
)

// NewFactory returns the factory of the pprof receiver.
func NewFactory() receiver.Factory {
	return xreceiver.NewFactory(
		metadata.Type,
		createDefaultConfig,
		xreceiver.WithProfiles(createProfiles, metadata.ProfilesStability),
	)
}

func createDefaultConfig() component.Config {
	client := confighttp.NewDefaultClientConfig()
	return &Config{
		Remote: RemoteConfig{
			Client:             client,
			CollectionInterval: defaultCollectionInterval,
			MaxBodySize:        defaultMaxBodySize,
		},
		Delta: true,
	}
}

func createProfiles(_ context.Context, set receiver.Settings, cfg component.Config, next xconsumer.Profiles) (xreceiver.Profiles, error) {
	return newReceiver(set, cfg.(*Config), next)
}
