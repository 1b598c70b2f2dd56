package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"sigs.k8s.io/yaml"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

const (
	namespace   = "nexovue-profiling"
	agentName   = "otelcol-nexovue-agent"
	gatewayName = "otelcol-nexovue-gateway"
	agentDir    = "distributions/kubernetes/agent/"
	gatewayDir  = "distributions/kubernetes/gateway/"
	// renderedBase is each base's one manifest file: the chart rendered
	// with the base's values.yaml (TestBasesAreChartRenderings).
	renderedBase  = "otelcol-nexovue.yaml"
	secretName    = "nexovue-ingest-key"
	healthPort    = 13133
	gatewayOTLP   = 4317
	configMount   = "/etc/otelcol"
	configArg     = "--config=/etc/otelcol/config.yaml"
	storageMount  = "/var/lib/otelcol"
	nodeNameEnv   = "K8S_NODE_NAME"
	ingestKeyEnv  = "NEXOVUE_KEY"
	gatewayEnvVar = "NEXOVUE_GATEWAY_ENDPOINT"
)

func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	// The checker itself: a misspelt field must not pass silently.
	bad := "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n      hostPid: true\n"
	if _, err := decodeDocuments("bad.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "hostPid") {
		t.Fatalf("unknown field hostPid: want an error naming it, got %v", err)
	}
	dup := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  name: b\n"
	if _, err := decodeDocuments("dup.yaml", []byte(dup)); err == nil {
		t.Fatal("duplicate key: want an error")
	}
	unknownKind := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n"
	if _, err := decodeDocuments("pod.yaml", []byte(unknownKind)); err == nil {
		t.Fatal("unexpected kind: want an error")
	}
}

func TestEveryManifestDecodesStrictly(t *testing.T) {
	objs := manifests(t)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.Kind]++
		meta := o.Obj.(interface{ GetNamespace() string })
		switch o.Kind {
		case "Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass":
			if meta.GetNamespace() != "" {
				t.Errorf("%s %s is cluster-scoped but names namespace %q", o.Kind, o.Name, meta.GetNamespace())
			}
		default:
			if meta.GetNamespace() != namespace {
				t.Errorf("%s %s in %s: namespace %q, want %q", o.Kind, o.Name, o.File, meta.GetNamespace(), namespace)
			}
		}
		if o.Kind == "Secret" {
			t.Errorf("%s ships a Secret; the ingest key must come from the user", o.File)
		}
	}
	for _, k := range []string{"Namespace", "PriorityClass", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet", "Deployment", "Service"} {
		if kinds[k] == 0 {
			t.Errorf("no %s among the manifests", k)
		}
	}
}

func TestKustomizationsListEveryManifest(t *testing.T) {
	root := repoPath(t, "distributions", "kubernetes")
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var files, subdirs []string
		for _, e := range entries {
			switch {
			case e.IsDir():
				subdirs = append(subdirs, e.Name())
			case strings.HasSuffix(e.Name(), ".yaml") && e.Name() != "kustomization.yaml" && e.Name() != "values.yaml":
				files = append(files, e.Name())
			}
		}
		kpath := filepath.Join(dir, "kustomization.yaml")
		if _, err := os.Stat(kpath); err != nil {
			t.Errorf("%s has no kustomization.yaml", dir)
			continue
		}
		k := readKustomization(t, kpath)
		listed := map[string]bool{}
		for _, r := range k.Resources {
			if _, err := os.Stat(filepath.Join(dir, r)); err != nil {
				t.Errorf("%s lists %s, which does not exist", kpath, r)
			}
			listed[r] = true
		}
		for _, p := range k.Patches {
			if p.Path != "" {
				listed[p.Path] = true
				if _, err := os.Stat(filepath.Join(dir, p.Path)); err != nil {
					t.Errorf("%s patches with %s, which does not exist", kpath, p.Path)
				}
			}
		}
		for _, f := range files {
			if !listed[f] {
				t.Errorf("%s does not list %s", kpath, f)
			}
		}
		if dir == root && !slices.Equal(k.Resources, []string{"agent"}) {
			// The top level is the direct agent; the variants are overlays.
			t.Errorf("%s resources %v, want [agent]", kpath, k.Resources)
		}
		if dir == root && len(subdirs) == 0 {
			t.Errorf("%s has no variants", root)
		}
	}
}

func container(t *testing.T, spec *corev1.PodSpec) *corev1.Container {
	t.Helper()
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	return &spec.Containers[0]
}

