package manifests

import (
	"crypto/x509"
	"encoding/pem"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// Issue 42: mutual TLS between the agents and the gateway tier, and
// NetworkPolicies for egress. What the chart renders; tests/kubernetes
// installs it on a real API server (lookup, cert-manager's CRDs).

const (
	tlsDir          = "/etc/otelcol-nexovue/tls"
	insecureEnv     = "NEXOVUE_GATEWAY_INSECURE"
	chartTLSCA      = chartRelease + "-tls-ca"
	chartGatewayTLS = chartGateway + "-tls"
	chartAgentTLS   = chartAgent + "-tls"
)

// tlsPods returns the agents' and the gateway's pod specs.
func tlsPods(t *testing.T, objs []object) (agent, gateway *corev1.PodSpec) {
	t.Helper()
	return &find[appsv1.DaemonSet](t, objs, "", "DaemonSet", chartAgent).Spec.Template.Spec,
		&find[appsv1.Deployment](t, objs, "", "Deployment", chartGateway).Spec.Template.Spec
}

// checkTLSMount checks that the pod mounts Secret secret read-only at
// tlsDir and does not turn TLS off.
func checkTLSMount(t *testing.T, what string, spec *corev1.PodSpec, secret string) {
	t.Helper()
	c := container(t, spec)
	m := mountAt(c, tlsDir)
	if m == nil || !m.ReadOnly {
		t.Errorf("%s: mount at %s %+v, want one, read-only", what, tlsDir, m)
		return
	}
	v := volume(spec, m.Name)
	if v == nil || v.Secret == nil || v.Secret.SecretName != secret {
		t.Errorf("%s: volume %+v at %s, want Secret %s", what, v, tlsDir, secret)
	}
	if e := envVar(c, insecureEnv); e != nil {
		t.Errorf("%s: %s=%q with TLS on", what, insecureEnv, e.Value)
	}
}

// secretData returns a rendered Secret's data.
func secretData(t *testing.T, objs []object, name string) map[string][]byte {
	t.Helper()
	s := find[corev1.Secret](t, objs, "", "Secret", name)
	if s.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret %s has type %q, want %s", name, s.Type, corev1.SecretTypeTLS)
	}
	return s.Data
}

