// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilemetricsconnector // import "github.com/nexovue/otelcol-nexovue/connector/profilemetricsconnector"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/xconnector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/nexovue/otelcol-nexovue/connector/profilemetricsconnector/internal/metadata"
)

// NewFactory returns the factory of the profile_metrics connector, from
// profiles to metrics.
func NewFactory() connector.Factory {
	return xconnector.NewFactory(
		metadata.Type,
		createDefaultConfig,
		xconnector.WithProfilesToMetrics(createProfilesToMetrics, metadata.ProfilesToMetricsStability),
	)
}

func createProfilesToMetrics(
	_ context.Context,
	set connector.Settings,
	cfg component.Config,
	next consumer.Metrics,
) (xconnector.Profiles, error) {
	return newConnector(set, cfg.(*Config), next), nil
}
