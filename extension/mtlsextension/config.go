// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package mtlsextension // import "github.com/nexovue/otelcol-nexovue/extension/mtlsextension"

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configtls"
)

// Config is the configuration of the mtls extension. A gRPC server that
// names it in its middlewares gets Server's TLS, a gRPC client Client's;
// unless Insecure, the one its user needs must be set, with a certificate,
// its key and the CA that verifies the other side.
type Config struct {
	// Insecure turns TLS off: the server accepts plaintext from any client,
	// the client sends in plaintext. The extension logs a warning at start.
	// Server and Client are then not read (their files need not exist).
	Insecure bool `mapstructure:"insecure"`
	// Server is the TLS of a gRPC server: cert_file and key_file, its own
	// certificate; client_ca_file, the CA that signs the clients'
	// certificates (a client without one it signed is refused);
	// reload_interval and client_ca_file_reload reload them from disk.
	Server *configtls.ServerConfig `mapstructure:"server"`
	// Client is the TLS of a gRPC client: cert_file and key_file, the
	// certificate it presents; ca_file, the CA that verifies the server,
	// whose name must be the endpoint's host (or server_name_override).
	Client *configtls.ClientConfig `mapstructure:"client"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

func createDefaultConfig() component.Config {
	return &Config{}
}

// Validate checks the configuration. The nested TLS settings are validated
// by configtls (confmap.Validate walks into them).
func (cfg *Config) Validate() error {
	if cfg.Insecure {
		return nil
	}
	if cfg.Server == nil && cfg.Client == nil {
		return errors.New("server, client: one must be set (the TLS of the gRPC server or client that uses this extension), or insecure: true for plaintext")
	}
	var errs []error
	if s := cfg.Server; s != nil {
		errs = append(errs, required("server::cert_file", s.CertFile, s.CertPem != ""),
			required("server::key_file", s.KeyFile, s.KeyPem != ""))
		if s.ClientCAFile == "" {
			errs = append(errs, errors.New("server::client_ca_file: must be set: the CA that signs the clients' certificates (without it any client is accepted)"))
		}
	}
	if c := cfg.Client; c != nil {
		errs = append(errs, required("client::cert_file", c.CertFile, c.CertPem != ""),
			required("client::key_file", c.KeyFile, c.KeyPem != ""),
			required("client::ca_file", c.CAFile, c.CAPem != ""))
		if c.Insecure {
			errs = append(errs, errors.New("client::insecure: must not be set: the extension's insecure switches TLS off"))
		}
		if c.InsecureSkipVerify {
			errs = append(errs, errors.New("client::insecure_skip_verify: must not be set: the client verifies the server's certificate"))
		}
	}
	return errors.Join(errs...)
}

func required(path, file string, pem bool) error {
	if file == "" && !pem {
		return errors.New(path + ": must be set")
	}
	return nil
}
