// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package mtlsextension // import "github.com/nexovue/otelcol-nexovue/extension/mtlsextension"

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensionmiddleware"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/nexovue/otelcol-nexovue/extension/mtlsextension/internal/metadata"
)

// InsecureWarning is the line the extension logs at start when insecure is
// true (tests look for it).
const InsecureWarning = "mtls: insecure is true: TLS is off, connections are plaintext and a server accepts any client"

const (
	roleServer = "server"
	roleClient = "client"
)

// mtls gives the gRPC server or client that names it in its middlewares
// its TLS credentials.
type mtls struct {
	cfg    *Config
	logger *zap.Logger
	tb     *metadata.TelemetryBuilder
	now    func() time.Time

	mu sync.Mutex
	// certificate returns the certificate the role presents now (after a
	// reload, the new one); set when the role's credentials are built.
	certificate map[string]func() (*tls.Certificate, error)
	refusals    map[string]*refusals
}

var (
	_ extension.Extension            = (*mtls)(nil)
	_ extensionmiddleware.GRPCServer = (*mtls)(nil)
	_ extensionmiddleware.GRPCClient = (*mtls)(nil)
)

func newMTLS(set extension.Settings, cfg *Config) (*mtls, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &mtls{
		cfg: cfg, logger: set.Logger, tb: tb, now: time.Now,
		certificate: map[string]func() (*tls.Certificate, error){},
		refusals:    map[string]*refusals{},
	}, nil
}

// Start warns when TLS is off and registers the expiry gauge.
func (m *mtls) Start(context.Context, component.Host) error {
	if m.cfg.Insecure {
		m.logger.Warn(InsecureWarning)
		return nil
	}
	return m.tb.RegisterMtlsCertificateExpirySecondsCallback(m.observeExpiry)
}

// Shutdown ends the telemetry.
func (m *mtls) Shutdown(context.Context) error {
	m.tb.Shutdown()
	return nil
}

// GetGRPCServerOptions returns the server's TLS credentials (none when
// insecure: the server is plaintext).
func (m *mtls) GetGRPCServerOptions(ctx context.Context) ([]grpc.ServerOption, error) {
	if m.cfg.Insecure {
		return nil, nil
	}
	creds, err := m.serverCredentials(ctx)
	if err != nil {
		return nil, err
	}
	// grpc.Creds after the server's own options: the last one wins.
	return []grpc.ServerOption{grpc.Creds(creds)}, nil
}

// GetGRPCClientOptions returns the client's TLS credentials (plaintext
// when insecure).
func (m *mtls) GetGRPCClientOptions(ctx context.Context) ([]grpc.DialOption, error) {
	if m.cfg.Insecure {
		return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, nil
	}
	creds, err := m.clientCredentials(ctx)
	if err != nil {
		return nil, err
	}
	// After the client's own transport credentials: the last one wins.
	return []grpc.DialOption{grpc.WithTransportCredentials(creds)}, nil
}

func (m *mtls) serverCredentials(ctx context.Context) (credentials.TransportCredentials, error) {
	if m.cfg.Server == nil {
		return nil, errors.New("mtls: used by a gRPC server, but server is not set")
	}
	tlsCfg, err := m.cfg.Server.LoadTLSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return m.counting(roleServer, credentials.NewTLS(tlsCfg), func() (*tls.Certificate, error) {
		return tlsCfg.GetCertificate(&tls.ClientHelloInfo{})
	}), nil
}

func (m *mtls) clientCredentials(ctx context.Context) (credentials.TransportCredentials, error) {
	if m.cfg.Client == nil {
		return nil, errors.New("mtls: used by a gRPC client, but client is not set")
	}
	tlsCfg, err := m.cfg.Client.LoadTLSConfig(ctx)
	if err != nil {
		return nil, err
	}
	var creds credentials.TransportCredentials = credentials.NewTLS(tlsCfg)
	if m.cfg.Client.CAFile != "" && m.cfg.Client.ReloadInterval > 0 {
		creds = newCAReloading(tlsCfg, m.cfg.Client.CAFile, m.cfg.Client.ReloadInterval, m.now, m.logger)
	}
	return m.counting(roleClient, creds, func() (*tls.Certificate, error) {
		return tlsCfg.GetClientCertificate(&tls.CertificateRequestInfo{})
	}), nil
}

// counting wraps the role's credentials so that failed handshakes are
// counted and logged, and remembers how to read its certificate.
func (m *mtls) counting(role string, creds credentials.TransportCredentials, cert func() (*tls.Certificate, error)) credentials.TransportCredentials {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.certificate[role] = cert
	r, ok := m.refusals[role]
	if !ok {
		r = newRefusals(role, m.logger, m.now, func(reason string) {
			m.tb.MtlsHandshakesRefused.Add(context.Background(), 1, metric.WithAttributes(
				attribute.String("role", role), attribute.String("reason", reason)))
		})
		m.refusals[role] = r
	}
	return &countingCreds{TransportCredentials: creds, refusals: r}
}

// observeExpiry reports, for each role in use, the seconds until the
// certificate it presents expires. Reading the certificate goes through
// configtls's reloader, so after reload_interval it is the one on disk.
func (m *mtls) observeExpiry(_ context.Context, o metric.Float64Observer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for role, get := range m.certificate {
		notAfter, err := expiry(get)
		if err != nil {
			// The handshakes fail too, and are counted: not this gauge's
			// to report; it keeps no stale value.
			m.logger.Debug("mtls: cannot read the certificate", zap.String("role", role), zap.Error(err))
			continue
		}
		o.Observe(notAfter.Sub(m.now()).Seconds(), metric.WithAttributes(attribute.String("role", role)))
	}
	return nil
}

// expiry returns when the certificate get returns expires.
func expiry(get func() (*tls.Certificate, error)) (time.Time, error) {
	cert, err := get()
	if err != nil {
		return time.Time{}, err
	}
	if cert == nil || len(cert.Certificate) == 0 {
		return time.Time{}, errors.New("no certificate")
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return time.Time{}, err
		}
	}
	return leaf.NotAfter, nil
}