// TestChartGeneratedCertificates: with the gateway tier the chart's default
// is mutual TLS with certificates it generates: three Secrets (the CA's,
// mounted nowhere, the gateway's and the agents'), each pod mounting its
// own; the certificates are valid for it (parsed, verified and used in a
// handshake); a new rendering (new certificates) changes no pod template,
// so a renewal restarts nothing.
func TestChartGeneratedCertificates(t *testing.T) {
	set := chartSet(t, "gateway")
	objs := chartObjects(t, set)
	agent, gateway := tlsPods(t, objs)
	checkTLSMount(t, "agent", agent, chartAgentTLS)
	checkTLSMount(t, "gateway", gateway, chartGatewayTLS)
	for _, spec := range []*corev1.PodSpec{agent, gateway} {
		for _, v := range spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == chartTLSCA {
				t.Errorf("a pod mounts the CA's Secret %s (its key signs every certificate)", chartTLSCA)
			}
		}
	}
	ca := testenv.CheckChartTLS(t, testenv.ChartTLS{Gateway: secretData(t, objs, chartGatewayTLS), Agent: secretData(t, objs, chartAgentTLS)},
		testenv.GatewayDNSNames(chartRelease, chartNamespace), 365*24*time.Hour)
	// Each leaf's Secret records when it expires, which an upgrade reads to
	// renew it in time.
	for _, name := range []string{chartGatewayTLS, chartAgentTLS} {
		s := find[corev1.Secret](t, objs, "", "Secret", name)
		at, err := time.Parse(time.RFC3339, s.Annotations["otelcol-nexovue/not-after"])
		b, _ := pem.Decode(s.Data["tls.crt"])
		if err != nil || b == nil {
			t.Fatalf("Secret %s: annotation otelcol-nexovue/not-after %q (%v), certificate %v", name, s.Annotations["otelcol-nexovue/not-after"], err, b != nil)
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if d := at.Sub(cert.NotAfter); d < -time.Minute || d > time.Minute {
			t.Errorf("Secret %s: otelcol-nexovue/not-after %v, its certificate expires %v", name, at, cert.NotAfter)
		}
	}
	caSecret := secretData(t, objs, chartTLSCA)
	if got := string(caSecret["tls.crt"]); got != string(secretData(t, objs, chartAgentTLS)["ca.crt"]) {
		t.Error("Secret " + chartTLSCA + " does not hold the CA of the agents' and the gateway's ca.crt")
	}
	if v := ca.NotAfter.Sub(ca.NotBefore); v < 3649*24*time.Hour || v > 3651*24*time.Hour {
		t.Errorf("the CA is valid %v, want 3650 days", v)
	}

	// Another rendering makes other certificates: the pod templates (and
	// so their checksum annotations) stay the same.
	again := chartObjects(t, set)
	if string(secretData(t, again, chartAgentTLS)["tls.crt"]) == string(secretData(t, objs, chartAgentTLS)["tls.crt"]) {
		t.Fatal("two renderings gave the same agent certificate: is it generated?")
	}
	agent2, gateway2 := tlsPods(t, again)
	for what, pair := range map[string][2]*corev1.PodSpec{"agent": {agent, agent2}, "gateway": {gateway, gateway2}} {
		a, _ := yaml.Marshal(pair[0])
		b, _ := yaml.Marshal(pair[1])
		if string(a) != string(b) {
			t.Errorf("new certificates changed the %s's pod template: a renewal would restart the pods", what)
		}
	}
	a1 := find[appsv1.DaemonSet](t, objs, "", "DaemonSet", chartAgent).Spec.Template.Annotations
	a2 := find[appsv1.DaemonSet](t, again, "", "DaemonSet", chartAgent).Spec.Template.Annotations
	g1 := find[appsv1.Deployment](t, objs, "", "Deployment", chartGateway).Spec.Template.Annotations
	g2 := find[appsv1.Deployment](t, again, "", "Deployment", chartGateway).Spec.Template.Annotations
	if !maps.Equal(a1, a2) || !maps.Equal(g1, g2) {
		t.Errorf("new certificates changed the pods' annotations: agent %v then %v, gateway %v then %v", a1, a2, g1, g2)
	}

	// Without the gateway tier there is nothing to encrypt: no Secret, no
	// mount.
	for _, o := range chartObjects(t, chartSet(t, "default")) {
		if o.Kind == "Secret" && (strings.HasSuffix(o.Name, "-tls") || o.Name == chartTLSCA) {
			t.Errorf("without the gateway tier the chart renders Secret %s", o.Name)
		}
	}
}

// TestChartTLSOff: tls.enabled=false sets NEXOVUE_GATEWAY_INSECURE=true in
// the agents and the gateway, and renders no certificate.
func TestChartTLSOff(t *testing.T) {
	objs := chartObjects(t, chartSet(t, "gateway"), "--set", "tls.enabled=false")
	agent, gateway := tlsPods(t, objs)
	for what, spec := range map[string]*corev1.PodSpec{"agent": agent, "gateway": gateway} {
		c := container(t, spec)
		if e := envVar(c, insecureEnv); e == nil || e.Value != "true" {
			t.Errorf("%s with tls.enabled=false: %s %+v, want true", what, insecureEnv, e)
		}
		if m := mountAt(c, tlsDir); m != nil {
			t.Errorf("%s with tls.enabled=false mounts %s", what, tlsDir)
		}
	}
	for _, o := range objs {
		if o.Kind == "Secret" {
			t.Errorf("tls.enabled=false renders Secret %s", o.Name)
		}
	}
}

