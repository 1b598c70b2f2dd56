// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package framelimitprocessor // import "github.com/nexovue/otelcol-nexovue/processor/framelimitprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/xprocessor"

	"github.com/nexovue/otelcol-nexovue/processor/framelimitprocessor/internal/metadata"
)

// NewFactory returns the factory of the frame_limit processor, which handles
// profiles only.
func NewFactory() processor.Factory {
	return xprocessor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		xprocessor.WithProfiles(createProfilesProcessor, metadata.ProfilesStability),
	)
}

// createProfilesProcessor builds the processor. It implements
// xprocessor.Profiles itself rather than through xprocessorhelper, whose
// processing function returns one batch and must not call the next consumer:
// this processor sends several batches for one.
func createProfilesProcessor(
	_ context.Context,
	set processor.Settings,
	cfg component.Config,
	next xconsumer.Profiles,
) (xprocessor.Profiles, error) {
	return newFrameLimitProcessor(set, cfg.(*Config), next)
}
