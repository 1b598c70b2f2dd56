package testenv

import (
	"path/filepath"
	"testing"

	"github.com/nexovue/otelcol-nexovue/internal/testcert"
)

// GatewayTLSEnv is the environment that points the shipped gateway.yaml
// (gateway true) or agent-to-gateway.yaml at the TLS files in dir
// (tls.crt, tls.key, ca.crt).
func GatewayTLSEnv(dir string, gateway bool) []string {
	caVar := "NEXOVUE_GATEWAY_TLS_CA_FILE="
	if gateway {
		caVar = "NEXOVUE_GATEWAY_TLS_CLIENT_CA_FILE="
	}
	return []string{
		"NEXOVUE_GATEWAY_TLS_CERT_FILE=" + filepath.Join(dir, "tls.crt"),
		"NEXOVUE_GATEWAY_TLS_KEY_FILE=" + filepath.Join(dir, "tls.key"),
		caVar + filepath.Join(dir, "ca.crt"),
	}
}

// GatewayTLS writes the mutual TLS files of a gateway (its certificate for
// hosts, default localhost and 127.0.0.1) and of its agents, of one new
// CA, and returns the environment of each side's shipped config.
func GatewayTLS(t testing.TB, hosts ...string) (gateway, agent []string) {
	t.Helper()
	if len(hosts) == 0 {
		hosts = []string{"localhost", "127.0.0.1"}
	}
	ca := testcert.NewCA(t, "test agents and gateways")
	dir := t.TempDir()
	testcert.WriteDir(t, filepath.Join(dir, "gateway"), ca.Issue(t, testcert.Options{CommonName: hosts[0], Hosts: hosts}), ca.PEM)
	testcert.WriteDir(t, filepath.Join(dir, "agent"), ca.Issue(t, testcert.Options{CommonName: "agent", Client: true}), ca.PEM)
	return GatewayTLSEnv(filepath.Join(dir, "gateway"), true), GatewayTLSEnv(filepath.Join(dir, "agent"), false)
}