// TestChartTLSExistingSecrets: with tls.existingSecrets the pods mount the
// user's Secrets and the chart makes none; one without the other fails,
// naming the value.
func TestChartTLSExistingSecrets(t *testing.T) {
	objs := chartObjects(t, chartSet(t, "gateway"), "--set", "tls.existingSecrets.gateway=corp-gateway-tls", "--set", "tls.existingSecrets.agent=corp-agent-tls")
	agent, gateway := tlsPods(t, objs)
	checkTLSMount(t, "agent", agent, "corp-agent-tls")
	checkTLSMount(t, "gateway", gateway, "corp-gateway-tls")
	for _, o := range objs {
		if o.Kind == "Secret" {
			t.Errorf("with tls.existingSecrets the chart renders Secret %s", o.Name)
		}
	}
	_, errs, err := testenv.RunHelm(t, nil, "template", chartRelease, testenv.Chart, "--kube-version", testenv.KubeVersion,
		"-f", chartSet(t, "gateway").File, "--set", "tls.existingSecrets.gateway=corp-gateway-tls")
	if err == nil || !strings.Contains(errs, "tls.existingSecrets: set both gateway and agent") {
		t.Errorf("tls.existingSecrets.gateway alone: want an error naming tls.existingSecrets, got %v\n%s", err, errs)
	}
}

// certManagerObjects renders the gateway set with cert-manager and returns
// its cert-manager objects by kind/name (read generically: the strict
// decoder knows no cert-manager kind; tests/kubernetes has the API server
// validate them against cert-manager's CRDs).
func certManagerObjects(t *testing.T, extra ...string) (map[string]map[string]any, []object) {
	t.Helper()
	out := renderSet(t, chartSet(t, "gateway"), append([]string{"--set", "tls.certManager.enabled=true"}, extra...)...)
	cm := map[string]map[string]any{}
	var rest []string
	for _, doc := range docSeparator.Split(out, -1) {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		if v, _ := o["apiVersion"].(string); v == "cert-manager.io/v1" {
			cm[o["kind"].(string)+"/"+get(o, "metadata", "name").(string)] = o
			continue
		}
		rest = append(rest, doc)
	}
	objs, err := decodeDocuments("helm template with cert-manager", []byte(strings.Join(rest, "\n---\n")))
	if err != nil {
		t.Fatal(err)
	}
	return cm, objs
}

// TestChartTLSCertManager: with tls.certManager.enabled the chart renders
// a self-signed Issuer, the CA's Certificate and its Issuer, and the
// gateway's (serverAuth, every Service name) and agents' (clientAuth)
// Certificates into the Secrets the pods mount; no Secret of its own. With
// a user's issuerRef, only the two Certificates, issued by it.
func TestChartTLSCertManager(t *testing.T) {
	cm, objs := certManagerObjects(t)
	agent, gateway := tlsPods(t, objs)
	checkTLSMount(t, "agent", agent, chartAgentTLS)
	checkTLSMount(t, "gateway", gateway, chartGatewayTLS)
	for _, o := range objs {
		if o.Kind == "Secret" {
			t.Errorf("with cert-manager the chart renders Secret %s", o.Name)
		}
	}
	want := []string{"Certificate/" + chartAgent, "Certificate/" + chartGateway, "Certificate/" + chartTLSCA, "Issuer/" + chartRelease + "-ca", "Issuer/" + chartRelease + "-selfsigned"}
	var got []string
	for k := range cm {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("cert-manager objects %v, want %v", got, want)
	}
	if get(cm["Issuer/"+chartRelease+"-selfsigned"], "spec", "selfSigned") == nil ||
		get(cm["Certificate/"+chartTLSCA], "spec", "isCA") != true ||
		get(cm["Certificate/"+chartTLSCA], "spec", "issuerRef", "name") != chartRelease+"-selfsigned" ||
		get(cm["Issuer/"+chartRelease+"-ca"], "spec", "ca", "secretName") != chartTLSCA {
		t.Errorf("the CA chain: self-signed Issuer -> CA Certificate %s -> CA Issuer: %v", chartTLSCA, cm)
	}
	gw, ag := cm["Certificate/"+chartGateway], cm["Certificate/"+chartAgent]
	dns, _ := get(gw, "spec", "dnsNames").([]any)
	var names []string
	for _, n := range dns {
		names = append(names, n.(string))
	}
	if !slices.Equal(names, testenv.GatewayDNSNames(chartRelease, chartNamespace)) {
		t.Errorf("the gateway Certificate's dnsNames %v, want %v", names, testenv.GatewayDNSNames(chartRelease, chartNamespace))
	}
	for _, c := range []struct {
		cert        map[string]any
		secret, use string
	}{{gw, chartGatewayTLS, "server auth"}, {ag, chartAgentTLS, "client auth"}} {
		usages, _ := get(c.cert, "spec", "usages").([]any)
		if get(c.cert, "spec", "secretName") != c.secret || !slices.Contains(usages, any(c.use)) ||
			get(c.cert, "spec", "issuerRef", "name") != chartRelease+"-ca" {
			t.Errorf("Certificate %v: want Secret %s, usage %q, issued by %s-ca", get(c.cert, "spec"), c.secret, c.use, chartRelease)
		}
	}

	cm, _ = certManagerObjects(t, "--set", "tls.certManager.issuerRef.name=corp-ca", "--set", "tls.certManager.issuerRef.kind=ClusterIssuer")
	if len(cm) != 2 || cm["Certificate/"+chartGateway] == nil || cm["Certificate/"+chartAgent] == nil {
		t.Fatalf("with a user's issuerRef: %d cert-manager objects, want the gateway's and the agents' Certificates only", len(cm))
	}
	for _, c := range cm {
		if get(c, "spec", "issuerRef", "name") != "corp-ca" || get(c, "spec", "issuerRef", "kind") != "ClusterIssuer" {
			t.Errorf("Certificate %s issuerRef %v, want ClusterIssuer corp-ca", get(c, "metadata", "name"), get(c, "spec", "issuerRef"))
		}
	}
}

