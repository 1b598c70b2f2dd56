// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package mtlsextension

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/credentials"

	"github.com/nexovue/otelcol-nexovue/extension/mtlsextension/internal/metadatatest"
	"github.com/nexovue/otelcol-nexovue/internal/testcert"
)

// pki is a CA with the gateway's (server) and an agent's (client) files
// written as the shipped configs read them.
type pki struct {
	ca                   *testcert.CA
	serverDir, clientDir string
	server, client       testcert.Leaf
}

func newPKI(t *testing.T) *pki {
	p := &pki{ca: testcert.NewCA(t, "agents and gateways"), serverDir: filepath.Join(t.TempDir(), "server"), clientDir: filepath.Join(t.TempDir(), "client")}
	p.server = p.ca.Issue(t, testcert.Options{CommonName: "gateway", Hosts: []string{"localhost", "127.0.0.1"}})
	p.client = p.ca.Issue(t, testcert.Options{CommonName: "agent", Client: true})
	testcert.WriteDir(t, p.serverDir, p.server, p.ca.PEM)
	testcert.WriteDir(t, p.clientDir, p.client, p.ca.PEM)
	return p
}

func (p *pki) serverConfig() *configtls.ServerConfig {
	s := configtls.NewDefaultServerConfig()
	s.CertFile, s.KeyFile = filepath.Join(p.serverDir, "tls.crt"), filepath.Join(p.serverDir, "tls.key")
	s.ClientCAFile, s.ReloadClientCAFile = filepath.Join(p.serverDir, "ca.crt"), true
	return &s
}

func (p *pki) clientConfig() *configtls.ClientConfig {
	c := configtls.NewDefaultClientConfig()
	c.CertFile, c.KeyFile, c.CAFile = filepath.Join(p.clientDir, "tls.crt"), filepath.Join(p.clientDir, "tls.key"), filepath.Join(p.clientDir, "ca.crt")
	return &c
}

type fixture struct {
	ext  *mtls
	tel  *componenttest.Telemetry
	logs *observer.ObservedLogs
	now  time.Time
}

func newFixture(t *testing.T, cfg *Config) *fixture {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	core, logs := observer.New(zap.DebugLevel)
	set := metadatatest.NewSettings(tel)
	set.Logger = zap.New(core)
	ext, err := newMTLS(set, cfg)
	require.NoError(t, err)
	f := &fixture{ext: ext, tel: tel, logs: logs, now: time.Now()}
	ext.now = func() time.Time { return f.now }
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return f
}

// serverHandshake runs the server's handshake with a client that speaks
// TLS with client (plaintext HTTP/2 when nil) and returns its error.
func serverHandshake(t *testing.T, server credentials.TransportCredentials, client *tls.Config) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	result := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			result <- err
			return
		}
		defer conn.Close()
		out, _, err := server.ServerHandshake(conn)
		if out != nil {
			out.Close()
		}
		result <- err
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	if client == nil {
		_, err = conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
		require.NoError(t, err)
	} else {
		client.NextProtos = []string{"h2"}
		_ = tls.Client(conn, client).Handshake() // the client's view is not what is tested
	}
	select {
	case err := <-result:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handshake did not end")
		return nil
	}
}

func clientTLS(t *testing.T, ca *x509.Certificate, leaf *testcert.Leaf) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if leaf != nil {
		pair, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		require.NoError(t, err)
		// Presented whatever the server asks for (crypto/tls would leave
		// out a certificate of a CA the server does not name).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	return cfg
}