func envVar(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func mountAt(c *corev1.Container, path string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func volume(spec *corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// checkCollectorContainer asserts what agent and gateway containers share:
// the image, the args with the feature gate, the config from the named
// ConfigMap, the key from the Secret (when wantKey), requests and limits,
// probes on health_check.
func checkCollectorContainer(t *testing.T, what string, spec *corev1.PodSpec, configMap string, wantKey bool) *corev1.Container {
	t.Helper()
	c := container(t, spec)
	if want := imageRepo(t) + ":" + distVersion(t); c.Image != want {
		t.Errorf("%s image %q: want %s (IMAGE in distributions/dist.mk, dist.version in builder-config.yaml)", what, c.Image, want)
	}
	if !slices.Contains(c.Args, testenv.FeatureGate) {
		t.Errorf("%s args %q lack %s", what, c.Args, testenv.FeatureGate)
	}
	if !slices.Contains(c.Args, configArg) {
		t.Errorf("%s args %q lack %s", what, c.Args, configArg)
	}
	m := mountAt(c, configMount)
	if m == nil || !m.ReadOnly {
		t.Fatalf("%s: no read-only mount at %s", what, configMount)
	}
	v := volume(spec, m.Name)
	if v == nil || v.ConfigMap == nil || v.ConfigMap.Name != configMap {
		t.Errorf("%s: %s is not ConfigMap %s", what, configMount, configMap)
	}
	key := envVar(c, ingestKeyEnv)
	if wantKey {
		if key == nil || key.Value != "" || key.ValueFrom == nil || key.ValueFrom.SecretKeyRef == nil ||
			key.ValueFrom.SecretKeyRef.Name != secretName || key.ValueFrom.SecretKeyRef.Key != "key" {
			t.Errorf("%s: %s must come from Secret %s key \"key\", got %+v", what, ingestKeyEnv, secretName, key)
		}
	} else if key != nil {
		t.Errorf("%s holds %s; only the gateway should", what, ingestKeyEnv)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
			t.Errorf("%s %s: request %s, limit %s: want both, request <= limit", what, r, req.String(), lim.String())
		}
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", what, name)
			continue
		}
		port := p.HTTPGet.Port.IntValue()
		if p.HTTPGet.Port.StrVal != "" {
			for _, cp := range c.Ports {
				if cp.Name == p.HTTPGet.Port.StrVal {
					port = int(cp.ContainerPort)
				}
			}
		}
		if port != healthPort || p.HTTPGet.Path != "/" {
			t.Errorf("%s %s probe: port %d path %q, want health_check's %d /", what, name, port, p.HTTPGet.Path, healthPort)
		}
	}
	return c
}

// imageRepo is IMAGE from distributions/dist.mk: the manifests must pull
// the image `make image` builds.
func imageRepo(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, "distributions", "dist.mk"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE\s*\?=\s*(\S+)\s*$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("distributions/dist.mk sets no IMAGE ?=")
	}
	return string(m[1])
}

