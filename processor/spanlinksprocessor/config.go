// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package spanlinksprocessor // import "github.com/nexovue/otelcol-nexovue/processor/spanlinksprocessor"

import (
	"errors"

	"go.opentelemetry.io/collector/component"
)

const (
	// The label keys otel-profiling-go writes into a goroutine's pprof labels.
	defaultSpanIDLabel  = "span_id"
	defaultTraceIDLabel = "trace_id"
)

// Config is the configuration of the span_links processor.
type Config struct {
	// SpanIDLabel is the label whose value is the span ID (16 hex digits).
	SpanIDLabel string `mapstructure:"span_id_label"`
	// TraceIDLabel is the label whose value is the trace ID (32 hex digits).
	TraceIDLabel string `mapstructure:"trace_id_label"`
	// KeepLabels keeps the two label attributes on a sample once they became
	// its link; false removes them from the linked samples.
	KeepLabels bool `mapstructure:"keep_labels"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

func createDefaultConfig() component.Config {
	return &Config{
		SpanIDLabel:  defaultSpanIDLabel,
		TraceIDLabel: defaultTraceIDLabel,
		KeepLabels:   true,
	}
}

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.SpanIDLabel == "" {
		errs = append(errs, errors.New("span_id_label: must not be empty"))
	}
	if cfg.TraceIDLabel == "" {
		errs = append(errs, errors.New("trace_id_label: must not be empty"))
	}
	if cfg.SpanIDLabel != "" && cfg.SpanIDLabel == cfg.TraceIDLabel {
		errs = append(errs, errors.New("trace_id_label: must differ from span_id_label"))
	}
	return errors.Join(errs...)
}
