package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
	"github.com/nexovue/otelcol-nexovue/internal/testcert"
	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// tierPKI is the gateway tier's TLS material: a CA, and the gateways' and
// the agents' files, each a directory behind a symlink that a rotation
// switches at once (as the kubelet does with a Secret's volume), in the
// names the shipped configs read (tls.crt, tls.key, ca.crt).
type tierPKI struct {
	t       testing.TB
	dir     string
	ca      *testcert.CA
	gateway string // the gateways' directory (a symlink)
	agent   string // the agents' directory (a symlink)
	// gatewayLeaf and agentLeaf are the certificates the tier starts with.
	gatewayLeaf, agentLeaf testcert.Leaf
	// reload, when set, is NEXOVUE_GATEWAY_TLS_RELOAD_INTERVAL.
	reload string
	// insecure sets NEXOVUE_GATEWAY_INSECURE=true.
	insecure bool
	versions int
}

func newTierPKI(t testing.TB, dir string) *tierPKI {
	p := &tierPKI{t: t, dir: dir, ca: testcert.NewCA(t, "e2e agents and gateways"),
		gateway: filepath.Join(dir, "gateway-tls"), agent: filepath.Join(dir, "agent-tls")}
	p.gatewayLeaf = p.serverLeaf(time.Now().Add(24 * time.Hour))
	p.agentLeaf = p.ca.Issue(t, testcert.Options{CommonName: "e2e agent", Client: true})
	p.switchTo(p.gateway, p.gatewayLeaf, p.ca.PEM)
	p.switchTo(p.agent, p.agentLeaf, p.ca.PEM)
	return p
}

// serverLeaf is a gateway certificate of the CA for the tier's name and
// every loopback address the tests use.
func (p *tierPKI) serverLeaf(notAfter time.Time) testcert.Leaf {
	hosts := []string{tierName, "localhost", "127.0.0.1"}
	for i := 2; i < 10; i++ {
		hosts = append(hosts, fmt.Sprintf("127.0.0.%d", i))
	}
	return p.ca.Issue(p.t, testcert.Options{CommonName: tierName, Hosts: hosts, NotAfter: notAfter})
}

// switchTo writes leaf and caPEM into a new directory and points link at
// it in one rename.
func (p *tierPKI) switchTo(link string, leaf testcert.Leaf, caPEM []byte) {
	p.versions++
	target := fmt.Sprintf("%s.%d", link, p.versions)
	testcert.WriteDir(p.t, target, leaf, caPEM)
	tmp := link + ".new"
	require.NoError(p.t, os.Symlink(target, tmp))
	require.NoError(p.t, os.Rename(tmp, link))
}

func (p *tierPKI) gatewayEnv() []string { return p.env(testenv.GatewayTLSEnv(p.gateway, true)) }

func (p *tierPKI) agentEnv() []string { return p.env(testenv.GatewayTLSEnv(p.agent, false)) }

func (p *tierPKI) env(files []string) []string {
	if p.reload != "" {
		files = append(files, "NEXOVUE_GATEWAY_TLS_RELOAD_INTERVAL="+p.reload)
	}
	if p.insecure {
		files = append(files, "NEXOVUE_GATEWAY_INSECURE=true")
	}
	return files
}

// refusedReasons are the reasons TestGatewayMutualTLS provokes, and the
// ones that must not grow while the agent delivers.
var refusedReasons = []string{"plaintext", "no_certificate", "unknown_authority", "expired", "bad_certificate", "peer_refused", "other"}

// refused reads the gateway's otelcol_mtls_handshakes_refused by
// reason.
func (g *tierGateway) refused(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, r := range refusedReasons {
		v, err := scrapeMetric(g.env, "otelcol_mtls_handshakes_refused", `role="server"`, fmt.Sprintf(`reason="%s"`, r))
		require.NoError(t, err)
		out[r] = v
	}
	return out
}

// intruder sends one batch of samples straight to the gateway with creds
// and returns the export's error.
func intruder(addr string, creds credentials.TransportCredentials, seq int64) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	pd := profilegen.Generate(profilegen.Config{Samples: 100, Depth: 8, Seq: true, Seed: uint64(seq)})
	offsetSeq(pd, seq)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pprofileotlp.NewGRPCClient(conn).Export(ctx, pprofileotlp.NewExportRequestFromProfiles(pd))
	return err
}

