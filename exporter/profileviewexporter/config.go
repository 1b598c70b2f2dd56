// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter // import "github.com/nexovue/otelcol-nexovue/exporter/profileviewexporter"

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/confmap"
)

const (
	// DefaultEndpoint is loopback only: profiles reveal code paths and
	// process details.
	DefaultEndpoint = "127.0.0.1:4390"
	// DefaultWindow is how far back the view keeps profiles.
	DefaultWindow = 5 * time.Minute
	// DefaultMaxMemoryMiB caps what the window's aggregates take.
	DefaultMaxMemoryMiB = 256
	// DefaultMaxConcurrentRenders bounds the pages rendered at once.
	DefaultMaxConcurrentRenders = 2
	// DefaultMaxProfileBytes bounds one received profile's estimated size.
	DefaultMaxProfileBytes = 64 << 20
	// DefaultMaxRequestBytes bounds a request to the page (headers and body).
	DefaultMaxRequestBytes = 64 << 10
	// slotsPerWindow is how many time slots a window is kept in: the oldest
	// slot goes as a whole when the window moves on or memory runs out.
	slotsPerWindow = 30
)

// Config is the profile view's configuration.
type Config struct {
	// ServerConfig is the page's HTTP server: endpoint (default
	// 127.0.0.1:4390), TLS, and auth through an authenticator extension
	// (bearertokenauth).
	confighttp.ServerConfig `mapstructure:",squash"`
	// Window is how far back the view keeps profiles.
	Window time.Duration `mapstructure:"window"`
	// MaxMemoryMiB caps the window's aggregates; the oldest time slots are
	// dropped (counted) to stay under it.
	MaxMemoryMiB int `mapstructure:"max_memory_mib"`
	// MaxConcurrentRenders bounds the pages rendered at once; more requests
	// get 503 with Retry-After.
	MaxConcurrentRenders int `mapstructure:"max_concurrent_renders"`
	// MaxProfileBytes bounds the estimated size of one received profile;
	// larger ones are dropped, counted and logged.
	MaxProfileBytes int64 `mapstructure:"max_profile_bytes"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Validate checks the configuration. Its errors name the setting's path.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.NetAddr.Endpoint == "" {
		errs = append(errs, errors.New("endpoint: must be a host:port to serve the view on (default "+DefaultEndpoint+")"))
	}
	if cfg.Window < time.Minute || cfg.Window > 24*time.Hour {
		errs = append(errs, fmt.Errorf("window: %v is outside 1m to 24h", cfg.Window))
	}
	if cfg.MaxMemoryMiB < 8 {
		errs = append(errs, fmt.Errorf("max_memory_mib: %d is below 8", cfg.MaxMemoryMiB))
	}
	if cfg.MaxConcurrentRenders < 1 {
		errs = append(errs, fmt.Errorf("max_concurrent_renders: %d must be at least 1", cfg.MaxConcurrentRenders))
	}
	if cfg.MaxProfileBytes < 1024 {
		errs = append(errs, fmt.Errorf("max_profile_bytes: %d is below 1024", cfg.MaxProfileBytes))
	}
	if cfg.MaxRequestBodySize < 0 {
		errs = append(errs, fmt.Errorf("max_request_body_size: %d is negative", cfg.MaxRequestBodySize))
	}
	return errors.Join(errs...)
}

// ownSettings are the settings besides the HTTP server's.
type ownSettings struct {
	Window               time.Duration `mapstructure:"window"`
	MaxMemoryMiB         int           `mapstructure:"max_memory_mib"`
	MaxConcurrentRenders int           `mapstructure:"max_concurrent_renders"`
	MaxProfileBytes      int64         `mapstructure:"max_profile_bytes"`
}

var _ confmap.Unmarshaler = (*Config)(nil)

// Unmarshal: the embedded confighttp.ServerConfig has an Unmarshal of its
// own, which Go promotes to Config and which reads only the server's keys
// (it ignores the others). So Config reads its own keys here, and rejects a
// key that is neither, as the Collector does for every component.
func (cfg *Config) Unmarshal(conf *confmap.Conf) error {
	if err := cfg.ServerConfig.Unmarshal(conf); err != nil {
		return err
	}
	own := ownSettings{cfg.Window, cfg.MaxMemoryMiB, cfg.MaxConcurrentRenders, cfg.MaxProfileBytes}
	if err := conf.Unmarshal(&own, confmap.WithIgnoreUnused()); err != nil {
		return err
	}
	cfg.Window, cfg.MaxMemoryMiB, cfg.MaxConcurrentRenders, cfg.MaxProfileBytes = own.Window, own.MaxMemoryMiB, own.MaxConcurrentRenders, own.MaxProfileBytes
	known := map[string]bool{}
	mapstructureKeys(reflect.TypeFor[confighttp.ServerConfig](), known)
	mapstructureKeys(reflect.TypeFor[ownSettings](), known)
	var unknown []string
	for _, k := range conf.AllKeys() {
		top, _, _ := strings.Cut(k, confmap.KeyDelimiter)
		if !known[top] {
			unknown = append(unknown, top)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("'' has invalid keys: %s", strings.Join(unknown, ", "))
	}
	return nil
}

// mapstructureKeys adds the keys of t's fields, squashed structs included.
func mapstructureKeys(t reflect.Type, into map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if strings.Contains(opts, "squash") && f.Type.Kind() == reflect.Struct {
			mapstructureKeys(f.Type, into)
			continue
		}
		if name != "" && name != "-" {
			into[name] = true
		}
	}
}
