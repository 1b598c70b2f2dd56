package kubernetes

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// TestGatewayTierApplied applies distributions/kubernetes/gateway to the
// real API server, server-side with strict field validation (as
// applyDistributions does), and reads back what issue 31 added to the
// gateway tier: the headless Service the agents resolve, the
// HorizontalPodAutoscaler, the PodDisruptionBudget, the spreading over
// nodes and the grace period, as the API server stored them.
func TestGatewayTierApplied(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	dir := filepath.Join(testenv.RepoRoot(t), "distributions", "kubernetes", "gateway")
	if out, err := c.kubectlOut("apply", "-k", dir, "--server-side", "--validate=strict", "--field-manager=kubectl"); err != nil {
		t.Fatalf("apply distributions/kubernetes/gateway: %v\n%s", err, out)
	}
	const ns, name = "nexovue-profiling", "otelcol-nexovue-gateway"
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
		{"agents' gateway address", get("daemonset", "otelcol-nexovue-agent", "-o", `jsonpath={.spec.template.spec.containers[0].env[?(@.name=="NEXOVUE_GATEWAY_ENDPOINT")].value}`),
			"dns:///" + name + "-headless." + ns + ".svc:4317"},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s from the API server: %q, want %q", ck.what, ck.got, ck.want)
		}
	}
}