// tlsClient is a TLS client of the gateway that presents leaf (none when
// nil), whatever CA the gateway asks for, and trusts the tier's CA.
func (p *tierPKI) tlsClient(leaf *testcert.Leaf) credentials.TransportCredentials {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.Cert)
	cfg := &tls.Config{RootCAs: pool, ServerName: tierName, MinVersion: tls.VersionTLS12}
	if leaf != nil {
		pair, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		require.NoError(p.t, err)
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	return credentials.NewTLS(cfg)
}

// servedSerial is the serial of the certificate the gateway at addr
// serves to a new connection of a client that presents client and trusts
// cas (all the CAs the gateway's certificate may be of: a client that
// refused it would be counted by the gateway as peer_refused).
func servedSerial(addr string, client testcert.Leaf, cas ...*testcert.CA) (string, error) {
	pool := x509.NewCertPool()
	for _, ca := range cas {
		pool.AddCert(ca.Cert)
	}
	pair, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
	if err != nil {
		return "", err
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: tierName, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"},
		Certificates: []tls.Certificate{pair}})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// establishedClients returns the client ends (address:port, as
// /proc/net/tcp writes them) of the established TCP connections to addr,
// an IPv4 address and port on this host.
func establishedClients(addr string) (map[string]bool, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(host).To4()
	port, err := strconv.Atoi(portText)
	if ip == nil || err != nil {
		return nil, fmt.Errorf("establishedClients: %q is not an IPv4 address and port", addr)
	}
	// /proc/net/tcp: the address as a little-endian 32-bit hex number.
	local := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], port)
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && f[1] == local && f[3] == "01" { // TCP_ESTABLISHED
			out[f[2]] = true
		}
	}
	return out, nil
}

// connectionsNow notes the established connections to addr (the agent,
// delivering all along, has at least one) and returns a function that
// waits until every one of them is closed.
func connectionsNow(t *testing.T, addr string) func(what string) {
	t.Helper()
	before, err := establishedClients(addr)
	require.NoError(t, err)
	require.NotEmpty(t, before, "the agent, delivering all along, has no connection to %s in /proc/net/tcp", addr)
	return func(what string) {
		t.Helper()
		testenv.WaitFor(t, time.Minute, what, func() (bool, error) {
			now, err := establishedClients(addr)
			for c := range now {
				if before[c] {
					return false, err
				}
			}
			return err == nil, err
		})
	}
}

// waitExpiry waits until the collector whose environment is env reports
// leaf's expiry for role (within a minute of it).
func waitExpiry(t *testing.T, env []string, role string, leaf testcert.Leaf, what string) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, what, func() (bool, error) {
		v, err := scrapeMetric(env, "otelcol_mtls_certificate_expiry_seconds", fmt.Sprintf(`role="%s"`, role))
		return err == nil && math.Abs(v-time.Until(leaf.Cert.NotAfter).Seconds()) < 60, err
	})
}

