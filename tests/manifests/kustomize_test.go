package manifests

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// kustomize renders a kustomization as `kubectl apply -k` would: with
// kubectl's built-in kustomize, or with a standalone kustomize v5 ($KUSTOMIZE
// or kustomize on PATH, e.g. from
// `go install sigs.k8s.io/kustomize/kustomize/v5@v5.5.0`), and decodes the
// result strictly.
func kustomize(t *testing.T, dir string) []object {
	t.Helper()
	var argv []string
	if k := os.Getenv("KUSTOMIZE"); k != "" {
		argv = []string{k, "build"}
	} else if k, err := exec.LookPath("kubectl"); err == nil {
		argv = []string{k, "kustomize"}
	} else if k, err := exec.LookPath("kustomize"); err == nil {
		argv = []string{k, "build"}
	} else {
		t.Fatal("neither kubectl nor kustomize is installed: the kustomizations cannot be rendered; " +
			"install kubectl, or `go install sigs.k8s.io/kustomize/kustomize/v5@v5.5.0` and set KUSTOMIZE to it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1], repoPath(t, dir))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s %s: %v\n%s", argv[0], argv[1], dir, err, stderr.String())
	}
	objs, err := decodeDocuments("kustomize "+dir, out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestKustomizeAgent(t *testing.T) {
	built := kustomize(t, "distributions/kubernetes")
	var want int
	for _, o := range manifests(t) {
		if strings.HasPrefix(o.File, agentDir) {
			want++
		}
	}
	if len(built) != want {
		t.Errorf("kustomize distributions/kubernetes rendered %d objects, the agent's files hold %d", len(built), want)
	}
	ds := find[appsv1.DaemonSet](t, built, "", "DaemonSet", agentName)
	c := container(t, &ds.Spec.Template.Spec)
	if envVar(c, ingestKeyEnv) == nil {
		t.Errorf("the direct agent lacks %s", ingestKeyEnv)
	}
}

func TestKustomizeGateway(t *testing.T) {
	built := kustomize(t, "distributions/kubernetes/gateway")
	files := manifests(t)

	// The agents: no key, the gateway's address instead.
	ds := find[appsv1.DaemonSet](t, built, "", "DaemonSet", agentName)
	c := container(t, &ds.Spec.Template.Spec)
	if envVar(c, ingestKeyEnv) != nil {
		t.Errorf("in the two-tier topology the agents still get %s", ingestKeyEnv)
	}
	// gRPC's dns resolver over the headless Service: every ready replica.
	svc := find[corev1.Service](t, files, "", "Service", gatewayHeadless)
	gw := envVar(c, gatewayEnvVar)
	wantAddr := "dns:///" + svc.Name + "." + svc.Namespace + ".svc:4317"
	if gw == nil || gw.Value != wantAddr {
		t.Errorf("agent %s = %+v, want %s", gatewayEnvVar, gw, wantAddr)
	}
	if envVar(c, nodeNameEnv) == nil || !ds.Spec.Template.Spec.HostPID {
		t.Error("the overlay lost the agent's node name or hostPID")
	}

	// The agents' config is the two-tier one.
	cm := find[corev1.ConfigMap](t, built, "", "ConfigMap", agentName)
	patch := find[corev1.ConfigMap](t, files, gatewayDir+renderedBase, "ConfigMap", agentName)
	if cm.Data["config.yaml"] != patch.Data["config.yaml"] {
		t.Error("the kustomize-built agent ConfigMap is not gateway/otelcol-nexovue.yaml's")
	}
	if !strings.Contains(cm.Data["config.yaml"], "${env:"+gatewayEnvVar) {
		t.Errorf("the agents' two-tier config does not read %s", gatewayEnvVar)
	}

	// The gateway itself.
	dep := find[appsv1.Deployment](t, built, "", "Deployment", gatewayName)
	if envVar(container(t, &dep.Spec.Template.Spec), ingestKeyEnv) == nil {
		t.Errorf("the gateway lacks %s", ingestKeyEnv)
	}
	find[corev1.Service](t, built, "", "Service", gatewayName)
	find[corev1.Service](t, built, "", "Service", gatewayHeadless)
	find[corev1.ConfigMap](t, built, "", "ConfigMap", gatewayName)
	checkGatewayScaling(t, built, dep, container(t, &dep.Spec.Template.Spec))
}

func TestKustomizeLeastPrivilege(t *testing.T) {
	built := kustomize(t, "distributions/kubernetes/least-privilege")
	base := find[appsv1.DaemonSet](t, manifests(t), agentDir+renderedBase, "DaemonSet", agentName)
	ds := find[appsv1.DaemonSet](t, built, "", "DaemonSet", agentName)
	spec := &ds.Spec.Template.Spec
	c := container(t, spec)
	sc := c.SecurityContext
	if sc == nil || sc.Privileged == nil || *sc.Privileged {
		t.Fatalf("least-privilege agent security context %+v: want privileged: false", sc)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities %+v: want every capability dropped first", sc.Capabilities)
	}
	add := slices.Clone(sc.Capabilities.Add)
	slices.Sort(add)
	// No SYS_RESOURCE: on Linux 5.11+ the receiver needs no RLIMIT_MEMLOCK
	// raise (receiver/profilingreceiver/internal/memlock).
	if want := []corev1.Capability{"BPF", "CHECKPOINT_RESTORE", "PERFMON", "SYSLOG", "SYS_PTRACE"}; !slices.Equal(add, want) {
		t.Errorf("added capabilities %v, want %v", add, want)
	}
	// no_new_privs, which installing the receiver's seccomp filter needs
	// without CAP_SYS_ADMIN, is then already set.
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("the least-privilege agent must not allow privilege escalation (no_new_privs)")
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined {
		t.Errorf("seccomp profile %+v: want Unconfined (default profiles may refuse bpf())", sc.SeccompProfile)
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		t.Error("the least-privilege agent must still run as root")
	}
	// Everything else is the privileged agent's.
	if !spec.HostPID {
		t.Error("hostPID lost")
	}
	bc := container(t, &base.Spec.Template.Spec)
	if !reflect.DeepEqual(c.VolumeMounts, bc.VolumeMounts) || !reflect.DeepEqual(spec.Volumes, base.Spec.Template.Spec.Volumes) {
		t.Errorf("mounts differ from the privileged agent's: %+v", c.VolumeMounts)
	}
	if !slices.Equal(c.Args, bc.Args) || c.Image != bc.Image {
		t.Error("args or image differ from the privileged agent's")
	}
}
