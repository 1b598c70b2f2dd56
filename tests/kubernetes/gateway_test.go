package kubernetes

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// TestGatewayTierInstalled installs the chart with ci/gateway-values.yaml on
// the real API server (helm install, server-side apply) and reads back what
// issue 31 added to the gateway tier: the headless Service the agents
// resolve, the HorizontalPodAutoscaler, the PodDisruptionBudget, the
// spreading over nodes and the grace period, as the API server stored them.
func TestGatewayTierInstalled(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	installChart(t, c, "gateway")
	checkGatewayTier(t, c)
}

// TestKustomizeBasesApplied applies every base of distributions/kubernetes
// with `kubectl apply -k`, server-side with strict field validation, the
// gateway's last, and reads the gateway tier back as above.
func TestKustomizeBasesApplied(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	applyDistributions(t, c)
	if out, err := c.kubectlOut("apply", "-k", filepath.Join(testenv.RepoRoot(t), "distributions", "kubernetes", "gateway"), "--server-side", "--validate=strict", "--field-manager=kubectl"); err != nil {
		t.Fatalf("apply distributions/kubernetes/gateway: %v\n%s", err, out)
	}
	checkGatewayTier(t, c)
}

func checkGatewayTier(t *testing.T, c *cluster) {
	t.Helper()
	const ns, name = agentNamespace, "otelcol-nexovue-gateway"
	get := func(args ...string) string {
		return strings.TrimSpace(c.kubectl(t, append([]string{"-n", ns, "get"}, args...)...))
	}
	checks := []struct {
		what, got, want string
	}{
		{"headless Service clusterIP", get("service", name+"-headless", "-o", "jsonpath={.spec.clusterIP}"), "None"},
		{"HPA target", get("hpa", name, "-o", "jsonpath={.spec.scaleTargetRef.kind}/{.spec.scaleTargetRef.name}"), "Deployment/" + name},
		{"HPA replicas", get("hpa", name, "-o", "jsonpath={.spec.minReplicas}-{.spec.maxReplicas}"), "2-8"},
		{"PDB maxUnavailable", get("pdb", name, "-o", "jsonpath={.spec.maxUnavailable}"), "1"},
		{"spread over nodes", get("deployment", name, "-o", "jsonpath={.spec.template.spec.topologySpreadConstraints[0].topologyKey}"), "kubernetes.io/hostname"},
		{"grace period", get("deployment", name, "-o", "jsonpath={.spec.template.spec.terminationGracePeriodSeconds}"), "45"},
		{"agents' gateway address", get("daemonset", agentName, "-o", `jsonpath={.spec.template.spec.containers[0].env[?(@.name=="NEXOVUE_GATEWAY_ENDPOINT")].value}`),
			"dns:///" + name + "-headless." + ns + ".svc:4317"},
		{"agents' key", get("daemonset", agentName, "-o", `jsonpath={.spec.template.spec.containers[0].env[?(@.name=="NEXOVUE_KEY")].name}`), ""},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s from the API server: %q, want %q", ck.what, ck.got, ck.want)
		}
	}
}