// distVersion is dist.version in builder-config.yaml, the image's tag.
func distVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, "builder-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Dist struct {
			Version string `json:"version"`
		} `json:"dist"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("builder-config.yaml: %v", err)
	}
	if cfg.Dist.Version == "" {
		t.Fatal("builder-config.yaml has no dist.version")
	}
	return cfg.Dist.Version
}

func TestAgentDaemonSet(t *testing.T) {
	objs := manifests(t)
	ds := find[appsv1.DaemonSet](t, objs, agentDir+renderedBase, "DaemonSet", agentName)
	spec := &ds.Spec.Template.Spec
	if !spec.HostPID {
		t.Error("hostPID is not true: the profiler must see the node's processes")
	}
	if spec.HostNetwork {
		t.Error("hostNetwork is true; the agent does not need it")
	}
	c := checkCollectorContainer(t, "agent", spec, agentName, true)
	if m := mountAt(c, storageMount); m == nil || m.ReadOnly {
		t.Errorf("agent: no writable mount at %s for the sending queue (queue_storage)", storageMount)
	}
	if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Error("agent container is not privileged")
	}
	// The docker command's mounts, and tracefs.
	for path, want := range map[string]struct {
		host     string
		readOnly bool
	}{
		"/sys/kernel/debug":   {"/sys/kernel/debug", false},
		"/sys/kernel/tracing": {"/sys/kernel/tracing", false},
		"/sys/fs/cgroup":      {"/sys/fs/cgroup", true},
		"/proc":               {"/proc", false},
	} {
		m := mountAt(c, path)
		if m == nil {
			t.Errorf("agent: nothing mounted at %s", path)
			continue
		}
		v := volume(spec, m.Name)
		if v == nil || v.HostPath == nil || v.HostPath.Path != want.host {
			t.Errorf("agent: %s is not hostPath %s", path, want.host)
		}
		if m.ReadOnly != want.readOnly {
			t.Errorf("agent: %s readOnly=%v, want %v", path, m.ReadOnly, want.readOnly)
		}
	}
	if v := volume(spec, mountAt(c, storageMount).Name); v == nil || v.HostPath == nil {
		t.Error("agent: the sending queue is not on a hostPath, so it would not outlive the pod")
	}
	node := envVar(c, nodeNameEnv)
	if node == nil || node.ValueFrom == nil || node.ValueFrom.FieldRef == nil || node.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("agent: %s must come from the downward API's spec.nodeName, got %+v", nodeNameEnv, node)
	}
	// Every node: a toleration of every taint.
	everything := false
	for _, tol := range spec.Tolerations {
		if tol.Operator == corev1.TolerationOpExists && tol.Key == "" && tol.Effect == "" {
			everything = true
		}
	}
	if !everything {
		t.Errorf("agent tolerations %+v do not cover every taint", spec.Tolerations)
	}
	pc := find[schedulingv1.PriorityClass](t, objs, agentDir+renderedBase, "PriorityClass", spec.PriorityClassName)
	if pc.Value <= 0 || pc.Value >= 2000000000 || pc.GlobalDefault {
		t.Errorf("PriorityClass %s: value %d globalDefault %v: want positive, below the system classes, not default", pc.Name, pc.Value, pc.GlobalDefault)
	}
	sa := find[corev1.ServiceAccount](t, objs, agentDir+renderedBase, "ServiceAccount", spec.ServiceAccountName)
	if sa.Namespace != namespace {
		t.Errorf("ServiceAccount %s in %q", sa.Name, sa.Namespace)
	}
	ns := find[corev1.Namespace](t, objs, agentDir+renderedBase, "Namespace", namespace)
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("Namespace %s: pod-security enforce label %q, want privileged (the agent is)", namespace, ns.Labels["pod-security.kubernetes.io/enforce"])
	}
	// The selector must select the template.
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("DaemonSet selector %s=%s does not match its template", k, v)
		}
	}
}

func TestAgentRBAC(t *testing.T) {
	objs := manifests(t)
	ds := find[appsv1.DaemonSet](t, objs, agentDir+renderedBase, "DaemonSet", agentName)
	sa := ds.Spec.Template.Spec.ServiceAccountName
	crb := find[rbacv1.ClusterRoleBinding](t, objs, agentDir+renderedBase, "ClusterRoleBinding", agentName)
	if len(crb.Subjects) != 1 || crb.Subjects[0].Kind != "ServiceAccount" || crb.Subjects[0].Name != sa || crb.Subjects[0].Namespace != namespace {
		t.Errorf("ClusterRoleBinding subjects %+v: want only ServiceAccount %s/%s", crb.Subjects, namespace, sa)
	}
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.APIGroup != "rbac.authorization.k8s.io" {
		t.Errorf("ClusterRoleBinding roleRef %+v", crb.RoleRef)
	}
	cr := find[rbacv1.ClusterRole](t, objs, agentDir+renderedBase, "ClusterRole", crb.RoleRef.Name)
	// Exactly what k8s_attributes reads, read-only.
	want := map[string]bool{"/pods": true, "/namespaces": true, "/nodes": true, "apps/replicasets": true}
	got := map[string]bool{}
	for _, r := range cr.Rules {
		verbs := slices.Clone(r.Verbs)
		sort.Strings(verbs)
		if !slices.Equal(verbs, []string{"get", "list", "watch"}) {
			t.Errorf("ClusterRole rule %+v: verbs %v, want get, list, watch", r, r.Verbs)
		}
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("ClusterRole rule %+v: unexpected resourceNames or nonResourceURLs", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got[g+"/"+res] = true
			}
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("ClusterRole lacks %s", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("ClusterRole grants %s, which k8s_attributes does not read", k)
		}
	}
}

func TestGatewayDeploymentAndService(t *testing.T) {
	objs := manifests(t)
	dep := find[appsv1.Deployment](t, objs, gatewayDir+renderedBase, "Deployment", gatewayName)
	spec := &dep.Spec.Template.Spec
	c := checkCollectorContainer(t, "gateway", spec, gatewayName, true)
	if spec.HostPID || spec.HostNetwork {
		t.Error("gateway shares the host's PID or network namespace; it needs neither")
	}
	if sc := c.SecurityContext; sc == nil || (sc.Privileged != nil && *sc.Privileged) ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("gateway container security context %+v: want unprivileged, no escalation, all capabilities dropped", sc)
	}
	checkGatewayScaling(t, objs, dep, c)
	svc := find[corev1.Service](t, objs, gatewayDir+renderedBase, "Service", gatewayName)
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("Service selector %s=%s does not select the gateway pods", k, v)
		}
	}
	if len(svc.Spec.Selector) == 0 {
		t.Error("Service has no selector")
	}
	var grpc bool
	for _, p := range svc.Spec.Ports {
		if p.Port == gatewayOTLP {
			grpc = true
			found := false
			for _, cp := range c.Ports {
				if cp.Name == p.TargetPort.StrVal && cp.ContainerPort == gatewayOTLP {
					found = true
				}
			}
			if !found {
				t.Errorf("Service port %d targets %q, not the gateway's OTLP/gRPC port", p.Port, p.TargetPort.String())
			}
		}
	}
	if !grpc {
		t.Errorf("Service does not expose OTLP/gRPC on %d", gatewayOTLP)
	}
}