// TestGatewayMutualTLS: the shipped gateway.yaml and agent-to-gateway.yaml
// (built binary) with their default mutual TLS, certificates of a CA of
// the test. The agent delivers through the gateway; a client in
// plaintext, one without a certificate, one with another CA's and one with
// an expired certificate each get nothing through, are counted by reason
// on the gateway's :8888 and logged once per reason however often they
// come. Then, mid-stream, both sides' certificates are replaced on disk
// (new leaves), and the gateway's client CA rotated to a new CA that signed
// the agent's new certificate: new connections use the new files (the
// gateway's served serial and both expiry gauges; the agent's connections
// after the CA rotation are accepted only with its new certificate), with
// no restart, nothing lost, nothing twice.
func TestGatewayMutualTLS(t *testing.T) {
	t.Parallel() // see main_test.go
	start := time.Now()
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{tierKey}})
	var sent int64
	figures(t, "gateway-mtls", srv, &sent)
	tr := newGatewayTier(t, srv)
	tr.pki.reload = "1s"
	ip := "127.0.0.5"
	gw := tr.startGateway(ip, "")
	ports, agents := tr.startAgents(1, "")
	agentEnv := tr.agentEnvs[0]
	addr := fmt.Sprintf("%s:%d", ip, tr.port)
	ready := time.Since(start)

	// 500 samples every 100 ms through the agent, all along.
	load := startTierLoad(t, ports, 500, 100*time.Millisecond)
	tr.waitTraffic(ip, 0, time.Minute, "the agent's first samples at the gateway")
	waitExpiry(t, gw.env, "server", tr.pki.gatewayLeaf, "the gateway's expiry gauge")
	waitExpiry(t, agentEnv, "client", tr.pki.agentLeaf, "the agent's expiry gauge")

	// The intruders, each three times: nothing of theirs arrives (their
	// seq values are far above the agent's).
	other := testcert.NewCA(t, "another CA")
	otherLeaf := other.Issue(t, testcert.Options{CommonName: "intruder", Client: true})
	expired := tr.pki.ca.Issue(t, testcert.Options{CommonName: "old agent", Client: true,
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	intruders := []struct {
		reason string
		creds  credentials.TransportCredentials
	}{
		{"plaintext", insecure.NewCredentials()},
		{"no_certificate", tr.pki.tlsClient(nil)},
		{"unknown_authority", tr.pki.tlsClient(&otherLeaf)},
		{"expired", tr.pki.tlsClient(&expired)},
	}
	const intruderSeq = 1 << 40
	for i, in := range intruders {
		for j := range 3 {
			err := intruder(addr, in.creds, intruderSeq+int64(i*3+j)*100)
			require.Error(t, err, "the %s client's export was accepted", in.reason)
		}
	}
	var afterIntruders map[string]float64
	testenv.WaitFor(t, 30*time.Second, "every intruder counted by reason", func() (bool, error) {
		afterIntruders = gw.refused(t)
		for _, in := range intruders {
			if afterIntruders[in.reason] < 3 {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("refused handshakes at the gateway after the intruders: %v", afterIntruders)
	out := gw.proc.Output()
	for _, in := range intruders {
		lines := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "mtls: refused a client's TLS handshake") && strings.Contains(l, `"reason": "`+in.reason+`"`) {
				lines++
				require.Contains(t, l, `"peer": "127.0.0.1:`, "the line names the peer's address")
			}
		}
		require.Equal(t, 1, lines, "%s: one log line however often it comes within a minute", in.reason)
	}
	require.NotContains(t, out, "PRIVATE KEY")

	// Rotation 1: new leaves for both sides; the gateway trusts the old and
	// a new CA for clients; the agent's new certificate is of the new CA.
	newCA := testcert.NewCA(t, "e2e agents, the next CA")
	gwLeaf := tr.pki.serverLeaf(time.Now().Add(90 * 24 * time.Hour))
	agentLeaf := newCA.Issue(t, testcert.Options{CommonName: "e2e agent", Client: true, NotAfter: time.Now().Add(5 * 24 * time.Hour)})
	rotated := time.Now()
	tr.pki.switchTo(tr.pki.gateway, gwLeaf, bytes.Join([][]byte{tr.pki.ca.PEM, newCA.PEM}, nil))
	tr.pki.switchTo(tr.pki.agent, agentLeaf, tr.pki.ca.PEM)
	testenv.WaitFor(t, time.Minute, "the gateway serving its new certificate", func() (bool, error) {
		serial, err := servedSerial(addr, tr.pki.agentLeaf, tr.pki.ca)
		return err == nil && serial == gwLeaf.Cert.SerialNumber.String(), nil
	})
	waitExpiry(t, gw.env, "server", gwLeaf, "the gateway's expiry gauge following its new certificate")
	waitExpiry(t, agentEnv, "client", agentLeaf, "the agent's expiry gauge following its new certificate")
	// Rotation 2: the old CA is no longer trusted for clients: the
	// agent's connections from now on are accepted only with its new
	// certificate. max_connection_age (5 s) makes it reconnect.
	// The connections open now were made with the agent's certificate of
	// either CA; the gateway closes each within max_connection_age (5 s)
	// plus 10% jitter. Once none of them is left, what it accepts came
	// over connections the agent opened with its new certificate, which
	// only the new CA signed.
	wait := connectionsNow(t, addr)
	tr.pki.switchTo(tr.pki.gateway, gwLeaf, newCA.PEM)
	caRotated := time.Now()
	wait("the gateway's connections made before the CA rotation closed")
	from, err := gw.accepted()
	require.NoError(t, err)
	tr.waitTraffic(ip, from+10000, time.Minute, "the agent delivering over connections made after the old client CA is gone")
	t.Logf("rotation: new certificates served and reported %s after they were written; 10,000 samples delivered over new connections %s after the CA rotation",
		caRotated.Sub(rotated).Round(100*time.Millisecond), time.Since(caRotated).Round(100*time.Millisecond))

	// Rotation 3: the gateway's certificate from the new CA too. The agent
	// first trusts both CAs, then the new one alone: it reads its ca.crt
	// again (reload_interval), no restart. An agent that kept the old CA
	// would fail every new connection to the gateway (the gateway would
	// count peer_refused, and nothing more would arrive).
	tr.pki.switchTo(tr.pki.agent, agentLeaf, bytes.Join([][]byte{tr.pki.ca.PEM, newCA.PEM}, nil))
	// The agent reads its CA file at a new connection (each lives
	// max_connection_age): once it logged the change, it trusts both.
	caChanged := func(n int) func() (bool, error) {
		return func() (bool, error) {
			return strings.Count(agents[0].Output(), "mtls: the client's CA file changed") >= n, nil
		}
	}
	testenv.WaitFor(t, time.Minute, "the agent reading its CA file of both CAs", caChanged(1))
	newGwLeaf := newCA.Issue(t, testcert.Options{CommonName: tierName, Hosts: []string{tierName, "localhost", ip}, NotAfter: time.Now().Add(90 * 24 * time.Hour)})
	tr.pki.switchTo(tr.pki.gateway, newGwLeaf, newCA.PEM)
	testenv.WaitFor(t, time.Minute, "the gateway serving its certificate of the new CA", func() (bool, error) {
		serial, err := servedSerial(addr, agentLeaf, tr.pki.ca, newCA)
		return err == nil && serial == newGwLeaf.Cert.SerialNumber.String(), nil
	})
	tr.pki.switchTo(tr.pki.agent, agentLeaf, newCA.PEM)
	testenv.WaitFor(t, time.Minute, "the agent reading its CA file of the new CA alone", caChanged(2))
	wait = connectionsNow(t, addr)
	serverRotated := time.Now()
	wait("the agent's connections made before the gateway's CA rotation closed")
	from, err = gw.accepted()
	require.NoError(t, err)
	tr.waitTraffic(ip, from+10000, time.Minute, "the agent delivering to the gateway of the new CA, trusting the new CA alone")
	t.Logf("rotation: the gateway's certificate of the new CA; 10,000 samples delivered over new connections %s after it, the agent trusting the new CA alone",
		time.Since(serverRotated).Round(100*time.Millisecond))

	load.stop()
	require.NoError(t, load.err())
	sent = load.next.Load()
	waitAllSeq(t, srv, sent, 2*time.Minute)
	st := srv.Stats()
	require.Equal(t, sent, int64(st.Seq.Distinct), "the double got samples that are not the agent's")
	require.Less(t, st.Seq.Max, int64(intruderSeq), "an intruder's samples arrived")
	require.Zero(t, st.Seq.Duplicates, "samples arrived twice")
	require.Equal(t, afterIntruders, gw.refused(t), "a handshake refused while the agent rotated its certificates")
	t.Logf("figure: gateway mTLS e2e: %d samples delivered once, %d intruder exports refused, collectors ready in %s, wall %s",
		sent, 3*len(intruders), ready.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
}

// TestGatewayMutualTLSCost: what mutual TLS costs the gateway and the
// agent (shipped configs, built binary): CPU time per 10,000 samples
// (/proc/<pid>/stat) of each for the same 50,000 samples, in batches of
// 1,000 through one agent and one gateway (max_connection_age 5 s: a
// handshake every 5 s), with mutual TLS and with
// NEXOVUE_GATEWAY_INSECURE=true, in the same run. Figures, not
// assertions; in plaintext both collectors must log the insecure warning.
func TestGatewayMutualTLSCost(t *testing.T) {
	// Not parallel (E2E_SERIAL): its figures are CPU times.
	const samples, per = 50000, 1000
	type cost struct{ gateway, agent time.Duration }
	run := func(insecure bool) cost {
		srv := ingest.StartForTest(t, ingest.Config{Keys: []string{tierKey}})
		tr := newGatewayTier(t, srv)
		tr.pki.insecure = insecure
		ip := "127.0.0.6"
		if insecure {
			ip = "127.0.0.7"
		}
		gw := tr.startGateway(ip, "")
		ports, agents := tr.startAgents(1, "")
		if insecure {
			for _, p := range []*testenv.Process{gw.proc, agents[0]} {
				require.Contains(t, p.Output(), "mtls: insecure is true", "the insecure warning at start")
			}
		}
		cpu := func(p *testenv.Process) time.Duration {
			st, err := testenv.ReadProcStat(p.Cmd.Process.Pid)
			require.NoError(t, err)
			return st.CPU
		}
		g0, a0 := cpu(gw.proc), cpu(agents[0])
		lg := newLoadgen(ports[0])
		lg.send(t, samples/per, per, 16)
		waitAllSeq(t, srv, samples, 2*time.Minute)
		require.Zero(t, srv.Stats().Seq.Duplicates)
		return cost{gateway: cpu(gw.proc) - g0, agent: cpu(agents[0]) - a0}
	}
	mtls := run(false)
	plain := run(true)
	per10k := func(d time.Duration) float64 { return float64(d.Milliseconds()) * 10000 / samples }
	t.Logf("figure: CPU per 10,000 samples (50,000 in batches of 1,000), mutual TLS / plaintext: gateway %.1f / %.1f ms (%.2fx), agent %.1f / %.1f ms (%.2fx); load %s",
		per10k(mtls.gateway), per10k(plain.gateway), float64(mtls.gateway)/float64(max(plain.gateway, time.Millisecond)),
		per10k(mtls.agent), per10k(plain.agent), float64(mtls.agent)/float64(max(plain.agent, time.Millisecond)), testenv.LoadAvg())
}

// TestAgentRefusesAnUntrustedGateway: an agent whose CA file does not hold
// the gateway's CA (a wrong Secret) refuses the gateway at the handshake,
// and says so: otelcol_mtls_handshakes_refused{role="client",
// reason="unknown_authority"} on its own :8888 grows, and it logs the
// failure once however often it retries. Nothing reaches the gateway
// meanwhile; the agent keeps the batches in its queue. Once the right CA
// is written to its file (reload_interval, no restart) everything the
// agent accepted arrives, each sample once.
func TestAgentRefusesAnUntrustedGateway(t *testing.T) {
	t.Parallel() // see main_test.go
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{tierKey}})
	var sent int64
	figures(t, "agent-untrusted-gateway", srv, &sent)
	tr := newGatewayTier(t, srv)
	tr.pki.reload = "1s"
	other := testcert.NewCA(t, "not the gateway's CA")
	tr.pki.switchTo(tr.pki.agent, tr.pki.agentLeaf, other.PEM)
	ip := "127.0.0.8"
	gw := tr.startGateway(ip, "")
	ports, agents := tr.startAgents(1, "")
	agentEnv := tr.agentEnvs[0]

	load := startTierLoad(t, ports, 500, 100*time.Millisecond)
	clientRefused := func() float64 {
		v, err := scrapeMetric(agentEnv, "otelcol_mtls_handshakes_refused", `role="client"`, `reason="unknown_authority"`)
		require.NoError(t, err)
		return v
	}
	testenv.WaitFor(t, time.Minute, "the agent counting three handshakes refused for the gateway's unknown CA", func() (bool, error) {
		return clientRefused() >= 3, nil
	})
	refusedWhileWrong := clientRefused()
	accepted, err := gw.accepted()
	require.NoError(t, err)
	require.Zero(t, accepted, "the gateway accepted samples from an agent that does not trust it")
	require.Zero(t, srv.Stats().SamplesAccepted, "samples reached the ingest through a gateway the agent does not trust")
	lines := strings.Count(agents[0].Output(), "mtls: the TLS handshake with the server failed")
	require.Equal(t, 1, lines, "one log line for %v refusals within a minute", refusedWhileWrong)
	require.Contains(t, agents[0].Output(), `"reason": "unknown_authority"`)

	// The right CA, written as a Secret's update is: the agent reads it at
	// its next connection and delivers what it kept.
	fixed := time.Now()
	tr.pki.switchTo(tr.pki.agent, tr.pki.agentLeaf, tr.pki.ca.PEM)
	tr.waitTraffic(ip, 0, time.Minute, "the agent delivering once its CA file holds the gateway's CA")
	delivered := time.Since(fixed)
	load.stop()
	require.NoError(t, load.err())
	sent = load.next.Load()
	waitAllSeq(t, srv, sent, 2*time.Minute)
	st := srv.Stats()
	require.Equal(t, sent, int64(st.Seq.Distinct))
	require.Zero(t, st.Seq.Duplicates, "samples arrived twice")
	t.Logf("figure: agent refusing an untrusted gateway: %v handshakes refused (one log line) while its CA file was wrong; the gateway's first samples %s after the right CA was written; %d samples delivered once",
		refusedWhileWrong, delivered.Round(100*time.Millisecond), sent)
}