// peer is a destination (or source) of traffic as a NetworkPolicy sees it.
type peer struct {
	ip        string            // when not a pod of the namespace
	podLabels map[string]string // a pod of the policy's namespace
	port      int
	protocol  corev1.Protocol
}

// egressAllows evaluates a policy's egress rules for p (the semantics of
// NetworkPolicy: any rule matching both a port and a peer; no ports or no
// peers in a rule match all; pods are in the policy's namespace here).
func egressAllows(t *testing.T, np *networkingv1.NetworkPolicy, p peer) bool {
	t.Helper()
	for _, r := range np.Spec.Egress {
		if portsMatch(r.Ports, p) && peersMatch(t, r.To, p) {
			return true
		}
	}
	return false
}

func portsMatch(ports []networkingv1.NetworkPolicyPort, p peer) bool {
	if len(ports) == 0 {
		return true
	}
	for _, pp := range ports {
		proto := corev1.ProtocolTCP
		if pp.Protocol != nil {
			proto = *pp.Protocol
		}
		if proto == p.protocol && (pp.Port == nil || pp.Port.IntValue() == p.port) {
			return true
		}
	}
	return false
}

func peersMatch(t *testing.T, peers []networkingv1.NetworkPolicyPeer, p peer) bool {
	t.Helper()
	if len(peers) == 0 {
		return true
	}
	for _, pe := range peers {
		switch {
		case pe.IPBlock != nil && p.ip != "":
			prefix, err := netip.ParsePrefix(pe.IPBlock.CIDR)
			if err != nil {
				t.Fatalf("ipBlock %q: %v", pe.IPBlock.CIDR, err)
			}
			if prefix.Contains(netip.MustParseAddr(p.ip)) {
				return true
			}
		case pe.PodSelector != nil && pe.NamespaceSelector == nil && p.podLabels != nil:
			sel, err := metav1.LabelSelectorAsSelector(pe.PodSelector)
			if err != nil {
				t.Fatal(err)
			}
			if sel.Matches(labels.Set(p.podLabels)) {
				return true
			}
		}
	}
	return false
}

