// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// podResource is an eBPF resource that k8s_attributes matched to a pod of
// namespace shop: what it adds with the shipped DaemonSet config, plus extra.
func podResource(extra map[string]any) map[string]any {
	m := ebpfResource(map[string]any{
		"container.id":       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"k8s.namespace.name": "shop",
		"k8s.pod.name":       "checkout-7d4b9c8f6-x2x9q",
		"k8s.pod.uid":        "0d8f4a52-3c1e-4b7e-9a4e-5d0e2f1b7c11",
		"k8s.container.name": "app",
		"k8s.node.name":      "node-1",
	})
	for k, v := range extra {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	return m
}

func k8sCfg(useLabels bool) *Config {
	cfg := defaultCfg()
	cfg.Kubernetes.Enabled = true
	cfg.Kubernetes.UseLabels = useLabels
	return cfg
}

func TestKubernetesNameRules(t *testing.T) {
	const (
		annName  = keyK8sAnnotationName
		annNS    = keyK8sAnnotationNS
		instance = keyK8sLabelAppInstance
		appName  = keyK8sLabelAppName
		dep      = keyK8sDeploymentName
		rs       = keyK8sReplicaSetName
		sts      = keyK8sStatefulSetName
		ds       = keyK8sDaemonSetName
		cronJob  = keyK8sCronJobName
		job      = keyK8sJobName
	)
	// Everything a pod can name a process by, for the precedence tests.
	all := map[string]any{
		annName: "from-annotation", instance: "from-instance", appName: "from-name",
		dep: "checkout", rs: "checkout-7d4b9c8f6",
	}
	without := func(keys ...string) map[string]any {
		none := map[string]any{}
		for _, k := range keys {
			none[k] = nil
		}
		return merge(all, none)
	}
	tests := []struct {
		name      string
		useLabels bool
		in        map[string]any
		wantName  string
		wantNS    string
		wantSrc   source
	}{
		{"OTEL_SERVICE_NAME wins over the pod", true,
			podResource(merge(all, map[string]any{envSvc: "env-name"})), "env-name", "shop", sourceOTelServiceName},
		{"OTEL_RESOURCE_ATTRIBUTES service.name wins over the pod, and its service.namespace over the namespace", true,
			podResource(merge(all, map[string]any{envRA: "service.name=ra-name,service.namespace=ra-ns"})), "ra-name", "ra-ns", sourceOTelResourceAttributes},
		{"annotation", true, podResource(all), "from-annotation", "shop", sourceK8sAnnotation},
		{"annotation also when labels are not used", false, podResource(all), "from-annotation", "shop", sourceK8sAnnotation},
		{"label app.kubernetes.io/instance", true, podResource(without(annName)), "from-instance", "shop", sourceK8sLabel},
		{"label app.kubernetes.io/name", true, podResource(without(annName, instance)), "from-name", "shop", sourceK8sLabel},
		{"labels not used: the Deployment", false, podResource(without(annName)), "checkout", "shop", sourceK8sWorkload},
		{"Deployment before its ReplicaSet", true, podResource(without(annName, instance, appName)), "checkout", "shop", sourceK8sWorkload},
		{"ReplicaSet without Deployment", true, podResource(map[string]any{rs: "plain-rs"}), "plain-rs", "shop", sourceK8sWorkload},
		{"StatefulSet", true, podResource(map[string]any{sts: "db"}), "db", "shop", sourceK8sWorkload},
		{"DaemonSet", true, podResource(map[string]any{ds: "node-exporter"}), "node-exporter", "shop", sourceK8sWorkload},
		{"CronJob before its Job", true, podResource(map[string]any{cronJob: "nightly", job: "nightly-29000000"}), "nightly", "shop", sourceK8sWorkload},
		{"Job", true, podResource(map[string]any{job: "migrate"}), "migrate", "shop", sourceK8sWorkload},
		{"bare pod: its name", true, podResource(nil), "checkout-7d4b9c8f6-x2x9q", "shop", sourceK8sPod},
		{"blank values are passed over", true,
			podResource(map[string]any{annName: " ", instance: "", dep: "checkout"}), "checkout", "shop", sourceK8sWorkload},
		{"annotation service.namespace", true,
			podResource(map[string]any{annNS: "payments"}), "checkout-7d4b9c8f6-x2x9q", "payments", sourceK8sPod},
		{"in no pod: unknown_service, no service.namespace", true,
			ebpfResource(nil), "unknown_service:java", "", sourceUnknownService},
		{"in no pod, even with a stray workload attribute", true,
			ebpfResource(map[string]any{dep: "checkout"}), "unknown_service:java", "", sourceUnknownService},
		{"existing service.name kept", true,
			podResource(map[string]any{"service.name": "already", dep: "checkout"}), "already", "shop", sourceExisting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, src, _ := runNamer(t, k8sCfg(tt.useLabels), tt.in)
			assert.Equal(t, tt.wantSrc, src)
			assert.Equal(t, tt.wantName, got["service.name"])
			if tt.wantNS == "" {
				assert.NotContains(t, got, "service.namespace")
			} else {
				assert.Equal(t, tt.wantNS, got["service.namespace"])
			}
			// The pod's attributes stay: they tell the container apart.
			for _, k := range []string{"k8s.namespace.name", "k8s.pod.name", "k8s.pod.uid", "k8s.container.name", "k8s.node.name"} {
				if _, in := tt.in[k]; in {
					assert.Equal(t, tt.in[k], got[k], k)
				}
			}
			assert.NotContains(t, got, envSvc)
			assert.NotContains(t, got, envRA)
		})
	}
}

// A sidecar is named like the pod's main container; its k8s.container.name
// tells it apart.
func TestKubernetesSidecarKeepsItsContainer(t *testing.T) {
	main, _, _ := runNamer(t, k8sCfg(true), podResource(map[string]any{keyK8sDeploymentName: "checkout"}))
	side, _, _ := runNamer(t, k8sCfg(true), podResource(map[string]any{keyK8sDeploymentName: "checkout", "k8s.container.name": "envoy", "process.executable.name": "envoy"}))
	assert.Equal(t, main["service.name"], side["service.name"])
	assert.Equal(t, "app", main["k8s.container.name"])
	assert.Equal(t, "envoy", side["k8s.container.name"])
}

func TestKubernetesDisabledByDefault(t *testing.T) {
	got, src, _ := runNamer(t, defaultCfg(), podResource(map[string]any{keyK8sDeploymentName: "checkout"}))
	assert.Equal(t, sourceUnknownService, src)
	assert.Equal(t, "unknown_service:java", got["service.name"])
	assert.NotContains(t, got, "service.namespace")
}

func TestKubernetesNameIsBounded(t *testing.T) {
	long := strings.Repeat("w", 300)
	got, src, _ := runNamer(t, k8sCfg(true), podResource(map[string]any{keyK8sStatefulSetName: long}))
	assert.Equal(t, sourceK8sWorkload, src)
	assert.Equal(t, long[:255], got["service.name"])
}

func merge(a, b map[string]any) map[string]any {
	m := map[string]any{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}
