// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

const (
	// DefaultEndpoint is nexovue's ingest.
	DefaultEndpoint = "https://ingest.nexovue.com"
	// DefaultProfilesPath is appended to the endpoint (profiles_path).
	DefaultProfilesPath = "/v1development/profiles"
	// keyHeader carries the ingest key.
	keyHeader = "x-nexovue-key"
	// DefaultSamplesPerSecond is the ingest's documented per-key limit.
	DefaultSamplesPerSecond = 20_000
)

// Config defines the configuration of the nexovue exporter.
type Config struct {
	// ClientConfig holds the HTTP client settings (endpoint, TLS, proxy,
	// timeout, compression, headers, ...).
	ClientConfig confighttp.ClientConfig `mapstructure:",squash"`
	// QueueConfig is the exporterhelper sending queue.
	QueueConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	// RetryConfig is the exporterhelper retry policy.
	RetryConfig configretry.BackOffConfig `mapstructure:"retry_on_failure"`

	// Key is the nexovue ingest key, sent as the x-nexovue-key header.
	// The usual value is ${env:NEXOVUE_KEY}.
	Key configopaque.String `mapstructure:"key"`
	// KeyFile names a file holding the ingest key (a Kubernetes Secret
	// mounted as a file), read at start; instead of Key.
	KeyFile string `mapstructure:"key_file"`

	// Routing chooses the key of each resource by its attributes; Key (or
	// KeyFile) is the key of the resources no rule matches. See routing.go.
	Routing RoutingConfig `mapstructure:"routing"`

	// RateLimit paces what the exporter sends per key.
	RateLimit RateLimitConfig `mapstructure:"rate_limit"`

	// ProfilesPath is appended to the endpoint (see literal.go and the README:
	// the exporter also sends to other OTLP/HTTP profiles endpoints).
	ProfilesPath string `mapstructure:"profiles_path"`
	// AttributeEncoding is how resource and scope attributes are written:
	// AttributeEncodingStringTable or AttributeEncodingLiteral.
	AttributeEncoding string `mapstructure:"attribute_encoding"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// RateLimitConfig paces the samples the exporter sends per key.
type RateLimitConfig struct {
	// SamplesPerSecond is the most samples a second the exporter sends with
	// one key, with bursts up to one second's worth. 0 turns pacing off.
	SamplesPerSecond int `mapstructure:"samples_per_second"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

// Validate checks the configuration. Its errors name the setting's path.
func (cfg *Config) Validate() error {
	var errs []error
	if cfg.KeyFile != "" {
		if cfg.Key != "" {
			errs = append(errs, errors.New("key_file: set either `key` or `key_file`, not both"))
		}
	} else if strings.TrimSpace(string(cfg.Key)) == "" {
		if isNexovueEndpoint(cfg.ClientConfig.Endpoint) {
			errs = append(errs, errors.New("key: the nexovue ingest key is empty; set `key` (usually `key: ${env:NEXOVUE_KEY}`) and make sure the NEXOVUE_KEY environment variable is set"))
		}
	} else if strings.ContainsAny(string(cfg.Key), "\r\n") {
		// Never echo the key itself.
		errs = append(errs, errors.New("key: the nexovue ingest key contains a line break; check the NEXOVUE_KEY environment variable"))
	}
	if err := validateEndpoint(cfg.ClientConfig.Endpoint); err != nil {
		errs = append(errs, err)
	}
	for _, h := range cfg.ClientConfig.Headers {
		if strings.EqualFold(h.Name, keyHeader) {
			errs = append(errs, fmt.Errorf("headers::%s: set the ingest key with `key`, not as a header", keyHeader))
		}
	}
	if cfg.ClientConfig.Timeout <= 0 {
		// confighttp takes 0 as no time limit: a connection that hangs
		// would hold a queue consumer forever.
		errs = append(errs, fmt.Errorf("timeout: must be positive (the default is 30s), got %s: without a time limit a hung connection holds a queue consumer forever", cfg.ClientConfig.Timeout))
	}
	errs = append(errs, cfg.validateTarget()...)
	errs = append(errs, cfg.Routing.validate(cfg)...)
	if cfg.RateLimit.SamplesPerSecond < 0 {
		errs = append(errs, fmt.Errorf("rate_limit::samples_per_second: must be 0 (off) or positive, got %d", cfg.RateLimit.SamplesPerSecond))
	}
	return errors.Join(errs...)
}

func validateEndpoint(endpoint string) error {
	if endpoint == "" {
		return fmt.Errorf("endpoint: must not be empty (the default is %s)", DefaultEndpoint)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("endpoint: %q is not a valid URL", endpoint)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("endpoint: %q must start with https:// (or http://)", endpoint)
	}
	if u.Host == "" {
		return fmt.Errorf("endpoint: %q has no host", endpoint)
	}
	if u.User != nil {
		return errors.New("endpoint: must not carry user information; set the ingest key with `key`")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("endpoint: %q must not have a query or fragment", u.Redacted())
	}
	return nil
}

// clearTextToRemoteHost reports whether endpoint is http:// to a host that is
// not loopback: the key would cross the network in clear text.
func clearTextToRemoteHost(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// profilesURL is the URL requests are sent to: <endpoint><profiles_path>.
func (cfg *Config) profilesURL() string {
	return strings.TrimRight(cfg.ClientConfig.Endpoint, "/") + cfg.ProfilesPath
}

// header returns the headers every request carries.
func (cfg *Config) header(userAgent string) http.Header {
	return keyedHeader(userAgent, string(cfg.Key))
}

// keyedHeader returns the headers every request with key carries.
func keyedHeader(userAgent, key string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/x-protobuf")
	h.Set("User-Agent", userAgent)
	if strings.TrimSpace(key) != "" {
		h.Set(keyHeader, key)
	}
	return h
}

// isNexovueEndpoint tells whether endpoint is nexovue's ingest (nexovue.com
// or a subdomain), which needs a key; other OTLP/HTTP profiles endpoints
// may not.
func isNexovueEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() == "" {
		return true // refused by validateEndpoint; ask for the key too
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	return host == "nexovue.com" || strings.HasSuffix(host, ".nexovue.com")
}

// validateTarget checks the settings that make the exporter usable against
// other OTLP/HTTP profiles endpoints.
func (cfg *Config) validateTarget() []error {
	var errs []error
	switch cfg.AttributeEncoding {
	case AttributeEncodingStringTable, AttributeEncodingLiteral:
	default:
		errs = append(errs, fmt.Errorf("attribute_encoding: must be %q or %q, got %q",
			AttributeEncodingStringTable, AttributeEncodingLiteral, cfg.AttributeEncoding))
	}
	p := cfg.ProfilesPath
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?# \t\r\n") {
		errs = append(errs, fmt.Errorf("profiles_path: %q must start with / and have no query, fragment or spaces (the default is %s)", p, DefaultProfilesPath))
	}
	return errs
}