// TestChartNetworkPolicyEgress: what the agents and the gateway may reach,
// evaluated over the rendered policies: the agents only the gateway's OTLP
// port (with the tier) or nexovue (without), DNS, the API server and the
// debuginfod servers; the gateway only nexovue and DNS; metrics only from
// the monitoring namespace.
func TestChartNetworkPolicyEgress(t *testing.T) {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	gatewayPod := map[string]string{"app.kubernetes.io/name": "otelcol-nexovue", "app.kubernetes.io/instance": chartRelease, "app.kubernetes.io/component": "gateway"}
	otherPod := map[string]string{"app": "payments"}
	const apiServer, elsewhere = "10.20.0.1", "203.0.113.7"
	for _, tc := range []struct {
		name    string
		set     string
		extra   []string
		policy  string
		allowed []peer
		denied  []peer
	}{
		{"agent to the gateway", "gateway", []string{"--set", "networkPolicy.apiServer.cidrs[0]=" + apiServer + "/32"}, chartAgent,
			[]peer{{podLabels: gatewayPod, port: 4317, protocol: tcp}, {ip: "10.96.0.10", port: 53, protocol: udp}, {ip: "10.96.0.10", port: 53, protocol: tcp},
				{ip: apiServer, port: 6443, protocol: tcp}, {ip: apiServer, port: 443, protocol: tcp}},
			[]peer{{podLabels: gatewayPod, port: 4318, protocol: tcp}, {podLabels: otherPod, port: 4317, protocol: tcp}, {ip: elsewhere, port: 443, protocol: tcp},
				{ip: apiServer, port: 80, protocol: tcp}, {ip: elsewhere, port: 4317, protocol: tcp}}},
		{"agent to nexovue", "default", []string{"--set", "networkPolicy.enabled=true", "--set", "networkPolicy.apiServer.cidrs[0]=" + apiServer + "/32",
			"--set", "networkPolicy.nexovueCIDRs[0]=198.51.100.0/24"}, chartAgent,
			[]peer{{ip: "198.51.100.9", port: 443, protocol: tcp}, {ip: apiServer, port: 6443, protocol: tcp}, {ip: "10.96.0.10", port: 53, protocol: udp}},
			[]peer{{ip: elsewhere, port: 443, protocol: tcp}, {ip: "198.51.100.9", port: 80, protocol: tcp}, {podLabels: gatewayPod, port: 4317, protocol: tcp}}},
		{"agent with debuginfod", "default", []string{"--set", "networkPolicy.enabled=true", "--set", "networkPolicy.apiServer.cidrs[0]=" + apiServer + "/32",
			"--set", "networkPolicy.nexovueCIDRs[0]=198.51.100.0/24", "--set", "networkPolicy.debuginfodCIDRs[0]=192.0.2.0/24",
			"--set", "agent.debuginfodURLs[0]=http://debuginfod.internal:8002", "--set", "agent.debuginfodURLs[1]=https://debuginfod.elfutils.org/"}, chartAgent,
			[]peer{{ip: "192.0.2.5", port: 8002, protocol: tcp}, {ip: "192.0.2.5", port: 443, protocol: tcp}},
			[]peer{{ip: elsewhere, port: 8002, protocol: tcp}, {ip: "192.0.2.5", port: 80, protocol: tcp}}},
		{"agent, API server unknown (helm template, the bases)", "gateway", nil, chartAgent,
			[]peer{{ip: elsewhere, port: 443, protocol: tcp}, {ip: elsewhere, port: 6443, protocol: tcp}},
			[]peer{{ip: elsewhere, port: 80, protocol: tcp}, {ip: elsewhere, port: 8443, protocol: tcp}}},
		{"gateway", "gateway", []string{"--set", "networkPolicy.nexovueCIDRs[0]=198.51.100.0/24", "--set", "nexovue.endpoint=https://ingest.example:8443"}, chartGateway,
			[]peer{{ip: "198.51.100.9", port: 8443, protocol: tcp}, {ip: "10.96.0.10", port: 53, protocol: udp}, {ip: "10.96.0.10", port: 53, protocol: tcp}},
			[]peer{{ip: "198.51.100.9", port: 443, protocol: tcp}, {ip: elsewhere, port: 8443, protocol: tcp}, {ip: apiServer, port: 6443, protocol: tcp},
				{podLabels: otherPod, port: 4317, protocol: tcp}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := find[networkingv1.NetworkPolicy](t, chartObjects(t, chartSet(t, tc.set), tc.extra...), "", "NetworkPolicy", tc.policy)
			if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
				t.Fatalf("policy types %v: no Egress, so everything is allowed", np.Spec.PolicyTypes)
			}
			for _, p := range tc.allowed {
				if !egressAllows(t, np, p) {
					t.Errorf("%s may not reach %+v", tc.policy, p)
				}
			}
			for _, p := range tc.denied {
				if egressAllows(t, np, p) {
					t.Errorf("%s may reach %+v", tc.policy, p)
				}
			}
		})
	}

	// Metrics only from the monitoring namespace, for both; without it
	// (and without metricsFrom) from anyone.
	objs := chartObjects(t, chartSet(t, "gateway"))
	for _, name := range []string{chartAgent, chartGateway} {
		np := find[networkingv1.NetworkPolicy](t, objs, "", "NetworkPolicy", name)
		var metrics *networkingv1.NetworkPolicyIngressRule
		for i, r := range np.Spec.Ingress {
			if portsMatch(r.Ports, peer{port: 8888, protocol: tcp}) {
				metrics = &np.Spec.Ingress[i]
			}
		}
		if metrics == nil || len(metrics.From) != 1 || metrics.From[0].NamespaceSelector == nil ||
			metrics.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" || metrics.From[0].PodSelector != nil {
			t.Errorf("%s: metrics ingress %+v, want only from namespace monitoring", name, metrics)
		}
	}
	np := find[networkingv1.NetworkPolicy](t, chartObjects(t, chartSet(t, "gateway"), "--set", "networkPolicy.monitoringNamespace="), "", "NetworkPolicy", chartGateway)
	if r := np.Spec.Ingress[1]; len(r.From) != 0 {
		t.Errorf("without monitoringNamespace and metricsFrom the metrics rule admits only %+v, want anyone", r.From)
	}
}

