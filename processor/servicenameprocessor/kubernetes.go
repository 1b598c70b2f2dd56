// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor // import "github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The attributes k8s_attributes adds that the Kubernetes rules read. The
// workload and pod keys are k8s_attributes' own; the annotation and label
// keys are the semantic conventions' k8s.pod.annotation.<key> and
// k8s.pod.label.<key>, which the shipped DaemonSet config names as the
// tag_name of its annotations and labels extraction rules.
const (
	keyServiceNamespace = "service.namespace"
	keyK8sPodName       = "k8s.pod.name"
	keyK8sNamespace     = "k8s.namespace.name"

	k8sAnnotationPrefix    = "k8s.pod.annotation.resource.opentelemetry.io/"
	keyK8sAnnotationName   = k8sAnnotationPrefix + "service.name"
	keyK8sAnnotationNS     = k8sAnnotationPrefix + "service.namespace"
	keyK8sLabelAppInstance = "k8s.pod.label.app.kubernetes.io/instance"
	keyK8sLabelAppName     = "k8s.pod.label.app.kubernetes.io/name"
	keyK8sDeploymentName   = "k8s.deployment.name"
	keyK8sReplicaSetName   = "k8s.replicaset.name"
	keyK8sStatefulSetName  = "k8s.statefulset.name"
	keyK8sDaemonSetName    = "k8s.daemonset.name"
	keyK8sCronJobName      = "k8s.cronjob.name"
	keyK8sJobName          = "k8s.job.name"
)

// k8sWorkloadKeys are the owning workloads, in the semantic conventions'
// order: a Deployment before the ReplicaSet it owns (k8s_attributes derives
// it from the ReplicaSet's name and the pod-template-hash label), a CronJob
// before the Job it started.
var k8sWorkloadKeys = [...]string{
	keyK8sDeploymentName,
	keyK8sReplicaSetName,
	keyK8sStatefulSetName,
	keyK8sDaemonSetName,
	keyK8sCronJobName,
	keyK8sJobName,
}

// kubernetesName returns the name the pod of a resource gives it, and the
// rule that gave it; sourceUnknownService when the resource is in no pod
// (k8s_attributes found none: no k8s.pod.name).
func (n namer) kubernetesName(attrs pcommon.Map) (string, source) {
	pod := nonEmpty(attrs, keyK8sPodName)
	if pod == "" {
		return "", sourceUnknownService
	}
	if v := nonEmpty(attrs, keyK8sAnnotationName); v != "" {
		return boundValue(v, n.maxValueLength), sourceK8sAnnotation
	}
	if n.useLabels {
		if v := nonEmpty(attrs, keyK8sLabelAppInstance); v != "" {
			return boundValue(v, n.maxValueLength), sourceK8sLabel
		}
		if v := nonEmpty(attrs, keyK8sLabelAppName); v != "" {
			return boundValue(v, n.maxValueLength), sourceK8sLabel
		}
	}
	for _, k := range k8sWorkloadKeys {
		if v := nonEmpty(attrs, k); v != "" {
			return boundValue(v, n.maxValueLength), sourceK8sWorkload
		}
	}
	return boundValue(pod, n.maxValueLength), sourceK8sPod
}

// kubernetesNamespace sets service.namespace, when the resource has none (an
// OTEL_RESOURCE_ATTRIBUTES entry, say), from the pod's
// resource.opentelemetry.io/service.namespace annotation, else its
// Kubernetes namespace.
func (n namer) kubernetesNamespace(attrs pcommon.Map) {
	if nonEmpty(attrs, keyServiceNamespace) != "" {
		return
	}
	ns := nonEmpty(attrs, keyK8sAnnotationNS)
	if ns == "" {
		ns = nonEmpty(attrs, keyK8sNamespace)
	}
	if ns != "" {
		attrs.PutStr(keyServiceNamespace, boundValue(ns, n.maxValueLength))
	}
}

// nonEmpty returns the trimmed string value of key, or "" when it is
// missing, not a string, or only white space.
func nonEmpty(attrs pcommon.Map, key string) string {
	v, ok := attrs.Get(key)
	if !ok {
		return ""
	}
	return strings.TrimSpace(strOf(v))
}
