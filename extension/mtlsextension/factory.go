// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package mtlsextension // import "github.com/nexovue/otelcol-nexovue/extension/mtlsextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/nexovue/otelcol-nexovue/extension/mtlsextension/internal/metadata"
)

// NewFactory returns the factory of the mtls extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, create, metadata.ExtensionStability)
}

func create(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newMTLS(set, cfg.(*Config))
}