// TestBasesTLSAndNetworkPolicies: the kustomize bases hold no key or
// certificate (the gateway base mounts Secrets the user makes with
// create-tls-secrets.sh, which tests/kubernetes runs), and each has its
// NetworkPolicies with egress rules.
func TestBasesTLSAndNetworkPolicies(t *testing.T) {
	root := repoPath(t, "distributions", "kubernetes")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data := string(mustRead(t, p))
		// PEM, as text or base64 ("-----BEGIN" is "LS0tLS1CRUdJTi").
		if strings.Contains(data, "-----BEGIN") || strings.Contains(data, "LS0tLS1CRUdJTi") {
			t.Errorf("%s holds a PEM block (a key or certificate): a base must not", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{"agent", "gateway", "least-privilege", "agent-multi-key"} {
		t.Run(base, func(t *testing.T) {
			objs := kustomize(t, "distributions/kubernetes/"+base)
			policies := []string{agentName}
			if base == "gateway" {
				policies = append(policies, gatewayName)
			}
			for _, name := range policies {
				np := find[networkingv1.NetworkPolicy](t, objs, "", "NetworkPolicy", name)
				if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || len(np.Spec.Egress) == 0 {
					t.Errorf("NetworkPolicy %s: no egress rules (%v)", name, np.Spec.PolicyTypes)
				}
			}
			if base != "gateway" {
				return
			}
			checkTLSMount(t, "agent", &find[appsv1.DaemonSet](t, objs, "", "DaemonSet", agentName).Spec.Template.Spec, "otelcol-nexovue-agent-tls")
			checkTLSMount(t, "gateway", &find[appsv1.Deployment](t, objs, "", "Deployment", gatewayName).Spec.Template.Spec, "otelcol-nexovue-gateway-tls")
		})
	}
}
