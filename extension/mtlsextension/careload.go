// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package mtlsextension // import "github.com/nexovue/otelcol-nexovue/extension/mtlsextension"

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/credentials"
)

// caReloading are a client's TLS credentials whose CA (client::ca_file)
// is read again, at most every reload_interval, before a handshake:
// configtls's client reads its ca_file only at start (its reloader covers
// the certificate and key), so a gateway certificate of a new CA would
// otherwise need every agent restarted. Until the file changes, the
// credentials built from it are kept; a file that cannot be read or holds
// no certificate keeps the last good CA and is logged, once per error.
type caReloading struct {
	base     *tls.Config // the client's TLS, RootCAs replaced on a change
	file     string
	interval time.Duration
	now      func() time.Time
	logger   *zap.Logger

	mu      sync.Mutex
	next    time.Time // the next time the file may be read
	pem     []byte    // what the credentials were built from
	creds   credentials.TransportCredentials
	lastErr string
}

// newCAReloading starts from the TLS configtls loaded (its RootCAs read
// from file).
func newCAReloading(base *tls.Config, file string, interval time.Duration, now func() time.Time, logger *zap.Logger) *caReloading {
	pem, _ := os.ReadFile(file) // configtls read it a moment ago
	return &caReloading{base: base, file: file, interval: interval, now: now, logger: logger,
		next: now().Add(interval), pem: pem, creds: credentials.NewTLS(base)}
}

// current returns the credentials of the CA on disk (read again once
// interval has passed since the last reading).
func (c *caReloading) current() credentials.TransportCredentials {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if now.Before(c.next) {
		return c.creds
	}
	c.next = now.Add(c.interval)
	pem, err := os.ReadFile(c.file)
	if err == nil && bytes.Equal(pem, c.pem) {
		return c.creds
	}
	if err == nil {
		pool := x509.NewCertPool()
		if pool.AppendCertsFromPEM(pem) {
			cfg := c.base.Clone()
			cfg.RootCAs = pool
			c.creds, c.pem, c.lastErr = credentials.NewTLS(cfg), pem, ""
			c.logger.Info("mtls: the client's CA file changed; new connections verify the server with it", zap.String("ca_file", c.file))
			return c.creds
		}
		err = errors.New("no PEM certificate in it")
	}
	if msg := err.Error(); msg != c.lastErr {
		c.lastErr = msg
		c.logger.Warn("mtls: cannot read the client's CA file again; the CA read before stays in use", zap.String("ca_file", c.file), zap.Error(err))
	}
	return c.creds
}

func (c *caReloading) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c.current().ClientHandshake(ctx, authority, conn)
}

func (c *caReloading) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c.current().ServerHandshake(conn)
}

func (c *caReloading) Info() credentials.ProtocolInfo { return c.current().Info() }

// Clone shares the reloading state: every copy sees the CA on disk.
func (c *caReloading) Clone() credentials.TransportCredentials { return c }

// OverrideServerName is deprecated in grpc and not used by it.
func (c *caReloading) OverrideServerName(string) error {
	return errors.New("mtls: OverrideServerName is not supported; set client::server_name_override")
}
