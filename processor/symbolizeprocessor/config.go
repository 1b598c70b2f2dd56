// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor"

import (
	"fmt"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
)

const (
	defaultCacheSizeMiB   = 64
	maxCacheSizeMiB       = 4096
	defaultMaxFileSizeMiB = 1024
	// maxMaxFileSizeMiB bounds max_file_size_mib at 64 GiB: a file is read
	// (its symbol tables, not its whole text) only below that size.
	maxMaxFileSizeMiB = 65536
	// defaultLoadWait is how long a batch waits for the files it needs
	// that are being read: a symbol table takes milliseconds, a debug
	// file's DWARF up to a second or so (libc's), more on a loaded host.
	defaultLoadWait = 2 * time.Second
	maxLoadWait     = time.Minute
)

// Config is the configuration of the symbolize processor.
type Config struct {
	// CacheSizeMiB bounds the memory of the symbol tables kept in memory,
	// by file identity (least recently used evicted first).
	CacheSizeMiB int `mapstructure:"cache_size_mib"`
	// MaxFileSizeMiB is the size above which a mapped file is not read: its
	// frames stay unsymbolized.
	MaxFileSizeMiB int `mapstructure:"max_file_size_mib"`
	// DebugDirs are directories of separate debug files on the agent's
	// host, looked in after the process's own root: by build id
	// (<dir>/.build-id/xx/yyyy.debug) and by .gnu_debuglink.
	DebugDirs []string `mapstructure:"debug_dirs"`
	// LoadWait is how long a batch waits for the newly seen files it needs
	// to be read (their symbol tables and DWARF), outside the processor's
	// lock; a batch that needs no such file does not wait. 0: batches
	// never wait (a newly seen file's frames are named from the next batch).
	LoadWait time.Duration `mapstructure:"load_wait"`
	// Debuginfod fetches debug files by build ID from debuginfod servers;
	// off unless it has URLs (or DEBUGINFOD_URLS is set).
	Debuginfod debugfile.DebuginfodConfig `mapstructure:"debuginfod"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

func createDefaultConfig() component.Config {
	return &Config{CacheSizeMiB: defaultCacheSizeMiB, MaxFileSizeMiB: defaultMaxFileSizeMiB, LoadWait: defaultLoadWait, Debuginfod: debugfile.DefaultDebuginfodConfig()}
}

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	if cfg.CacheSizeMiB < 1 || cfg.CacheSizeMiB > maxCacheSizeMiB {
		return fmt.Errorf("cache_size_mib: must be between 1 and %d, got %d", maxCacheSizeMiB, cfg.CacheSizeMiB)
	}
	if cfg.MaxFileSizeMiB < 1 || cfg.MaxFileSizeMiB > maxMaxFileSizeMiB {
		return fmt.Errorf("max_file_size_mib: must be between 1 and %d, got %d", maxMaxFileSizeMiB, cfg.MaxFileSizeMiB)
	}
	if cfg.LoadWait < 0 || cfg.LoadWait > maxLoadWait {
		return fmt.Errorf("load_wait: must be between 0s and %s, got %s", maxLoadWait, cfg.LoadWait)
	}
	for i, d := range cfg.DebugDirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("debug_dirs[%d]: must be an absolute path, got %q", i, d)
		}
	}
	return cfg.Debuginfod.Validate("debuginfod::")
}
