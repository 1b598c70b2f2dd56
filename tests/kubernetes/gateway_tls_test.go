// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// tlsDir is where the chart mounts each side's TLS Secret and where the
// shipped configs read tls.crt, tls.key and ca.crt by default (issue 42).
const tlsDir = "/etc/otelcol-nexovue/tls"

// TestKubernetesGatewayTLS: the two tiers as the chart installs them
// (values set gateway, on the real API server: the certificates are the
// ones it generated there), run from the built binary: the eBPF agent with
// the DaemonSet's config and the agents' Secret, the gateway with the
// Deployment's config and the gateway's Secret, the ingest double behind
// it. Profiles arrive through mutual TLS; the gateway refuses a client
// without a certificate and a plaintext one. The collectors read the
// Secrets' files from the test's folders through the configs' file
// variables (the pods have them at tlsDir, their default, which the
// configs must name), and the agent dials 127.0.0.1 with the headless
// Service's name as its TLS server name, as in the pod it dials that name.
// It needs the shipped configs of issue 42 (TLS on by default).
func TestKubernetesGatewayTLS(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	installChart(t, c, "gateway")
	const gatewayName = "otelcol-nexovue-gateway"
	serverName := gatewayName + "-headless." + agentNamespace + ".svc"

	gwCfg := c.kubectl(t, "-n", agentNamespace, "get", "configmap", gatewayName, "-o", `jsonpath={.data.config\.yaml}`)
	agCfg := agentConfig(t, c)
	for what, cfg := range map[string]string{"gateway": gwCfg, "agent": agCfg} {
		for _, f := range []string{"tls.crt", "tls.key", "ca.crt"} {
			if !strings.Contains(cfg, tlsDir+"/"+f) {
				t.Fatalf("the %s's config from the API server does not read %s/%s, where the chart mounts its Secret (the shipped configs of issue 42 do):\n%s", what, tlsDir, f, cfg)
			}
		}
	}
	for what, want := range map[string]string{"daemonset/" + agentName: chartAgentTLS, "deployment/" + gatewayName: chartGatewayTLS} {
		got := c.kubectl(t, "-n", agentNamespace, "get", what, "-o",
			`jsonpath={range .spec.template.spec.containers[0].volumeMounts[?(@.mountPath=="`+tlsDir+`")]}{.name}{end}`)
		secret := c.kubectl(t, "-n", agentNamespace, "get", what, "-o", `jsonpath={.spec.template.spec.volumes[?(@.name=="`+got+`")].secret.secretName}`)
		if got == "" || secret != want {
			t.Fatalf("%s mounts %q (Secret %q) at %s, want Secret %s", what, got, secret, tlsDir, want)
		}
	}

	// Each Secret's files, as the kubelet writes them into the pod.
	dir := t.TempDir()
	files := func(side, secret string) map[string]string {
		paths := map[string]string{}
		for k, v := range c.secretData(t, agentNamespace, secret) {
			paths[k] = filepath.Join(dir, side, k)
			mustWrite(t, paths[k], string(v))
		}
		return paths
	}
	gw, ag := files("gateway", chartGatewayTLS), files("agent", chartAgentTLS)

	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	gwAddr := testenv.FreeAddr(t)
	gwConfig := filepath.Join(dir, "gateway.yaml")
	mustWrite(t, gwConfig, gwCfg)
	testenv.StartCollector(t, gwConfig, testenv.CollectorOptions{Env: []string{
		"NEXOVUE_KEY=" + testKey,
		"NEXOVUE_ENDPOINT=" + srv.URL(),
		"NEXOVUE_OTLP_GRPC_ENDPOINT=" + gwAddr,
		"NEXOVUE_OTLP_HTTP_ENDPOINT=" + testenv.FreeAddr(t),
		"NEXOVUE_HEALTH_ENDPOINT=" + testenv.FreeAddr(t),
		"NEXOVUE_METRICS_HOST=127.0.0.1",
		"NEXOVUE_METRICS_PORT=" + strconv.Itoa(testenv.FreePort(t)),
		"NEXOVUE_GATEWAY_TLS_CERT_FILE=" + gw["tls.crt"],
		"NEXOVUE_GATEWAY_TLS_KEY_FILE=" + gw["tls.key"],
		"NEXOVUE_GATEWAY_TLS_CLIENT_CA_FILE=" + gw["ca.crt"],
	}})

	// Who may not send: a TLS client without a certificate, a plaintext
	// one. (A gRPC server that took either would send its HTTP/2 SETTINGS
	// frame.)
	caPEM, err := os.ReadFile(ag["ca.crt"])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if err := tlsWithoutCertificate(gwAddr, &tls.Config{RootCAs: roots, ServerName: serverName, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}); err == nil {
		t.Error("the gateway took a TLS client without a certificate")
	} else {
		t.Logf("a client without a certificate: %v", err)
	}
	if settings, err := plaintextHTTP2(gwAddr); settings {
		t.Error("the gateway answered a plaintext HTTP/2 client")
	} else {
		t.Logf("a plaintext client: %v", err)
	}

	// The agent: the DaemonSet's config; the gateway's address is the
	// test's, its name the headless Service's (the mtls extension's client
	// settings hold the agent's TLS).
	overlay := filepath.Join(dir, "agent-overlay.yaml")
	mustWrite(t, overlay, "extensions:\n  mtls:\n    client:\n      server_name_override: "+serverName+"\n")
	node := "nxv-node-" + randHex(t, 3)
	startAgentWith(t, c, node, true, nil, []string{overlay}, ingest.Config{Keys: []string{testKey}},
		"NEXOVUE_GATEWAY_ENDPOINT="+gwAddr,
		"NEXOVUE_GATEWAY_TLS_CERT_FILE="+ag["tls.crt"],
		"NEXOVUE_GATEWAY_TLS_KEY_FILE="+ag["tls.key"],
		"NEXOVUE_GATEWAY_TLS_CA_FILE="+ag["ca.crt"],
		"NEXOVUE_KEY=")
	start := time.Now()
	testenv.WaitFor(t, 2*time.Minute, "profiles from the agent through the gateway's mutual TLS at the ingest double", func() (bool, error) {
		return srv.Stats().AcceptedRequests > 0, nil
	})
	t.Logf("first profiles through mutual TLS after %v; the ingest double: %+v", time.Since(start).Round(time.Millisecond), srv.Stats().RequestsByStatus)
	if n := srv.Stats().RequestsByStatus[401]; n > 0 {
		t.Errorf("the ingest double refused %d requests for their key", n)
	}
}

// tlsWithoutCertificate dials addr with TLS and no client certificate and
// reads the server's first bytes: nil when the gateway let it in.
func tlsWithoutCertificate(addr string, cfg *tls.Config) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
		return err
	}
	_, err = conn.Read(make([]byte, 9))
	return err
}

// plaintextHTTP2 sends the HTTP/2 client preface in clear text and says
// whether the answer was a SETTINGS frame (what a plaintext gRPC server
// answers), with the error or what came instead.
func plaintextHTTP2(addr string) (bool, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
		return false, err
	}
	head := make([]byte, 9)
	n, err := conn.Read(head)
	if n >= 4 && head[3] == 0x04 {
		return true, nil
	}
	if err == nil {
		err = fmt.Errorf("answered % x", head[:n])
	}
	return false, err
}
