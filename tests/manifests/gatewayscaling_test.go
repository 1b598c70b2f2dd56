package manifests

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// gatewayHeadless is the Service the agents resolve to every ready replica.
const gatewayHeadless = "otelcol-nexovue-gateway-headless"

// The agents' otlp_grpc/gateway timeout: the longest a gateway holds a
// request (it answers once nexovue accepted), so what a SIGTERM'd replica
// must be given to finish.
const agentGatewayTimeoutSeconds = 30

// checkGatewayScaling asserts what issue 31 gives the gateway tier, in objs
// (the files, or what kustomize renders): a headless Service for the agents,
// an HPA that owns the replica count, a PodDisruptionBudget, spreading over
// nodes, readiness that takes a pod out within seconds, and a grace period
// that covers the requests a replica holds.
func checkGatewayScaling(t *testing.T, objs []object, dep *appsv1.Deployment, c *corev1.Container) {
	t.Helper()
	pods := labels.Set(dep.Spec.Template.Labels)
	selects := func(what string, sel map[string]string) {
		t.Helper()
		if len(sel) == 0 || !labels.SelectorFromSet(sel).Matches(pods) {
			t.Errorf("%s selector %v does not select the gateway pods %v", what, sel, pods)
		}
	}

	h := find[corev1.Service](t, objs, "", "Service", gatewayHeadless)
	if h.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("%s: clusterIP %q, want None (headless: the name resolves to every replica)", gatewayHeadless, h.Spec.ClusterIP)
	}
	if h.Spec.PublishNotReadyAddresses {
		t.Errorf("%s publishes replicas that are not ready", gatewayHeadless)
	}
	selects(gatewayHeadless, h.Spec.Selector)
	grpc := false
	for _, p := range h.Spec.Ports {
		if p.Port == gatewayOTLP && p.TargetPort.StrVal == "otlp-grpc" {
			grpc = true
		}
	}
	if !grpc {
		t.Errorf("%s does not expose the replicas' OTLP/gRPC port %d", gatewayHeadless, gatewayOTLP)
	}

	if dep.Spec.Replicas != nil {
		t.Errorf("gateway Deployment sets replicas %d: the HPA owns the count, an apply would reset it", *dep.Spec.Replicas)
	}
	hpa := find[autoscalingv2.HorizontalPodAutoscaler](t, objs, "", "HorizontalPodAutoscaler", gatewayName)
	if r := hpa.Spec.ScaleTargetRef; r.Kind != "Deployment" || r.Name != dep.Name || r.APIVersion != "apps/v1" {
		t.Errorf("HPA scales %+v, not the gateway Deployment", r)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 {
		t.Error("HPA: want at least 2 replicas for one egress point that survives a pod")
	}
	// One key's pacing is shown for 8 collectors (exporter README, "Pacing
	// in a fleet"); the README says to split keys beyond.
	if hpa.Spec.MaxReplicas > 8 || (hpa.Spec.MinReplicas != nil && hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas) {
		t.Errorf("HPA maxReplicas %d: want between minReplicas and 8 (the replicas one key is shown to serve)", hpa.Spec.MaxReplicas)
	}
	if len(hpa.Spec.Metrics) == 0 {
		t.Error("HPA has no metric")
	}
	if c.Resources.Requests.Cpu().IsZero() {
		t.Error("gateway has no CPU request: the HPA's utilization has nothing to relate to")
	}

	pdb := find[policyv1.PodDisruptionBudget](t, objs, "", "PodDisruptionBudget", gatewayName)
	if pdb.Spec.Selector == nil {
		t.Fatal("PodDisruptionBudget has no selector")
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !sel.Matches(pods) {
		t.Errorf("PodDisruptionBudget selector %v does not select the gateway pods (%v)", pdb.Spec.Selector, err)
	}
	if (pdb.Spec.MaxUnavailable == nil) == (pdb.Spec.MinAvailable == nil) {
		t.Error("PodDisruptionBudget: want one of maxUnavailable and minAvailable")
	}

	spec := dep.Spec.Template.Spec
	spread := false
	for _, tsc := range spec.TopologySpreadConstraints {
		if tsc.TopologyKey == corev1.LabelHostname && tsc.LabelSelector != nil {
			if s, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector); err == nil && s.Matches(pods) {
				spread = true
			}
		}
	}
	if !spread {
		t.Errorf("gateway: no topologySpreadConstraint over %s selecting its pods", corev1.LabelHostname)
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g < agentGatewayTimeoutSeconds+5 {
		t.Errorf("gateway terminationGracePeriodSeconds %v: want at least the agents' %d s timeout and a margin, to finish the requests it holds", g, agentGatewayTimeoutSeconds)
	}
	if p := c.ReadinessProbe; p != nil && p.PeriodSeconds*p.FailureThreshold > 10 {
		t.Errorf("gateway readiness: %d s x %d failures before a pod that shuts down leaves the endpoints; want at most 10 s", p.PeriodSeconds, p.FailureThreshold)
	}
}
