package kubernetes

import (
	"strings"
	"testing"
)

// checkGatewayTier reads back, from the API server, what issue 31 added to
// the gateway tier in namespace ns: the headless Service the agents
// resolve, the HorizontalPodAutoscaler, the PodDisruptionBudget, the
// spreading over nodes, the grace period, and the agents' address of it
// (and no key).
func checkGatewayTier(t *testing.T, c *cluster, ns string) {
	t.Helper()
	const name = "otelcol-nexovue-gateway"
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
