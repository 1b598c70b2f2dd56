// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// Issue 42 on the real API server: the chart's generated certificates kept
// across upgrades (Helm's lookup has a cluster only here), its cert-manager
// objects validated by cert-manager's own CRDs, the NetworkPolicies' API
// server egress read from the cluster, and the gateway base's Secrets as
// create-tls-secrets.sh makes them.

const (
	chartGatewayTLS = "otelcol-nexovue-gateway-tls"
	chartAgentTLS   = "otelcol-nexovue-agent-tls"
	chartTLSCA      = "otelcol-nexovue-tls-ca"
	// certManagerModule holds cert-manager's CRDs (deploy/crds), fetched
	// from the module proxy as a Go module (a few MB, then in the module
	// cache).
	certManagerModule = "github.com/cert-manager/cert-manager@v1.16.2"
	// certManagerSum is its go.sum hash: the CRDs are the ones checked in.
	certManagerSum = "h1:c9UU2E+8XWGruyvC/mdpc1wuLddtgmNr8foKdP7a8Jg="
)

// secretData reads a Secret's data from the API server.
func (c *cluster) secretData(t *testing.T, ns, name string) map[string][]byte {
	t.Helper()
	var s struct {
		Data map[string][]byte `json:"data"`
	}
	if err := json.Unmarshal([]byte(c.kubectl(t, "-n", ns, "get", "secret", name, "-o", "json")), &s); err != nil {
		t.Fatal(err)
	}
	return s.Data
}

func (c *cluster) chartTLS(t *testing.T, ns string) testenv.ChartTLS {
	t.Helper()
	return testenv.ChartTLS{Gateway: c.secretData(t, ns, chartGatewayTLS), Agent: c.secretData(t, ns, chartAgentTLS)}
}

// checkGeneratedTLSKept: the gateway values set, installed, has the
// chart's generated certificates in its Secrets (valid, as
// testenv.CheckChartTLS checks); an upgrade keeps them byte for byte; a
// deleted leaf Secret is made anew, signed by the kept CA; a deleted CA
// Secret makes all three anew; leaves due for renewal are made anew from
// the kept CA.
func checkGeneratedTLSKept(t *testing.T, c *cluster) {
	t.Helper()
	names := testenv.GatewayDNSNames(chartRelease, chartNamespace)
	upgrade := func() {
		c.helm(t, "upgrade", chartRelease, testenv.Chart, "--namespace", chartNamespace, "--reuse-values")
	}
	start := time.Now()
	defer func() {
		t.Logf("generated certificates kept, renewed, made anew: %v", time.Since(start).Round(time.Millisecond))
	}()
	s0, ca0 := c.chartTLS(t, chartNamespace), c.secretData(t, chartNamespace, chartTLSCA)
	testenv.CheckChartTLS(t, s0, names, 365*24*time.Hour)

	upgrade()
	s1 := c.chartTLS(t, chartNamespace)
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if !bytes.Equal(s0.Gateway[k], s1.Gateway[k]) || !bytes.Equal(s0.Agent[k], s1.Agent[k]) {
			t.Errorf("helm upgrade changed the generated %s: the certificates must be kept", k)
		}
	}

	c.kubectl(t, "-n", chartNamespace, "delete", "secret", chartAgentTLS)
	upgrade()
	s2 := c.chartTLS(t, chartNamespace)
	if bytes.Equal(s2.Agent["tls.crt"], s0.Agent["tls.crt"]) || !bytes.Equal(s2.Agent["ca.crt"], s0.Agent["ca.crt"]) ||
		!bytes.Equal(s2.Gateway["tls.crt"], s0.Gateway["tls.crt"]) {
		t.Error("after the agents' Secret was deleted, helm upgrade did not make a new agent certificate from the kept CA (or changed the gateway's)")
	}
	testenv.CheckChartTLS(t, s2, names, 365*24*time.Hour)

	c.kubectl(t, "-n", chartNamespace, "delete", "secret", chartTLSCA)
	upgrade()
	s3 := c.chartTLS(t, chartNamespace)
	if bytes.Equal(c.secretData(t, chartNamespace, chartTLSCA)["tls.crt"], ca0["tls.crt"]) ||
		bytes.Equal(s3.Gateway["tls.crt"], s0.Gateway["tls.crt"]) || bytes.Equal(s3.Agent["tls.crt"], s2.Agent["tls.crt"]) {
		t.Error("after the CA's Secret was deleted, helm upgrade did not make a new CA and new certificates")
	}
	testenv.CheckChartTLS(t, s3, names, 365*24*time.Hour)

	// Due for renewal (expiring within renewBeforeDays, here at once): an
	// upgrade makes new leaf certificates from the kept CA.
	c.helm(t, "upgrade", chartRelease, testenv.Chart, "--namespace", chartNamespace, "--reuse-values", "--set", "tls.generated.renewBeforeDays=400")
	s4 := c.chartTLS(t, chartNamespace)
	if bytes.Equal(s4.Gateway["tls.crt"], s3.Gateway["tls.crt"]) || bytes.Equal(s4.Agent["tls.crt"], s3.Agent["tls.crt"]) ||
		!bytes.Equal(s4.Agent["ca.crt"], s3.Agent["ca.crt"]) {
		t.Error("with the certificates due for renewal (renewBeforeDays 400 > their 365 days), helm upgrade did not make new ones from the kept CA")
	}
	testenv.CheckChartTLS(t, s4, names, 365*24*time.Hour)
}

