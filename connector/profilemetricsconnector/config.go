// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilemetricsconnector // import "github.com/nexovue/otelcol-nexovue/connector/profilemetricsconnector"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
)

const (
	// TemporalityCumulative sends sums counted since the series was first seen.
	TemporalityCumulative = "cumulative"
	// TemporalityDelta sends sums counted over the last interval.
	TemporalityDelta = "delta"

	defaultInterval     = 60 * time.Second
	defaultTopFunctions = 20
	defaultMaxSeries    = 10_000
	defaultSeriesExpiry = 5 * time.Minute

	maxTopFunctions = 1000
	maxMaxSeries    = 1_000_000
)

// defaultGroupBy are the resource attributes CPU time and heap bytes are
// grouped by, each where the resource has it.
var defaultGroupBy = []string{"service.name", "service.namespace", "k8s.namespace.name", "k8s.pod.name"}

// Config is the configuration of the profile_metrics connector.
type Config struct {
	// GroupBy lists the resource attributes that make a group: one series of
	// each resource metric per distinct set of their values.
	GroupBy []string `mapstructure:"group_by"`
	// Interval is how often metrics are sent, and the window over which the
	// top functions are ranked.
	Interval time.Duration `mapstructure:"interval"`
	// TopFunctions is how many leaf functions per service get their own
	// self CPU time series each interval; the rest are summed as "other".
	// 0 turns the function metrics off.
	TopFunctions int `mapstructure:"top_functions"`
	// InclusiveTime adds the inclusive CPU time of the top functions.
	InclusiveTime bool `mapstructure:"inclusive_time"`
	// MaxSeries bounds the series tracked; past it, values of new series go
	// to one overflow series per metric.
	MaxSeries int `mapstructure:"max_series"`
	// SeriesExpiry forgets a series that got no value for this long.
	SeriesExpiry time.Duration `mapstructure:"series_expiry"`
	// Temporality of the sums: cumulative or delta.
	Temporality string `mapstructure:"temporality"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

func createDefaultConfig() component.Config {
	return &Config{
		GroupBy:      append([]string(nil), defaultGroupBy...),
		Interval:     defaultInterval,
		TopFunctions: defaultTopFunctions,
		MaxSeries:    defaultMaxSeries,
		SeriesExpiry: defaultSeriesExpiry,
		Temporality:  TemporalityCumulative,
	}
}

// Validate checks the configuration; every error names its key.
func (cfg *Config) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for i, k := range cfg.GroupBy {
		switch {
		case k == "":
			errs = append(errs, fmt.Errorf("group_by[%d]: must not be empty", i))
		case seen[k]:
			errs = append(errs, fmt.Errorf("group_by[%d]: %q is listed twice", i, k))
		}
		seen[k] = true
	}
	if cfg.Interval <= 0 {
		errs = append(errs, fmt.Errorf("interval: must be positive, got %s", cfg.Interval))
	}
	if cfg.TopFunctions < 0 || cfg.TopFunctions > maxTopFunctions {
		errs = append(errs, fmt.Errorf("top_functions: must be between 0 and %d, got %d", maxTopFunctions, cfg.TopFunctions))
	}
	if cfg.InclusiveTime && cfg.TopFunctions == 0 {
		errs = append(errs, errors.New("inclusive_time: needs top_functions above 0"))
	}
	if cfg.MaxSeries < 1 || cfg.MaxSeries > maxMaxSeries {
		errs = append(errs, fmt.Errorf("max_series: must be between 1 and %d, got %d", maxMaxSeries, cfg.MaxSeries))
	}
	if cfg.SeriesExpiry < cfg.Interval {
		errs = append(errs, fmt.Errorf("series_expiry: must be at least interval (%s), got %s", cfg.Interval, cfg.SeriesExpiry))
	}
	if cfg.Temporality != TemporalityCumulative && cfg.Temporality != TemporalityDelta {
		errs = append(errs, fmt.Errorf("temporality: must be %q or %q, got %q", TemporalityCumulative, TemporalityDelta, cfg.Temporality))
	}
	return errors.Join(errs...)
}
