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

// ownerObject is the workload object of a pod's owner, as its controller's
// parent (a Deployment for a ReplicaSet, a CronJob for a Job) would have
// made it. Without a controller-manager nothing acts on it.
func ownerObject(ns string, o owner, podLabels map[string]string) map[string]any {
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
	return map[string]any{
		"apiVersion": ownerAPIVersion[o.kind],
		"kind":       o.kind,
		"metadata":   map[string]any{"name": o.name, "namespace": ns},
		"spec":       spec,
	}
}

// createPod creates the pod (and its namespace and owner) through the API on
// node, without status: no container is named yet.
func createPod(t testing.TB, c *cluster, node string, s podSpec) *pod {
	t.Helper()
	p := &pod{spec: s}
	createPods(t, c, node, p)
	return p
}

// createPods creates the pods (their spec set), their namespaces and
// owners through the API on node, without status, in two server-side
// applies (namespaces and owners, then the pods, which name their owners'
// UIDs), and sets each pod's UID and its containers' IDs.
func createPods(t testing.TB, c *cluster, node string, pods ...*pod) {
	t.Helper()
	var first []any
	namespaces := map[string]bool{}
	for _, p := range pods {
		if !namespaces[p.spec.namespace] {
			namespaces[p.spec.namespace] = true
			first = append(first, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": p.spec.namespace}})
		}
	}
	owners := map[objectKey]bool{}
	for _, p := range pods {
		if o := p.spec.owner; o != nil && !owners[objectKey{o.kind, p.spec.namespace, o.name}] {
			owners[objectKey{o.kind, p.spec.namespace, o.name}] = true
			first = append(first, ownerObject(p.spec.namespace, *o, p.spec.labels))
		}
	}
	uids := c.applyList(t, first)
	var podObjs []any
	for _, p := range pods {
		s := &p.spec
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
			uid := uids[objectKey{s.owner.kind, s.namespace, s.owner.name}]
			if uid == "" {
				t.Fatalf("no UID for the %s %s/%s the API server stored", s.owner.kind, s.namespace, s.owner.name)
			}
			meta["ownerReferences"] = []any{map[string]any{
				"apiVersion": ownerAPIVersion[s.owner.kind], "kind": s.owner.kind, "name": s.owner.name,
				"uid": uid, "controller": true,
			}}
		}
		var containers []any
		for _, name := range s.containers {
			containers = append(containers, map[string]any{"name": name, "image": "example.invalid/" + name + ":1"})
		}
		podObjs = append(podObjs, map[string]any{
			"apiVersion": "v1", "kind": "Pod", "metadata": meta,
			"spec": map[string]any{"nodeName": node, "containers": containers},
		})
	}
	uids = c.applyList(t, podObjs)
	for _, p := range pods {
		p.uid = uids[objectKey{"Pod", p.spec.namespace, p.spec.name}]
		if p.uid == "" {
			t.Fatalf("no UID for the pod %s/%s the API server stored", p.spec.namespace, p.spec.name)
		}
		p.ids, p.pids = map[string]string{}, map[string]int{}
		for _, name := range p.spec.containers {
			p.ids[name] = randHex(t, 32)
		}
	}
}

// objectKey names an API object: kind, namespace, name.
type objectKey struct{ kind, namespace, name string }

// applyList applies the objects, in order, as one List (server-side, strict
// field validation) and returns the UID of each object the API server
// stored.
func (c *cluster) applyList(t testing.TB, objs []any) map[objectKey]string {
	t.Helper()
	out, err := c.kubectlIn(toJSON(t, map[string]any{"apiVersion": "v1", "kind": "List", "items": objs}),
		"apply", "--server-side", "--field-manager=test", "--validate=strict", "-o", "json", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	type object struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Namespace, Name, UID string
		} `json:"metadata"`
	}
	var list struct {
		object
		Items []object `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("kubectl apply -o json: %v:\n%s", err, out)
	}
	items := list.Items
	if list.Kind != "List" {
		items = []object{list.object} // kubectl prints a single object as itself
	}
	uids := map[objectKey]string{}
	for _, o := range items {
		uids[objectKey{o.Kind, o.Metadata.Namespace, o.Metadata.Name}] = o.Metadata.UID
	}
	if len(uids) != len(objs) {
		t.Fatalf("applied %d objects, the API server answered with %d:\n%s", len(objs), len(uids), out)
	}
	return uids
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
