// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/nexovue/otelcol-nexovue/extension/queuestorageextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/nexovue/otelcol-nexovue/extension/queuestorageextension/internal/metadata"
)

// NewFactory returns the factory of the queue_storage extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, create, metadata.ExtensionStability)
}

func create(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newQueueStorage(set, cfg.(*Config))
}
