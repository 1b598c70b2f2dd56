// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor // import "github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor/internal/metadata"
)

type serviceNameProcessor struct {
	namer     namer
	telemetry *metadata.TelemetryBuilder
	// sourceAttrs holds, per source, the precomputed "source" attribute
	// option, so that recording a batch allocates neither an attribute set
	// nor an option slice.
	sourceAttrs [numSources][]metric.AddOption
}

func newServiceNameProcessor(set processor.Settings, cfg *Config) (*serviceNameProcessor, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	p := &serviceNameProcessor{namer: newNamer(cfg), telemetry: tb}
	for s := range numSources {
		p.sourceAttrs[s] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("source", s.String())))}
	}
	return p, nil
}

// processProfiles names every resource of the request in place. Counts are
// gathered per request and recorded once per source.
func (p *serviceNameProcessor) processProfiles(ctx context.Context, pd pprofile.Profiles) (pprofile.Profiles, error) {
	var named [numSources]int64
	var skipped int64
	rps := pd.ResourceProfiles()
	for i := 0; i < rps.Len(); i++ {
		src, s := p.namer.name(rps.At(i).Resource().Attributes())
		named[src]++
		skipped += int64(s)
	}
	for s, count := range named {
		if count > 0 {
			p.telemetry.ProcessorServiceNameResources.Add(ctx, count, p.sourceAttrs[s]...)
		}
	}
	if skipped > 0 {
		p.telemetry.ProcessorServiceNameSkippedEntries.Add(ctx, skipped)
	}
	return pd, nil
}

func (p *serviceNameProcessor) shutdown(context.Context) error {
	p.telemetry.Shutdown()
	return nil
}
