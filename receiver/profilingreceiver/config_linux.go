// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver"

import (
	"errors"

	"go.opentelemetry.io/ebpf-profiler/collector/config"
)

// DefaultExecSyncPerSecond is exec_sync_per_second's default: the most execs
// a second whose processes the profiler is asked to synchronise at exec
// (see the README for the figures behind it).
const DefaultExecSyncPerSecond = 500

// Config is the upstream receiver's configuration, squashed, and ours.
type Config struct {
	config.Config `mapstructure:",squash"`
	// ExecSyncPerSecond is the most execs a second whose processes are
	// synchronised at exec (internal/execsync); 0 leaves them to upstream
	// (synchronised when a first sample of them is dropped).
	ExecSyncPerSecond int `mapstructure:"exec_sync_per_second"`
}

// Validate checks ours; xconfmap validates the embedded upstream
// configuration with its own Validate.
func (c *Config) Validate() error {
	if c.ExecSyncPerSecond < 0 {
		return errors.New("exec_sync_per_second: must be 0 (off) or more")
	}
	return nil
}
