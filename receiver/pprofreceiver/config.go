// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package pprofreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver"

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/confmap"
)

const (
	defaultCollectionInterval = 30 * time.Second
	defaultMaxBodySize        = 64 << 20 // 64 MiB

	// minCollectionInterval and maxCollectionInterval bound
	// collection_interval: a scrape every few milliseconds would hammer the
	// target (writing a heap or mutex profile walks all its records), and an
	// interval over a day makes windows nobody reads.
	minCollectionInterval = time.Second
	maxCollectionInterval = 24 * time.Hour

	// goDefaultCPUSeconds is how long Go's /debug/pprof/profile (and
	// /debug/pprof/trace) records when the URL has no "seconds".
	goDefaultCPUSeconds = 30 * time.Second
)

// Config is the configuration of the pprof receiver.
type Config struct {
	// Remote is the pprof endpoint to scrape and how.
	Remote RemoteConfig `mapstructure:"remote"`
	// ServiceName, if set, is put on the resource as service.name.
	ServiceName string `mapstructure:"service_name"`
	// Delta sends cumulative sample types (alloc_*, contentions, delay) as
	// the difference from the previous scrape. Default true.
	Delta bool `mapstructure:"delta"`
	// KeepOriginalPayload attaches the raw pprof to the first profile of
	// every scrape (original_payload, format "pprof"). Default false.
	KeepOriginalPayload bool `mapstructure:"keep_original_payload"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// RemoteConfig is the scraped endpoint: the confighttp client settings
// (endpoint, tls, headers, auth, timeout, ...) plus the scrape interval and
// the body size limit.
type RemoteConfig struct {
	// Client holds the confighttp client settings, at the level of
	// collection_interval (squashed).
	Client confighttp.ClientConfig `mapstructure:",squash"`
	// CollectionInterval is the time between the starts of two scrapes.
	CollectionInterval time.Duration `mapstructure:"collection_interval"`
	// MaxBodySize is the largest body accepted, in bytes, both as received
	// and once decompressed.
	MaxBodySize int64 `mapstructure:"max_body_size"`
}

var (
	_ confmap.Validator   = (*Config)(nil)
	_ confmap.Unmarshaler = (*RemoteConfig)(nil)
)

// remoteKeys are the keys allowed under remote: the confighttp client's and
// our own.
var remoteKeys = func() map[string]bool {
	keys := map[string]bool{}
	for _, typ := range []reflect.Type{reflect.TypeFor[confighttp.ClientConfig](), reflect.TypeFor[RemoteConfig]()} {
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
			if f.IsExported() && name != "" {
				keys[name] = true
			}
		}
	}
	return keys
}()

// Unmarshal decodes remote, rejecting unknown keys: the squashed confighttp
// settings alone would let a misspelt key pass silently.
func (r *RemoteConfig) Unmarshal(conf *confmap.Conf) error {
	var unknown []string
	for k := range conf.ToStringMap() {
		if !remoteKeys[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("remote: unknown keys %s", strings.Join(unknown, ", "))
	}
	type plain RemoteConfig // without this method, so no recursion
	return conf.Unmarshal((*plain)(r))
}

// Validate checks the configuration; errors name the key's path.
func (cfg *Config) Validate() error {
	r := &cfg.Remote
	var errs []error
	if r.CollectionInterval < minCollectionInterval || r.CollectionInterval > maxCollectionInterval {
		errs = append(errs, fmt.Errorf("remote::collection_interval: must be between %s and %s, got %s", minCollectionInterval, maxCollectionInterval, r.CollectionInterval))
	}
	if r.MaxBodySize <= 0 {
		errs = append(errs, fmt.Errorf("remote::max_body_size: must be positive, got %d", r.MaxBodySize))
	}
	if r.Client.Timeout < 0 {
		errs = append(errs, fmt.Errorf("remote::timeout: must not be negative, got %s", r.Client.Timeout))
	}
	if r.Client.Endpoint == "" {
		errs = append(errs, errors.New("remote::endpoint: must be set, e.g. http://checkout:6060/debug/pprof/heap"))
		return errors.Join(errs...)
	}
	u, err := parseEndpoint(r.Client.Endpoint)
	if err != nil {
		errs = append(errs, fmt.Errorf("remote::endpoint: %w", err))
		return errors.Join(errs...)
	}
	secs, hasSecs, err := profileSeconds(u)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("remote::endpoint: %w", err))
	case hasSecs && r.CollectionInterval > 0 && secs >= r.CollectionInterval:
		errs = append(errs, fmt.Errorf("remote::endpoint: profile duration seconds=%s does not fit inside remote::collection_interval %s", secs, r.CollectionInterval))
	case !hasSecs && isCPUPath(u) && r.CollectionInterval > 0 && goDefaultCPUSeconds >= r.CollectionInterval:
		errs = append(errs, fmt.Errorf("remote::endpoint: without a seconds parameter Go records a CPU profile for %s, which does not fit inside remote::collection_interval %s; add ?seconds=N shorter than the interval", goDefaultCPUSeconds, r.CollectionInterval))
	case hasSecs && r.Client.Timeout > 0 && r.Client.Timeout <= secs:
		errs = append(errs, fmt.Errorf("remote::timeout: %s does not cover the profile duration seconds=%s", r.Client.Timeout, secs))
	}
	return errors.Join(errs...)
}

// parseEndpoint parses an absolute http(s) URL. Errors never repeat the URL's
// credentials.
func parseEndpoint(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("not a valid URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("scheme must be http or https, got %q", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("URL has no host")
	}
	return u, nil
}

// profileSeconds returns the "seconds" query parameter of a pprof URL (the
// duration of a CPU profile, or of a delta profile computed by the server).
// Go's handlers read it as a whole number and silently use 30 for anything
// else on a CPU profile, so only a positive whole number is accepted.
func profileSeconds(u *url.URL) (time.Duration, bool, error) {
	q := u.Query()
	if !q.Has("seconds") {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(q.Get("seconds"), 10, 64)
	if err != nil || n <= 0 || n > int64(maxCollectionInterval/time.Second) {
		return 0, true, fmt.Errorf("query parameter seconds=%q must be a positive whole number", q.Get("seconds"))
	}
	return time.Duration(n) * time.Second, true, nil
}

// isCPUPath reports whether u is Go's CPU profile (or execution trace)
// handler, which records for "seconds", 30 by default.
func isCPUPath(u *url.URL) bool {
	base := path.Base(u.Path)
	return base == "profile" || base == "trace"
}

// isGodeltaprof reports whether u is one of godeltaprof's endpoints
// (/debug/pprof/delta_heap, delta_mutex, delta_block), which serve the
// cumulative sample types as differences from their previous request
// already: the receiver must not compute deltas of them again.
func isGodeltaprof(u *url.URL) bool {
	switch path.Base(u.Path) {
	case "delta_heap", "delta_mutex", "delta_block":
		return true
	}
	return false
}

// effectiveTimeout is the HTTP timeout of a scrape: the configured one, or by
// default the collection interval, which validation guarantees to cover a CPU
// profile's seconds.
func (r *RemoteConfig) effectiveTimeout() time.Duration {
	if r.Client.Timeout > 0 {
		return r.Client.Timeout
	}
	return r.CollectionInterval
}

// keptQueryParams are the pprof query parameters whose values are logged;
// the values of all others (a token, a signature) are redacted.
var keptQueryParams = map[string]bool{"seconds": true, "gc": true, "debug": true}

// redactedURL returns the endpoint for logs and attributes: without user
// info, and with the values of query parameters other than seconds, gc and
// debug replaced by "REDACTED" (names and order kept).
func redactedURL(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		params := strings.Split(c.RawQuery, "&")
		for i, kv := range params {
			k, _, hasValue := strings.Cut(kv, "=")
			if name, err := url.QueryUnescape(k); hasValue && (err != nil || !keptQueryParams[name]) {
				params[i] = k + "=REDACTED"
			}
		}
		c.RawQuery = strings.Join(params, "&")
	}
	return c.String()
}