func TestServerRefusesByReason(t *testing.T) {
	p := newPKI(t)
	f := newFixture(t, &Config{Server: p.serverConfig()})
	creds, err := f.ext.serverCredentials(context.Background())
	require.NoError(t, err)

	other := testcert.NewCA(t, "another CA")
	otherLeaf := other.Issue(t, testcert.Options{CommonName: "intruder", Client: true})
	expired := p.ca.Issue(t, testcert.Options{CommonName: "old agent", Client: true,
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})

	require.NoError(t, serverHandshake(t, creds, clientTLS(t, p.ca.Cert, &p.client)), "an agent with the CA's client certificate")
	cases := []struct {
		name   string
		client *tls.Config
		reason string
	}{
		{"plaintext", nil, reasonPlaintext},
		{"no certificate", clientTLS(t, p.ca.Cert, nil), reasonNoCertificate},
		{"another CA's certificate", clientTLS(t, p.ca.Cert, &otherLeaf), reasonUnknownAuthority},
		{"an expired certificate", clientTLS(t, p.ca.Cert, &expired), reasonExpired},
		// The client does not trust the gateway's CA and says so.
		{"a client that refuses the server", clientTLS(t, other.Cert, &p.client), reasonPeerRefused},
	}
	var want []metricdata.DataPoint[int64]
	for _, c := range cases {
		err := serverHandshake(t, creds, c.client)
		require.Error(t, err, c.name)
		assert.Equal(t, c.reason, classify(err), "%s: %v", c.name, err)
		want = append(want, metricdata.DataPoint[int64]{Value: 1, Attributes: attrs(roleServer, c.reason)})
	}
	metadatatest.AssertEqualMtlsHandshakesRefused(t, f.tel, want, metricdatatest.IgnoreTimestamp())
	// One line per reason, each naming the peer's address.
	lines := f.logs.FilterMessage("mtls: refused a client's TLS handshake").All()
	require.Len(t, lines, len(cases))
	for _, l := range lines {
		assert.Contains(t, l.ContextMap()["peer"], "127.0.0.1:")
	}
}

func TestClientCountsFailedHandshakes(t *testing.T) {
	p := newPKI(t)
	f := newFixture(t, &Config{Client: p.clientConfig()})
	creds, err := f.ext.clientCredentials(context.Background())
	require.NoError(t, err)

	other := testcert.NewCA(t, "another CA")
	cases := []struct {
		name      string
		server    testcert.Leaf
		authority string
		reason    string
	}{
		{"a server of another CA", other.Issue(t, testcert.Options{CommonName: "impostor", Hosts: []string{"localhost"}}), "localhost:4317", reasonUnknownAuthority},
		{"a server of another name", p.ca.Issue(t, testcert.Options{CommonName: "elsewhere", Hosts: []string{"elsewhere.example"}}), "localhost:4317", reasonNameMismatch},
		{"the gateway", p.server, "localhost:4317", ""},
	}
	var want []metricdata.DataPoint[int64]
	for _, c := range cases {
		err := clientHandshake(t, creds, c.server, c.authority)
		if c.reason == "" {
			require.NoError(t, err, c.name)
			continue
		}
		require.Error(t, err, c.name)
		want = append(want, metricdata.DataPoint[int64]{Value: 1, Attributes: attrs(roleClient, c.reason)})
	}
	metadatatest.AssertEqualMtlsHandshakesRefused(t, f.tel, want, metricdatatest.IgnoreTimestamp())
}

// clientHandshake runs the client's handshake with a TLS server that
// presents server, and returns its error.
func clientHandshake(t *testing.T, client credentials.TransportCredentials, server testcert.Leaf, authority string) error {
	t.Helper()
	pair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		_ = tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}).Handshake()
		conn.Close()
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	out, _, err := client.ClientHandshake(context.Background(), authority, conn)
	if out != nil {
		out.Close()
	}
	return err
}