// apiServerSlice is the EndpointSlice default/kubernetes a control plane
// keeps for its API servers, which the chart's NetworkPolicy looks up. The
// test API server advertises 127.0.0.1, which it cannot publish there
// (loopback addresses are refused in endpoints), so the test writes the
// slice a cluster's API server at 192.0.2.10:6443 would have (an address
// nothing dials: only the policy reads it).
const apiServerSlice = `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kubernetes
  namespace: default
  labels: {kubernetes.io/service-name: kubernetes}
addressType: IPv4
endpoints:
  - addresses: [192.0.2.10]
    conditions: {ready: true}
ports:
  - {name: https, port: 6443, protocol: TCP}
`

// checkAPIServerEgress: the agents' NetworkPolicy, as installed, lets them
// reach the API server at the addresses and port of the EndpointSlice
// default/kubernetes, which the chart looked up.
func checkAPIServerEgress(t *testing.T, c *cluster, ns string) {
	t.Helper()
	var slice struct {
		Endpoints []struct {
			Addresses []string `json:"addresses"`
		} `json:"endpoints"`
		Ports []struct {
			Port int `json:"port"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(c.kubectl(t, "-n", "default", "get", "endpointslice", "kubernetes", "-o", "json")), &slice); err != nil {
		t.Fatal(err)
	}
	if len(slice.Endpoints) == 0 || len(slice.Endpoints[0].Addresses) == 0 || len(slice.Ports) == 0 {
		t.Fatalf("the EndpointSlice default/kubernetes lists no address or port: %+v", slice)
	}
	want := map[string]any{
		"to":    []any{map[string]any{"ipBlock": map[string]any{"cidr": slice.Endpoints[0].Addresses[0] + "/32"}}},
		"ports": []any{map[string]any{"port": float64(slice.Ports[0].Port), "protocol": "TCP"}},
	}
	var np struct {
		Spec struct {
			Egress []map[string]any `json:"egress"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(c.kubectl(t, "-n", ns, "get", "networkpolicy", agentName, "-o", "json")), &np); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	if !slices.ContainsFunc(np.Spec.Egress, func(r map[string]any) bool {
		got, _ := json.Marshal(r)
		return bytes.Equal(got, wantJSON)
	}) {
		t.Errorf("the agents' NetworkPolicy egress %v has no rule %s (the API server's EndpointSlice)", np.Spec.Egress, wantJSON)
	}
}

// certManagerCRDs returns cert-manager's CRDs of Certificate,
// CertificateRequest, Issuer and ClusterIssuer from its module (go mod
// download: the module proxy, then the module cache), without their
// metadata's labels and annotations, which are Helm template text there
// (the schemas are untouched).
func certManagerCRDs(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", certManagerModule)
	cmd.Dir = t.TempDir() // outside any module
	out, err := cmd.Output()
	var mod struct{ Dir, Sum, Error string }
	if jerr := json.Unmarshal(out, &mod); err != nil || jerr != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s (cert-manager's CRDs for the test API server): %v %v %s", certManagerModule, err, jerr, out)
	}
	if mod.Sum != certManagerSum {
		t.Fatalf("go mod download %s: hash %s, want %s", certManagerModule, mod.Sum, certManagerSum)
	}
	var docs []string
	for _, kind := range []string{"certificates", "certificaterequests", "issuers", "clusterissuers"} {
		data, err := os.ReadFile(filepath.Join(mod.Dir, "deploy", "crds", "crd-"+kind+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s CRD: %v", kind, err)
		}
		meta, _ := crd["metadata"].(map[string]any)
		delete(meta, "labels")
		delete(meta, "annotations")
		y, err := yaml.Marshal(crd)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(y))
	}
	return strings.Join(docs, "---\n")
}

// checkCertManager installs cert-manager's CRDs, then the gateway values
// set with tls.certManager.enabled (Helm v4 applies server-side with
// strict field validation: the CRDs' schemas judge every field), and the
// Certificates for a user's ClusterIssuer as a server-side dry run. A
// Certificate with a misspelt field is refused: the schemas are in force.
func checkCertManager(t *testing.T, c *cluster) {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("cert-manager: CRDs, install, dry run: %v", time.Since(start).Round(time.Millisecond)) }()
	crds := certManagerCRDs(t)
	t.Logf("cert-manager's CRDs from %s: %v", certManagerModule, time.Since(start).Round(time.Millisecond))
	c.apply(t, crds)
	c.kubectl(t, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/certificates.cert-manager.io", "crd/issuers.cert-manager.io", "crd/clusterissuers.cert-manager.io", "crd/certificaterequests.cert-manager.io")

	set := filepath.Join(testenv.RepoRoot(t), testenv.Chart, "ci", "gateway-values.yaml")
	c.helm(t, "install", chartRelease, testenv.Chart, "--namespace", chartNamespace, "-f", set, "--set", "tls.certManager.enabled=true")
	manifest := c.releaseObjects(t)
	got := c.present(t, manifest)
	for _, want := range []string{"certificate.cert-manager.io/" + chartRelease + "-gateway", "certificate.cert-manager.io/" + chartAgent,
		"certificate.cert-manager.io/" + chartTLSCA, "issuer.cert-manager.io/" + chartRelease + "-ca", "issuer.cert-manager.io/" + chartRelease + "-selfsigned"} {
		if !slices.Contains(got, want) {
			t.Errorf("after helm install with cert-manager the API server lacks %s: %v", want, got)
		}
	}
	if n := strings.Count(manifest, "\nkind: "); len(got) != n {
		t.Errorf("the API server holds %d of the release's %d objects: %v", len(got), n, got)
	}
	uninstallLeavesNothing(t, c)

	userIssuer := testenv.RenderChart(t, chartRelease, chartNamespace, "-f", set, "--set", "tls.certManager.enabled=true",
		"--set", "tls.certManager.issuerRef.name=corp-ca", "--set", "tls.certManager.issuerRef.kind=ClusterIssuer")
	if out, err := c.kubectlIn(userIssuer, "apply", "--server-side", "--dry-run=server", "--validate=strict", "--field-manager=test", "-f", "-"); err != nil {
		t.Errorf("the chart with a user's ClusterIssuer, server-side dry run: %v\n%s", err, out)
	}
	misspelt := `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: misspelt, namespace: ` + chartNamespace + `}
spec: {secretName: x, dnsName: [x], issuerRef: {name: corp-ca}}
`
	if _, err := c.kubectlIn(misspelt, "apply", "--server-side", "--dry-run=server", "--validate=strict", "--field-manager=test", "-f", "-"); err == nil ||
		!strings.Contains(err.Error(), "dnsName") {
		t.Errorf("a Certificate with spec.dnsName (misspelt): want a strict validation error naming it, got %v", err)
	}
}

// checkNetworkPolicyRules: the NetworkPolicies with every kind of rule
// the chart renders (the API server's CIDRs in IPv4 and IPv6, debuginfod
// ports from URLs, extra ingress and egress rules, the view's port), as a
// server-side dry run with strict field validation.
func checkNetworkPolicyRules(t *testing.T, c *cluster) {
	t.Helper()
	out := testenv.RenderChart(t, chartRelease, chartNamespace, "-f", filepath.Join(testenv.RepoRoot(t), testenv.Chart, "ci", "gateway-values.yaml"),
		"--set", "networkPolicy.apiServer.cidrs={192.0.2.10/32,2001:db8::10/128}", "--set", "networkPolicy.apiServer.ports={6443}",
		"--set", "agent.debuginfodURLs={https://debuginfod.example,http://debuginfod.internal:8002}",
		"--set", "agent.view.enabled=true",
		"--set-json", `networkPolicy.extraEgressRules=[{"to":[{"ipBlock":{"cidr":"198.51.100.0/24"}}],"ports":[{"port":3128}]}]`,
		"--set-json", `networkPolicy.extraIngressRules=[{"ports":[{"port":9999}]}]`)
	var policies []string
	for _, doc := range strings.Split(out, "\n---") {
		if strings.Contains(doc, "\nkind: NetworkPolicy\n") {
			policies = append(policies, doc)
		}
	}
	if len(policies) != 2 {
		t.Fatalf("rendered %d NetworkPolicies, want the agents' and the gateway's", len(policies))
	}
	if res, err := c.kubectlIn(strings.Join(policies, "\n---"), "apply", "--server-side", "--dry-run=server", "--validate=strict", "--field-manager=test", "-f", "-"); err != nil {
		t.Errorf("the NetworkPolicies with every kind of rule, server-side dry run: %v\n%s", err, res)
	}
}

// checkBaseTLSSecrets runs the gateway base's create-tls-secrets.sh as its
// kustomization.yaml says, against the API server, and checks the
// Secrets it made as the chart's (names, key usages, a handshake).
func checkBaseTLSSecrets(t *testing.T, c *cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	defer func() {
		t.Logf("create-tls-secrets.sh and its certificates checked: %v", time.Since(start).Round(time.Millisecond))
	}()
	script := filepath.Join(testenv.RepoRoot(t), "distributions", "kubernetes", "gateway", "create-tls-secrets.sh")
	cmd := exec.CommandContext(ctx, script, agentNamespace)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", script, agentNamespace, err, out)
	}
	testenv.CheckChartTLS(t, c.chartTLS(t, agentNamespace), testenv.GatewayDNSNames(chartRelease, agentNamespace), 365*24*time.Hour)
	for _, s := range []string{chartGatewayTLS, chartAgentTLS} {
		if typ := c.kubectl(t, "-n", agentNamespace, "get", "secret", s, "-o", "jsonpath={.type}"); typ != "kubernetes.io/tls" {
			t.Errorf("Secret %s has type %q, want kubernetes.io/tls", s, typ)
		}
	}
}
