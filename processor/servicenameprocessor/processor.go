// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor // import "github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
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
	// coverage counts the processes named, for
	// otelcol_processor_service_name_processes.
	coverage *coverage
	now      func() time.Time
}

func newServiceNameProcessor(set processor.Settings, cfg *Config) (*serviceNameProcessor, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	p := &serviceNameProcessor{
		namer: newNamer(cfg), telemetry: tb,
		coverage: newCoverage(cfg.CoverageWindow, maxCoveredProcesses), now: time.Now,
	}
	var observeAttrs [numSources][]metric.ObserveOption
	for s := range numSources {
		set := attribute.NewSet(attribute.String("source", s.String()))
		p.sourceAttrs[s] = []metric.AddOption{metric.WithAttributeSet(set)}
		observeAttrs[s] = []metric.ObserveOption{metric.WithAttributeSet(set)}
	}
	// Every source is observed, 0 included, so that a rule or a panel
	// reads 0 rather than no series for a node without such processes.
	err = tb.RegisterProcessorServiceNameProcessesCallback(func(_ context.Context, o metric.Int64Observer) error {
		counts := p.coverage.counts(p.now())
		for s, n := range counts {
			o.Observe(n, observeAttrs[s]...)
		}
		return nil
	})
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	return p, nil
}

// keyPID is the eBPF profiler's process.pid resource attribute.
const keyPID = "process.pid"

// pidOf returns the resource's process.pid, when it has an integer one.
func pidOf(attrs pcommon.Map) (int64, bool) {
	v, ok := attrs.Get(keyPID)
	if !ok || v.Type() != pcommon.ValueTypeInt {
		return 0, false
	}
	return v.Int(), true
}

// processProfiles names every resource of the request in place. Counts are
// gathered per request and recorded once per source.
func (p *serviceNameProcessor) processProfiles(ctx context.Context, pd pprofile.Profiles) (pprofile.Profiles, error) {
	var named [numSources]int64
	var skipped int64
	rps := pd.ResourceProfiles()
	// The processes of the request (a request of the eBPF receiver holds
	// one resource per process) are recorded for the coverage gauge.
	t := p.coverage.begin(p.now())
	for i := 0; i < rps.Len(); i++ {
		attrs := rps.At(i).Resource().Attributes()
		src, s := p.namer.name(attrs)
		named[src]++
		skipped += int64(s)
		if pid, ok := pidOf(attrs); ok {
			p.coverage.add(t, pid, src)
		}
	}
	p.coverage.end()
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
