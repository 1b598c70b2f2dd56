// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// owner is the workload object a pod belongs to, created through the API
// like its controller would have.
type owner struct {
	kind, name string
}

// podSpec describes a test pod: its owner (none for a bare pod), labels,
// annotations and containers (the first is "app").
type podSpec struct {
	namespace, name string
	owner           *owner
	labels          map[string]string
	annotations     map[string]string
	containers      []string
	// env of the process (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
	env []string
}

// pod is a test pod and its containers' real processes.
type pod struct {
	spec podSpec
	uid  string
	ids  map[string]string // container name -> 64-hex container ID
	pids map[string]int    // container name -> pid
	// named is when its status named its containers.
	named time.Time
}

// workload kinds and their API versions.
var ownerAPIVersion = map[string]string{
	"ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "Job": "batch/v1",
}

// createOwner creates the workload object through the API and returns its
// UID. Without a controller-manager nothing acts on it.
func createOwner(t testing.TB, c *cluster, ns string, o owner, podLabels map[string]string) string {
	t.Helper()
	sel := map[string]string{"nxv-test-owner": o.name}
	tmplLabels := map[string]string{"nxv-test-owner": o.name}
	for k, v := range podLabels {
		tmplLabels[k] = v
	}
	restart := "Always"
	if o.kind == "Job" {
		restart = "Never"
	}
	template := map[string]any{
		"metadata": map[string]any{"labels": tmplLabels},
		"spec": map[string]any{
			"restartPolicy": restart,
			"containers":    []any{map[string]any{"name": "app", "image": "example.invalid/app:1"}},
		},
	}
	spec := map[string]any{"template": template}
	switch o.kind {
	case "Job":
		spec["manualSelector"] = true
		spec["selector"] = map[string]any{"matchLabels": sel}
	case "StatefulSet":
		spec["serviceName"] = o.name
		spec["selector"] = map[string]any{"matchLabels": sel}
	default:
		spec["selector"] = map[string]any{"matchLabels": sel}
	}
	obj := map[string]any{
		"apiVersion": ownerAPIVersion[o.kind],
		"kind":       o.kind,
		"metadata":   map[string]any{"name": o.name, "namespace": ns},
		"spec":       spec,
	}
	c.apply(t, toJSON(t, obj))
	return strings.TrimSpace(c.kubectl(t, "-n", ns, "get", strings.ToLower(o.kind), o.name, "-o", "jsonpath={.metadata.uid}"))
}

// ensureNamespace creates ns if it is not there.
func ensureNamespace(t testing.TB, c *cluster, ns string) {
	t.Helper()
	c.apply(t, toJSON(t, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}))
}

// createPod creates the pod (and its owner) through the API on node, without
// status: no container is named yet.
func createPod(t testing.TB, c *cluster, node string, s podSpec) *pod {
	t.Helper()
	ensureNamespace(t, c, s.namespace)
	if len(s.containers) == 0 {
		s.containers = []string{"app"}
	}
	meta := map[string]any{"name": s.name, "namespace": s.namespace}
	if len(s.labels) > 0 {
		meta["labels"] = s.labels
	}
	if len(s.annotations) > 0 {
		meta["annotations"] = s.annotations
	}
	if s.owner != nil {
		uid := createOwner(t, c, s.namespace, *s.owner, s.labels)
		meta["ownerReferences"] = []any{map[string]any{
			"apiVersion": ownerAPIVersion[s.owner.kind], "kind": s.owner.kind, "name": s.owner.name,
			"uid": uid, "controller": true,
		}}
	}
	var containers []any
	for _, name := range s.containers {
		containers = append(containers, map[string]any{"name": name, "image": "example.invalid/" + name + ":1"})
	}
	c.apply(t, toJSON(t, map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": meta,
		"spec": map[string]any{"nodeName": node, "containers": containers},
	}))
	p := &pod{spec: s, ids: map[string]string{}, pids: map[string]int{}}
	p.uid = strings.TrimSpace(c.kubectl(t, "-n", s.namespace, "get", "pod", s.name, "-o", "jsonpath={.metadata.uid}"))
	for _, name := range s.containers {
		p.ids[name] = randHex(t, 32)
	}
	return p
}

// startProcesses starts one burner per container of p, each in a cgroup
// whose path ends in the container's ID, as a kubelet would place it.
func startProcesses(t testing.TB, cg *cgroups, burner string, p *pod) {
	t.Helper()
	for _, name := range p.spec.containers {
		procs := cg.dir(t, "kubepods/besteffort/pod"+p.uid+"/"+p.ids[name])
		p.pids[name] = startInCgroup(t, p.spec.env, procs, burner, p.spec.name+"/"+name).Cmd.Process.Pid
	}
}

// startInCgroup starts the burner, niced, in the cgroup whose cgroup.procs
// file is procs, the way a container runtime starts a container's program:
// a launcher (here a shell; runc's init on a node) moves itself into the
// cgroup, then executes the program. The profiler reads a process's cgroup
// (its container.id) when it first meets the process, and again only when
// the process executes a different file (upstream ebpf-profiler
// processmanager: the metadata is re-read when /proc/<pid>/exe changes).
// So a process must be in its cgroup before it executes its program: one
// that moves itself later, even if it then re-executes itself, keeps the
// container.id it had when the profiler first sampled it (none), for good.
// It waits until the burner runs and checks that it is in the cgroup.
func startInCgroup(t testing.TB, env []string, procs, burner, what string) *testenv.Process {
	t.Helper()
	proc := testenv.Start(t, env, "/bin/sh", "-c", `echo $$ > "$0" && exec nice -n 10 "$1"`, procs, burner)
	testenv.WaitFor(t, 30*time.Second, "the burner of "+what+" to run in its cgroup", func() (bool, error) {
		if ok, err := proc.Exited(); ok {
			return false, fmt.Errorf("it exited (%v): %s", err, proc.Output())
		}
		return strings.Contains(proc.Output(), "ready"), nil
	})
	want := ":" + strings.TrimPrefix(filepath.Dir(procs), cgroupV1Pids) + "\n"
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", proc.Cmd.Process.Pid))
	if err != nil || !strings.Contains(string(b), want) {
		t.Fatalf("the burner of %s is not in its cgroup %s (%v):\n%s", what, strings.TrimSuffix(want, "\n"), err, b)
	}
	return proc
}

// nameContainers patches the pod's status as a kubelet would once its
// containers run: phase Running, each container's containerd:// ID.
func nameContainers(t testing.TB, c *cluster, p *pod) {
	t.Helper()
	now := time.Now().UTC().Format(time.RFC3339)
	var statuses []any
	for _, name := range p.spec.containers {
		statuses = append(statuses, map[string]any{
			"name": name, "image": "example.invalid/" + name + ":1", "imageID": "",
			"containerID": "containerd://" + p.ids[name],
			"ready":       true, "started": true, "restartCount": 0,
			"state": map[string]any{"running": map[string]any{"startedAt": now}},
		})
	}
	patch := toJSON(t, map[string]any{"status": map[string]any{
		"phase": "Running", "podIP": "10.244.0.10", "hostIP": "127.0.0.1", "startTime": now,
		"containerStatuses": statuses,
	}})
	c.kubectl(t, "-n", p.spec.namespace, "patch", "pod", p.spec.name, "--subresource=status", "--type=merge", "-p", patch)
	p.named = time.Now()
}

func toJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// buildBurner builds the workload program under the name burnerExe.
func buildBurner(t testing.TB) string {
	t.Helper()
	return testenv.BuildGo(t, filepath.Join("testdata", "podburner"), burnerExe)
}
