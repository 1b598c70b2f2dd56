// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package mtlsextension // import "github.com/nexovue/otelcol-nexovue/extension/mtlsextension"

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/credentials"
)

// logInterval is the least time between two log lines of one reason.
const logInterval = time.Minute

// The reasons a handshake fails (the metric's reason attribute).
const (
	reasonPlaintext        = "plaintext"
	reasonNoCertificate    = "no_certificate"
	reasonUnknownAuthority = "unknown_authority"
	reasonExpired          = "expired"
	reasonBadCertificate   = "bad_certificate"
	reasonNameMismatch     = "name_mismatch"
	reasonPeerRefused      = "peer_refused"
	reasonOther            = "other"
)

// classify names why a TLS handshake failed.
func classify(err error) string {
	var header tls.RecordHeaderError
	if errors.As(err, &header) {
		// What the peer sent first is no TLS record: plaintext (HTTP/2's
		// preface from a client without TLS).
		return reasonPlaintext
	}
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		return reasonUnknownAuthority
	}
	var hostname x509.HostnameError
	if errors.As(err, &hostname) {
		return reasonNameMismatch
	}
	var invalid x509.CertificateInvalidError
	if errors.As(err, &invalid) {
		// x509.Expired is also "not yet valid" (a clock behind, a
		// certificate issued for later): that one is bad_certificate.
		if invalid.Reason == x509.Expired && (invalid.Cert == nil || time.Now().After(invalid.Cert.NotAfter)) {
			return reasonExpired
		}
		return reasonBadCertificate
	}
	var verification *tls.CertificateVerificationError
	if errors.As(err, &verification) {
		return reasonBadCertificate
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		// The peer sent an alert: it refused this side's certificate.
		return reasonPeerRefused
	}
	// crypto/tls has no type for it (handshake_server.go).
	if strings.Contains(err.Error(), "didn't provide a certificate") {
		return reasonNoCertificate
	}
	return reasonOther
}

// refusals counts a role's failed handshakes and logs them, at most one
// line per reason per logInterval, naming the peer's address and the
// error (crypto/tls's errors name certificates, never a key).
type refusals struct {
	role   string
	logger *zap.Logger
	now    func() time.Time
	count  func(reason string)

	mu sync.Mutex
	// last is when a reason was last logged; suppressed, how many of
	// it were not logged since.
	last       map[string]time.Time
	suppressed map[string]int
}

func newRefusals(role string, logger *zap.Logger, now func() time.Time, count func(reason string)) *refusals {
	return &refusals{role: role, logger: logger, now: now, count: count,
		last: map[string]time.Time{}, suppressed: map[string]int{}}
}

func (r *refusals) record(peer net.Addr, err error) {
	reason := classify(err)
	r.count(reason)
	r.mu.Lock()
	now := r.now()
	if last, ok := r.last[reason]; ok && now.Sub(last) < logInterval {
		r.suppressed[reason]++
		r.mu.Unlock()
		return
	}
	suppressed := r.suppressed[reason]
	r.last[reason], r.suppressed[reason] = now, 0
	r.mu.Unlock()

	address := "unknown"
	if peer != nil {
		address = peer.String()
	}
	msg := "mtls: refused a client's TLS handshake"
	if r.role == roleClient {
		msg = "mtls: the TLS handshake with the server failed"
	}
	r.logger.Warn(msg, zap.String("reason", reason), zap.String("peer", address), zap.Error(err),
		zap.Int("same_reason_not_logged", suppressed), zap.Duration("at_most_one_line_per", logInterval))
}

// countingCreds are TLS credentials whose failed handshakes are recorded.
type countingCreds struct {
	credentials.TransportCredentials
	refusals *refusals
}

func (c *countingCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		c.refusals.record(conn.RemoteAddr(), err)
	}
	return out, info, err
}

func (c *countingCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, conn)
	if err != nil && ctx.Err() == nil {
		c.refusals.record(conn.RemoteAddr(), err)
	}
	return out, info, err
}

func (c *countingCreds) Clone() credentials.TransportCredentials {
	return &countingCreds{TransportCredentials: c.TransportCredentials.Clone(), refusals: c.refusals}
}