// TestClientReloadsItsCA: the client's ca_file is read again once
// reload_interval has passed, so a gateway certificate of a new CA is
// accepted without a restart; a file that no longer holds a certificate
// keeps the CA read before, with one warning.
func TestClientReloadsItsCA(t *testing.T) {
	p := newPKI(t)
	cfg := p.clientConfig()
	cfg.ReloadInterval = time.Minute
	f := newFixture(t, &Config{Client: cfg})
	creds, err := f.ext.clientCredentials(context.Background())
	require.NoError(t, err)

	newCA := testcert.NewCA(t, "the next CA")
	server := newCA.Issue(t, testcert.Options{CommonName: "gateway", Hosts: []string{"localhost"}})
	require.ErrorAs(t, clientHandshake(t, creds, server, "localhost:4317"), new(x509.UnknownAuthorityError), "a gateway of a CA not in ca_file")
	require.NoError(t, clientHandshake(t, creds, p.server, "localhost:4317"))

	caFile := filepath.Join(p.clientDir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, newCA.PEM, 0o600))
	require.Error(t, clientHandshake(t, creds, server, "localhost:4317"), "the file is read again only after reload_interval")
	f.now = f.now.Add(time.Minute + time.Second)
	require.NoError(t, clientHandshake(t, creds, server, "localhost:4317"), "the new CA, read again")
	require.ErrorAs(t, clientHandshake(t, creds, p.server, "localhost:4317"), new(x509.UnknownAuthorityError), "the old CA is no longer in the file")
	assert.Equal(t, 1, f.logs.FilterMessageSnippet("the client's CA file changed").Len())

	require.NoError(t, os.WriteFile(caFile, []byte("not a certificate"), 0o600))
	for range 2 {
		f.now = f.now.Add(time.Minute + time.Second)
		require.NoError(t, clientHandshake(t, creds, server, "localhost:4317"), "a broken file keeps the CA read before")
	}
	warned := f.logs.FilterMessageSnippet("cannot read the client's CA file again")
	require.Equal(t, 1, warned.Len(), "one warning per error")
	assert.Equal(t, caFile, warned.All()[0].ContextMap()["ca_file"])
}

func TestRefusalLogAtMostOneLinePerMinutePerReason(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	now := time.Now()
	counted := map[string]int{}
	r := newRefusals(roleServer, zap.New(core), func() time.Time { return now }, func(reason string) { counted[reason]++ })
	peer := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 51000}
	plain := tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}

	for range 5 {
		r.record(peer, plain)
	}
	r.record(peer, x509.UnknownAuthorityError{})
	now = now.Add(59 * time.Second)
	r.record(peer, plain)
	require.Equal(t, 2, logs.Len(), "one line for each reason within the minute")
	now = now.Add(2 * time.Second)
	r.record(peer, plain)

	assert.Equal(t, map[string]int{reasonPlaintext: 7, reasonUnknownAuthority: 1}, counted, "every refusal is counted")
	lines := logs.All()
	require.Len(t, lines, 3)
	assert.Equal(t, reasonPlaintext, lines[2].ContextMap()["reason"])
	assert.Equal(t, int64(5), lines[2].ContextMap()["same_reason_not_logged"], "the line says how many it stood for")
	assert.Equal(t, "10.0.0.7:51000", lines[2].ContextMap()["peer"])
}

func TestExpiryGaugeFollowsReloadedCertificate(t *testing.T) {
	p := newPKI(t)
	server := p.serverConfig()
	server.ReloadInterval = time.Millisecond
	client := p.clientConfig()
	client.ReloadInterval = time.Millisecond
	f := newFixture(t, &Config{Server: server})
	_, err := f.ext.serverCredentials(context.Background())
	require.NoError(t, err)
	g := newFixture(t, &Config{Client: client})
	_, err = g.ext.clientCredentials(context.Background())
	require.NoError(t, err)

	left := func(fx *fixture, leaf testcert.Leaf) float64 { return leaf.Cert.NotAfter.Sub(fx.now).Seconds() }
	metadatatest.AssertEqualMtlsCertificateExpirySeconds(t, f.tel, []metricdata.DataPoint[float64]{{Value: left(f, p.server), Attributes: attrs(roleServer, "")}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualMtlsCertificateExpirySeconds(t, g.tel, []metricdata.DataPoint[float64]{{Value: left(g, p.client), Attributes: attrs(roleClient, "")}}, metricdatatest.IgnoreTimestamp())

	// New leaves on disk: the gauges follow, no restart.
	newServer := p.ca.Issue(t, testcert.Options{CommonName: "gateway", Hosts: []string{"localhost"}, NotAfter: time.Now().Add(90 * 24 * time.Hour)})
	newClient := p.ca.Issue(t, testcert.Options{CommonName: "agent", Client: true, NotAfter: time.Now().Add(5 * 24 * time.Hour)})
	testcert.WriteDir(t, p.serverDir, newServer, p.ca.PEM)
	testcert.WriteDir(t, p.clientDir, newClient, p.ca.PEM)
	for _, c := range []struct {
		fx   *fixture
		role string
		leaf testcert.Leaf
	}{{f, roleServer, newServer}, {g, roleClient, newClient}} {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			m, err := c.fx.tel.GetMetric("otelcol_mtls_certificate_expiry_seconds")
			require.NoError(ct, err)
			dps := m.Data.(metricdata.Gauge[float64]).DataPoints
			require.Len(ct, dps, 1)
			assert.InDelta(ct, left(c.fx, c.leaf), dps[0].Value, 1, c.role)
		}, 10*time.Second, 10*time.Millisecond)
	}
}

