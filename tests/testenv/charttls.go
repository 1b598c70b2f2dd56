// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"slices"
	"testing"
	"time"
)

// ChartTLS is what the chart's TLS Secrets hold (tls.crt, tls.key,
// ca.crt): the gateway's and the agents'.
type ChartTLS struct {
	Gateway, Agent map[string][]byte
}

// GatewayDNSNames are the names the gateway's certificate must hold: the
// headless Service's and the other Service's, short and qualified, as
// templates/_tls.tpl renders them for release fullname in namespace ns.
func GatewayDNSNames(fullname, ns string) []string {
	var names []string
	for _, svc := range []string{fullname + "-gateway-headless", fullname + "-gateway"} {
		names = append(names, svc, svc+"."+ns, svc+"."+ns+".svc", svc+"."+ns+".svc.cluster.local")
	}
	return names
}

func parseCert(t testing.TB, what string, data []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE" {
		t.Fatalf("%s: no PEM certificate in %q", what, data)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return c
}

func pool(t testing.TB, what string, data []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(data) {
		t.Fatalf("%s: no certificate in %q", what, data)
	}
	return p
}

// CheckChartTLS checks the chart's certificates as the collectors will use
// them: one CA in both ca.crt; the gateway's certificate valid for every
// name of dnsNames (serverAuth), the agents' for clientAuth, each verified
// by the other side's ca.crt and matching its key; leafValidity (when not
// 0) as their lifetime, within a day; and a mutual TLS handshake between
// them (the agent dialling dnsNames[2], <headless>.<ns>.svc, as its
// endpoint does), which a client without a certificate or expecting
// another name fails. It returns the CA.
func CheckChartTLS(t testing.TB, s ChartTLS, dnsNames []string, leafValidity time.Duration) *x509.Certificate {
	t.Helper()
	for side, data := range map[string]map[string][]byte{"gateway": s.Gateway, "agent": s.Agent} {
		for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
			if len(data[k]) == 0 {
				t.Fatalf("the %s's Secret has no %s", side, k)
			}
		}
	}
	if !bytes.Equal(s.Gateway["ca.crt"], s.Agent["ca.crt"]) {
		t.Error("the gateway's and the agents' ca.crt differ: one CA signs both sides")
	}
	ca := parseCert(t, "ca.crt", s.Gateway["ca.crt"])
	if !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("ca.crt (%s) is not a CA certificate (IsCA %v, key usage %b)", ca.Subject, ca.IsCA, ca.KeyUsage)
	}
	gwPair, err := tls.X509KeyPair(s.Gateway["tls.crt"], s.Gateway["tls.key"])
	if err != nil {
		t.Fatalf("the gateway's tls.crt and tls.key: %v", err)
	}
	agPair, err := tls.X509KeyPair(s.Agent["tls.crt"], s.Agent["tls.key"])
	if err != nil {
		t.Fatalf("the agents' tls.crt and tls.key: %v", err)
	}
	gw := parseCert(t, "the gateway's tls.crt", s.Gateway["tls.crt"])
	ag := parseCert(t, "the agents' tls.crt", s.Agent["tls.crt"])
	for _, name := range dnsNames {
		if _, err := gw.Verify(x509.VerifyOptions{DNSName: name, Roots: pool(t, "agent ca.crt", s.Agent["ca.crt"]),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the gateway's certificate for %s, verified with the agents' ca.crt: %v", name, err)
		}
	}
	if !slices.Contains(ag.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Errorf("the agents' certificate has extended key usages %v, want clientAuth", ag.ExtKeyUsage)
	}
	if _, err := ag.Verify(x509.VerifyOptions{Roots: pool(t, "gateway ca.crt", s.Gateway["ca.crt"]),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the agents' certificate, verified with the gateway's ca.crt: %v", err)
	}
	if leafValidity > 0 {
		for what, c := range map[string]*x509.Certificate{"gateway": gw, "agent": ag} {
			if d := c.NotAfter.Sub(c.NotBefore) - leafValidity; d < -24*time.Hour || d > 24*time.Hour {
				t.Errorf("the %s's certificate is valid %v, want %v", what, c.NotAfter.Sub(c.NotBefore), leafValidity)
			}
		}
	}

	serverName := dnsNames[2]
	server := &tls.Config{Certificates: []tls.Certificate{gwPair}, ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs: pool(t, "gateway ca.crt", s.Gateway["ca.crt"]), MinVersion: tls.VersionTLS12}
	client := func(withCert bool, name string) *tls.Config {
		c := &tls.Config{RootCAs: pool(t, "agent ca.crt", s.Agent["ca.crt"]), ServerName: name, MinVersion: tls.VersionTLS12}
		if withCert {
			c.Certificates = []tls.Certificate{agPair}
		}
		return c
	}
	if err := handshake(server, client(true, serverName)); err != nil {
		t.Errorf("mutual TLS handshake, agent to gateway as %s: %v", serverName, err)
	}
	if err := handshake(server, client(false, serverName)); err == nil {
		t.Error("the gateway's TLS took a client without a certificate")
	}
	if err := handshake(server, client(true, "otelcol-nexovue-elsewhere.example")); err == nil {
		t.Error("the agent's TLS took the gateway's certificate for another name")
	}
	return ca
}

// handshake runs both sides of a TLS handshake over an in-memory
// connection and a read of one byte the server writes (TLS 1.3 reports a
// refused client certificate to the client only then). Either side's
// error is returned.
func handshake(server, client *tls.Config) error {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	deadline := time.Now().Add(10 * time.Second)
	_ = a.SetDeadline(deadline)
	_ = b.SetDeadline(deadline)
	srvErr := make(chan error, 1)
	go func() {
		s := tls.Server(a, server)
		err := s.Handshake()
		if err == nil {
			_, err = s.Write([]byte{1})
		}
		if err != nil {
			a.Close()
		}
		srvErr <- err
	}()
	c := tls.Client(b, client)
	err := c.Handshake()
	if err == nil {
		_, err = c.Read(make([]byte, 1))
	}
	if err != nil {
		b.Close()
	}
	return errors.Join(err, <-srvErr)
}
