// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/nexovue/otelcol-nexovue/extension/queuestorageextension"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
)

const (
	// defaultMaxSizeMiB bounds the directory: README, "Sizing".
	defaultMaxSizeMiB = 256
	// maxMaxSizeMiB is 1 TiB, far above any queue a collector should hold.
	maxMaxSizeMiB = 1 << 20
)

// Config is the configuration of the queue_storage extension.
type Config struct {
	// Directory holds the queues' files, one per item.
	Directory string `mapstructure:"directory"`
	// CreateDirectory creates Directory (and its parents, mode 0750) at
	// start when it does not exist.
	CreateDirectory bool `mapstructure:"create_directory"`
	// MaxSizeMiB bounds the bytes on disk of every queue in Directory
	// together; a new item that would go past it is refused.
	MaxSizeMiB int64 `mapstructure:"max_size_mib"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

func createDefaultConfig() component.Config {
	return &Config{CreateDirectory: true, MaxSizeMiB: defaultMaxSizeMiB}
}

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.Directory == "" {
		errs = append(errs, errors.New("directory: must be set (where the queues' files are kept)"))
	}
	if cfg.MaxSizeMiB < 1 || cfg.MaxSizeMiB > maxMaxSizeMiB {
		errs = append(errs, fmt.Errorf("max_size_mib: must be between 1 and %d, got %d", maxMaxSizeMiB, cfg.MaxSizeMiB))
	}
	return errors.Join(errs...)
}

// maxBytes is the bound in bytes.
func (cfg *Config) maxBytes() int64 { return cfg.MaxSizeMiB << 20 }