func TestInsecureWarnsAndIsPlaintext(t *testing.T) {
	f := newFixture(t, &Config{Insecure: true})
	require.Equal(t, 1, f.logs.FilterMessage(InsecureWarning).FilterLevelExact(zap.WarnLevel).Len())
	opts, err := f.ext.GetGRPCServerOptions(context.Background())
	require.NoError(t, err)
	assert.Empty(t, opts, "a plaintext server: no credentials")
	dial, err := f.ext.GetGRPCClientOptions(context.Background())
	require.NoError(t, err)
	assert.Len(t, dial, 1, "plaintext credentials for the client")
	_, err = f.tel.GetMetric("otelcol_mtls_certificate_expiry_seconds")
	assert.Error(t, err, "no certificate, no expiry")

	g := newFixture(t, &Config{Server: newPKI(t).serverConfig()})
	assert.Zero(t, g.logs.FilterMessage(InsecureWarning).Len())
}

func TestRoleNotConfigured(t *testing.T) {
	p := newPKI(t)
	f := newFixture(t, &Config{Client: p.clientConfig()})
	_, err := f.ext.GetGRPCServerOptions(context.Background())
	require.ErrorContains(t, err, "server is not set")
	g := newFixture(t, &Config{Server: p.serverConfig()})
	_, err = g.ext.GetGRPCClientOptions(context.Background())
	require.ErrorContains(t, err, "client is not set")
	require.NoError(t, os.Remove(filepath.Join(p.serverDir, "tls.key")))
	_, err = g.ext.GetGRPCServerOptions(context.Background())
	require.ErrorContains(t, err, "tls.key", "a missing file is named")
}

func TestClassifyOtherFailures(t *testing.T) {
	p := newPKI(t)
	f := newFixture(t, &Config{Server: p.serverConfig()})
	creds, err := f.ext.serverCredentials(context.Background())
	require.NoError(t, err)
	notYet := p.ca.Issue(t, testcert.Options{CommonName: "future agent", Client: true,
		NotBefore: time.Now().Add(time.Hour), NotAfter: time.Now().Add(48 * time.Hour)})
	serverOnly := p.ca.Issue(t, testcert.Options{CommonName: "a server certificate", Hosts: []string{"agent"}})
	for _, c := range []struct {
		name   string
		leaf   *testcert.Leaf
		reason string
	}{
		{"not yet valid", &notYet, reasonBadCertificate},
		{"not for client use", &serverOnly, reasonBadCertificate},
	} {
		err := serverHandshake(t, creds, clientTLS(t, p.ca.Cert, c.leaf))
		require.Error(t, err, c.name)
		assert.Equal(t, c.reason, classify(err), "%s: %v", c.name, err)
	}
	assert.Equal(t, reasonOther, classify(io.EOF), "a connection closed mid-handshake")
}
