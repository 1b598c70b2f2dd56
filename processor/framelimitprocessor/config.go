// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package framelimitprocessor // import "github.com/nexovue/otelcol-nexovue/processor/framelimitprocessor"

import (
	"fmt"

	"go.opentelemetry.io/collector/component"
)

const (
	// defaultMaxFrames is nexovue's ingest limit: a request whose stacks
	// write out to more frames is answered 413.
	defaultMaxFrames = 1_000_000
	// maxMaxFrames is the largest limit accepted: above it the ingest
	// refuses the batches anyway.
	maxMaxFrames = 1_000_000
)

// Config is the configuration of the frame_limit processor.
type Config struct {
	// MaxFrames bounds the frames a forwarded batch writes out: the sum over
	// its samples of the number of locations of the sample's stack.
	MaxFrames int `mapstructure:"max_frames"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

func createDefaultConfig() component.Config {
	return &Config{MaxFrames: defaultMaxFrames}
}

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	if cfg.MaxFrames < 1 || cfg.MaxFrames > maxMaxFrames {
		return fmt.Errorf("max_frames: must be between 1 and %d, got %d", maxMaxFrames, cfg.MaxFrames)
	}
	return nil
}
