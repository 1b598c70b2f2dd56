// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// expect is what every profile of one container's process must carry.
type expect struct {
	pod           *pod
	container     string
	service       string
	namespace     string // service.namespace
	workloadKey   string // the workload's attribute, e.g. k8s.deployment.name
	workloadValue string
}

// TestKubernetesNaming runs the DaemonSet config the chart installs (helm
// install, default values), read back from a real kube-apiserver, with the agent ServiceAccount's token, against pods of
// every kind whose containers are real processes in cgroups named after
// their container IDs, and checks the service.name, service.namespace and
// k8s.* attributes that reach the ingest double for each naming rule; then
// a pod created while the agent runs, a pod deleted while its process runs,
// and the API server stopped and started again.
func TestKubernetesNaming(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	installChart(t, c)
	node := "nxv-node-" + randHex(t, 3)
	cg := newCgroups(t)
	burner := buildBurner(t)
	noEnv := []string{"OTEL_SERVICE_NAME=", "OTEL_RESOURCE_ATTRIBUTES="}
	env := func(kv ...string) []string { return append(append([]string(nil), noEnv...), kv...) }

	// The pod-template-hash names the ReplicaSet of a Deployment, as the
	// Deployment controller does; k8s_attributes derives the Deployment from it.
	rsOf := func(dep, hash string) *owner { return &owner{"ReplicaSet", dep + "-" + hash} }
	allLabels := map[string]string{"app.kubernetes.io/instance": "inst-x", "app.kubernetes.io/name": "name-x"}
	withHash := func(hash string, m map[string]string) map[string]string {
		out := map[string]string{"pod-template-hash": hash}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	// A CronJob names its Jobs <cronjob>-<minutes since the epoch>.
	cronJob := "nightly-" + strconv.FormatInt(time.Now().Unix()/60, 10)

	// The pods are created together below, once all are described.
	var cases []expect
	var pods []*pod
	add := func(s podSpec, container, service, ns, wkKey, wkValue string) *pod {
		p := &pod{spec: s}
		pods = append(pods, p)
		cases = append(cases, expect{p, container, service, ns, wkKey, wkValue})
		return p
	}
	// 1. OTEL_SERVICE_NAME beats the annotation, labels and workload.
	add(podSpec{namespace: "shop", name: "envname-6c9f8d7b5-aaaaa", owner: rsOf("envname", "6c9f8d7b5"),
		labels: withHash("6c9f8d7b5", allLabels), annotations: map[string]string{"resource.opentelemetry.io/service.name": "ann-x"},
		env: env("OTEL_SERVICE_NAME=env-checkout")}, "app", "env-checkout", "shop", "k8s.deployment.name", "envname")
	// 2. service.name (and service.namespace) of OTEL_RESOURCE_ATTRIBUTES.
	add(podSpec{namespace: "shop", name: "raname-6c9f8d7b5-bbbbb", owner: rsOf("raname", "6c9f8d7b5"),
		labels: withHash("6c9f8d7b5", allLabels),
		env:    env("OTEL_RESOURCE_ATTRIBUTES=service.name=ra-cart,service.namespace=ra-ns")}, "app", "ra-cart", "ra-ns", "k8s.deployment.name", "raname")
	// 3. The annotations.
	add(podSpec{namespace: "shop", name: "annotated-6c9f8d7b5-ccccc", owner: rsOf("annotated", "6c9f8d7b5"),
		labels: withHash("6c9f8d7b5", allLabels), annotations: map[string]string{
			"resource.opentelemetry.io/service.name": "ann-frontend", "resource.opentelemetry.io/service.namespace": "ann-ns"},
		env: noEnv}, "app", "ann-frontend", "ann-ns", "k8s.deployment.name", "annotated")
	// 4. app.kubernetes.io/instance, then app.kubernetes.io/name.
	add(podSpec{namespace: "shop", name: "labelled-6c9f8d7b5-ddddd", owner: rsOf("labelled", "6c9f8d7b5"),
		labels: withHash("6c9f8d7b5", allLabels), env: noEnv}, "app", "inst-x", "shop", "k8s.deployment.name", "labelled")
	add(podSpec{namespace: "shop", name: "named-0", owner: &owner{"StatefulSet", "named"},
		labels: map[string]string{"app.kubernetes.io/name": "name-ads"}, env: noEnv}, "app", "name-ads", "shop", "k8s.statefulset.name", "named")
	// 5. The owning workload: two Deployments named checkout in two
	// namespaces stay apart by service.namespace; a sidecar keeps its
	// container's name.
	checkout := add(podSpec{namespace: "shop", name: "checkout-5d8f7c6b4-eeeee", owner: rsOf("checkout", "5d8f7c6b4"),
		labels: withHash("5d8f7c6b4", nil), containers: []string{"app", "envoy"}, env: noEnv},
		"app", "checkout", "shop", "k8s.deployment.name", "checkout")
	cases = append(cases, expect{checkout, "envoy", "checkout", "shop", "k8s.deployment.name", "checkout"})
	add(podSpec{namespace: "pay", name: "checkout-7b6c5d4f3-fffff", owner: rsOf("checkout", "7b6c5d4f3"),
		labels: withHash("7b6c5d4f3", nil), env: noEnv}, "app", "checkout", "pay", "k8s.deployment.name", "checkout")
	add(podSpec{namespace: "shop", name: "db-0", owner: &owner{"StatefulSet", "db"}, env: noEnv},
		"app", "db", "shop", "k8s.statefulset.name", "db")
	add(podSpec{namespace: "shop", name: "logagent-x7k2p", owner: &owner{"DaemonSet", "logagent"}, env: noEnv},
		"app", "logagent", "shop", "k8s.daemonset.name", "logagent")
	add(podSpec{namespace: "shop", name: cronJob + "-g4h5j", owner: &owner{"Job", cronJob}, env: noEnv},
		"app", "nightly", "shop", "k8s.cronjob.name", "nightly")
	add(podSpec{namespace: "shop", name: "migrate-k9m8n", owner: &owner{"Job", "migrate"}, env: noEnv},
		"app", "migrate", "shop", "k8s.job.name", "migrate")
	// Then the pod's own name.
	bare := add(podSpec{namespace: "shop", name: "debug-shell", env: noEnv}, "app", "debug-shell", "shop", "", "")

	createPods(t, c, node, pods...)
	for _, p := range pods {
		startProcesses(t, cg, burner, p)
		nameContainers(t, c, p)
	}
	// 6. A process in no pod: a cgroup whose path ends in no container ID.
	hostPID := startInCgroup(t, noEnv, cg.dir(t, "system.slice/nxv-host.service"), burner, "the host").Cmd.Process.Pid

	run := startAgent(t, c, node, true)

	var missing []string
	t.Cleanup(func() {
		if t.Failed() && len(missing) > 0 {
			t.Logf("no enriched profile yet from: %s", strings.Join(missing, ", "))
		}
	})
	testenv.WaitFor(t, 2*time.Minute, "an enriched profile from every test container and the host burner", func() (bool, error) {
		if ok, err := run.proc.Exited(); ok {
			return false, fmt.Errorf("the agent exited (%v)", err)
		}
		// A permission the shipped ClusterRole lacks shows as the API
		// server's "forbidden" in k8s_attributes' log.
		if line := forbidden(run.proc.Output()); line != "" {
			return false, fmt.Errorf("the agent's ServiceAccount was refused: %s", line)
		}
		missing = missing[:0]
		for _, e := range cases {
			if o, ok := run.rec.last(e.pod.pids[e.container]); !ok || o.attrs["k8s.pod.name"] == "" {
				missing = append(missing, fmt.Sprintf("%s/%s (last seen: %v)", e.pod.spec.name, e.container, o.attrs))
			}
		}
		if _, ok := run.rec.last(hostPID); !ok {
			missing = append(missing, "the host burner")
		}
		return len(missing) == 0, nil
	})
	for _, e := range cases {
		o, _ := run.rec.last(e.pod.pids[e.container])
		checkPodResource(t, e, node, o)
	}
	if o, _ := run.rec.last(hostPID); o.attrs["service.name"] != "unknown_service:"+burnerExe || o.attrs["k8s.pod.name"] != "" || o.attrs["service.namespace"] != "" {
		t.Errorf("host process: want unknown_service:%s and no k8s attributes, got %v", burnerExe, o.attrs)
	}

	// The agent's coverage gauge counts the pods' processes by the rule that
	// named them. The k8s_* sources are exact: only this cluster's pods are
	// enriched by this agent (the host's other processes, other tests'
	// included, are in none of its pods): the annotated pod, the two
	// labelled ones, the seven processes named after their workload
	// (checkout's two containers, the other checkout, db, logagent,
	// nightly, migrate) and the bare pod.
	wantCoverage := map[string]string{"k8s_annotation": "1", "k8s_label": "2", "k8s_workload": "7", "k8s_pod": "1"}
	var coverage map[string]string
	testenv.WaitFor(t, time.Minute, "the coverage gauge to count the pods' processes by rule", func() (bool, error) {
		var err error
		coverage, err = run.coverageBySource()
		if err != nil {
			return false, err
		}
		for s, v := range wantCoverage {
			if coverage[s] != v {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("otelcol_processor_service_name_processes by source: %v", coverage)

	// The late pod and the deleted pod are apart (their own pods and
	// processes): they run side by side, and both end before the API server
	// stops.
	t.Run("late and deleted pods", func(t *testing.T) {
		t.Run("pod created after the agent started", func(t *testing.T) {
			t.Parallel()
			late := createPod(t, c, node, podSpec{namespace: "shop", name: "late-5f4e3d2c1-lllll", owner: rsOf("late", "5f4e3d2c1"),
				labels: withHash("5f4e3d2c1", nil), env: noEnv})
			startProcesses(t, cg, burner, late)
			pid := late.pids["app"]
			// On a node the runtime starts the process and the kubelet then
			// writes its container ID into the pod's status. Wait until the
			// profiler reports the process (unenriched: no pod names its
			// container yet), so that the 10 s below measure the enrichment
			// (k8s_attributes' watch and cache), not how soon a niced new process
			// on a busy machine is first sampled.
			testenv.WaitFor(t, time.Minute, "a first (unenriched) profile of the late pod's process", func() (bool, error) {
				return len(run.rec.of(pid)) > 0, nil
			})
			for _, o := range run.rec.of(pid) {
				if o.attrs["k8s.pod.name"] != "" {
					t.Fatalf("the late pod's process was enriched before its status named its container: %v", o.attrs)
				}
			}
			nameContainers(t, c, late)
			cpuAtNaming, _ := testenv.ReadProcStat(pid)
			t.Cleanup(func() {
				if t.Failed() {
					lateDiagnosis(t, run.rec.of(pid), late, "app", cpuAtNaming)
					t.Logf("the agent's k8s_attributes metrics:\n%s", run.k8sCounters())
				}
			})
			// The bound is on the enrichment, measured from when the profiler
			// took a profile's earliest sample: a profile whose samples were all
			// taken more than 10 s after its pod's status named its container
			// went through k8s_attributes after that, so it must be enriched.
			// (Its arrival at the double can trail by a queue or a retry on a
			// busy machine, which says nothing of the enrichment.) How soon the
			// process is sampled again is the machine's business (niced, beside
			// the other system tests on 2 cores): wait up to a minute for that.
			const bound = 10 * time.Second
			overdue := func(o observation) error {
				if after := o.sampled.Sub(late.named); after > bound && o.attrs["k8s.pod.name"] == "" {
					return fmt.Errorf("a profile of the late pod's process sampled %s after its status named its container (accepted %s after) is still without k8s attributes (bound %s): %v",
						after.Round(10*time.Millisecond), o.at.Sub(late.named).Round(10*time.Millisecond), bound, o.attrs)
				}
				return nil
			}
			var first observation
			testenv.WaitFor(t, time.Minute, "an enriched profile of the late pod after its status named its container", func() (bool, error) {
				for _, o := range run.rec.of(pid) {
					if o.at.Before(late.named) {
						continue
					}
					if o.attrs["k8s.pod.name"] != "" {
						first = o
						return true, nil
					}
					if err := overdue(o); err != nil {
						return false, err
					}
				}
				return false, nil
			})
			for _, o := range run.rec.of(pid) {
				if err := overdue(o); err != nil {
					t.Error(err)
				}
			}
			checkPodResource(t, expect{late, "app", "late", "shop", "k8s.deployment.name", "late"}, node, first)
			t.Logf("figure: pod status naming its container -> first enriched profile at the double: %s (reporter_interval 2s; bound %s on the enrichment)",
				first.at.Sub(late.named).Round(10*time.Millisecond), bound)
		})

		t.Run("pod deleted while its process runs", func(t *testing.T) {
			t.Parallel()
			pid := bare.pids["app"]
			before := len(run.rec.of(pid))
			c.kubectl(t, "-n", "shop", "delete", "pod", bare.spec.name, "--grace-period=0", "--force", "--wait=false")
			run.waitProfilesSince(t, pid, time.Now(), "the deleted pod's process")
			// Each profile is either still the pod's (k8s_attributes keeps a
			// deleted pod for pod_delete_grace_period, 2 min by default) or, after
			// that, the host process it now is: never a mix.
			for _, o := range run.rec.of(pid)[before:] {
				if o.attrs["k8s.pod.name"] != "" {
					checkPodResource(t, expect{bare, "app", "debug-shell", "shop", "", ""}, node, o)
				} else if o.attrs["service.name"] != "unknown_service:"+burnerExe || o.attrs["service.namespace"] != "" {
					t.Errorf("deleted pod's process, unenriched: want unknown_service:%s without service.namespace, got %v", burnerExe, o.attrs)
				}
			}
		})
	})

	t.Run("API server stopped and restarted", func(t *testing.T) {
		pid := checkout.pids["app"]
		c.stopAPIServer()
		stopped := time.Now()
		run.waitProfilesSince(t, pid, stopped, "checkout while the API server is down")
		// The pods the agent knows stay enriched while it cannot reach the
		// API server.
		for _, o := range run.rec.of(pid) {
			if o.at.After(stopped) {
				checkPodResource(t, expect{checkout, "app", "checkout", "shop", "k8s.deployment.name", "checkout"}, node, o)
			}
		}
		c.startAPIServer(t)
		c.waitReady(t)
		ready := time.Now()
		// Enrichment returns: a pod created after the restart is enriched,
		// so the agent's watch is back. k8s_attributes' informers reconnect
		// with client-go's reflector backoff: doubling from 0.8 s to at most
		// 30 s, each delay stretched by up to 100 % jitter, so up to a minute
		// after the API server is back, plus a re-list and a report.
		again := createPod(t, c, node, podSpec{namespace: "shop", name: "again-0", owner: &owner{"StatefulSet", "again"}, env: noEnv})
		startProcesses(t, cg, burner, again)
		nameContainers(t, c, again)
		cpuAtNaming, _ := testenv.ReadProcStat(again.pids["app"])
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("API server ready again %s after it stopped", ready.Sub(stopped).Round(100*time.Millisecond))
				lateDiagnosis(t, run.rec.of(again.pids["app"]), again, "app", cpuAtNaming)
				t.Logf("the agent's k8s_attributes metrics:\n%s", run.k8sCounters())
			}
		})
		var o observation
		testenv.WaitFor(t, 3*time.Minute, "an enriched profile of a pod created after the API server restarted", func() (bool, error) {
			for _, seen := range run.rec.of(again.pids["app"]) {
				if seen.attrs["k8s.pod.name"] != "" {
					o = seen
					return true, nil
				}
			}
			return false, nil
		})
		checkPodResource(t, expect{again, "app", "again", "shop", "k8s.statefulset.name", "again"}, node, o)
		t.Logf("figure: API server down %s; ready again -> first enriched profile of a new pod at the double: %s",
			ready.Sub(stopped).Round(100*time.Millisecond), o.at.Sub(ready).Round(100*time.Millisecond))
	})

	// Nothing lost: the double accepted every request the agent sent.
	st := run.srv.Stats()
	for status, n := range st.RequestsByStatus {
		if status != http.StatusOK {
			t.Errorf("the double answered %d to %d requests (want only 200): %v", status, n, st.RequestsByStatus)
		}
	}
	if st.Dropped != 0 {
		t.Errorf("%d connections dropped", st.Dropped)
	}
	if strings.Contains(run.proc.Output(), "Dropping data") || strings.Contains(run.proc.Output(), "panic") {
		t.Errorf("the agent dropped data or panicked:\n%s", run.proc.Output())
	}
	t.Logf("figure: %d requests accepted, %d samples, %d test processes named", st.AcceptedRequests, st.SamplesAccepted, len(cases)+1)
}

// checkPodResource checks one profile's resource of a pod's process.
func checkPodResource(t *testing.T, e expect, node string, o observation) {
	t.Helper()
	want := map[string]string{
		"service.name":       e.service,
		"service.namespace":  e.namespace,
		"k8s.namespace.name": e.pod.spec.namespace,
		"k8s.pod.name":       e.pod.spec.name,
		"k8s.pod.uid":        e.pod.uid,
		"k8s.container.name": e.container,
		"k8s.node.name":      node,
		"container.id":       e.pod.ids[e.container],
	}
	if e.workloadKey != "" {
		want[e.workloadKey] = e.workloadValue
	}
	for k, v := range want {
		if o.attrs[k] != v {
			t.Errorf("%s/%s: %s = %q, want %q (all: %v)", e.pod.spec.name, e.container, k, o.attrs[k], v, o.attrs)
		}
	}
	for k := range o.attrs {
		if strings.HasPrefix(k, "process.environment_variable.") {
			t.Errorf("%s/%s: env attribute %s was sent", e.pod.spec.name, e.container, k)
		}
	}
	if o.samples == 0 {
		t.Errorf("%s/%s: a resource without samples", e.pod.spec.name, e.container)
	}
}

// waitProfilesSince waits until three profiles of pid arrived after since,
// failing if the agent exits. The burners are niced beside the other system
// tests: on a busy 2-core machine, three reports with a sample of one can
// take longer than the 6 s they take when idle, hence a minute.
func (run *agentRun) waitProfilesSince(t *testing.T, pid int, since time.Time, what string) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, "three profiles of "+what, func() (bool, error) {
		if ok, err := run.proc.Exited(); ok {
			return false, fmt.Errorf("the agent exited (%v)", err)
		}
		n := 0
		for _, o := range run.rec.of(pid) {
			if o.at.After(since) {
				n++
			}
		}
		return n >= 3, nil
	})
}

// forbidden returns the first line of out in which the API server refused
// the agent something, or "".
func forbidden(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "forbidden") {
			return line
		}
	}
	return ""
}

// lateDiagnosis says why a pod's process (the late pod's, or the one created
// after the API server's restart) had no enriched profile in time: every
// profile of it, when it was sampled and accepted relative to its status
// naming its container, with the container.id the profiler gave it (the
// key k8s_attributes matches the pod by), the process's cgroup now, and the
// CPU it used since (few samples from a starved process read differently
// from profiles that arrive without k8s attributes).
func lateDiagnosis(t *testing.T, obs []observation, p *pod, container string, cpuAtNaming testenv.ProcStat) {
	t.Helper()
	pid, named := p.pids[container], p.named
	if now, err := testenv.ReadProcStat(pid); err == nil {
		t.Logf("late pod's process %d: %s of CPU since its status named its container %s ago",
			pid, (now.CPU - cpuAtNaming.CPU).Round(10*time.Millisecond), time.Since(named).Round(100*time.Millisecond))
	} else {
		t.Logf("late pod's process %d: %v", pid, err)
	}
	cgroup, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	t.Logf("its container's ID: %s; its /proc/%d/cgroup (%v):\n%s", p.ids[container], pid, err, cgroup)
	for _, o := range obs {
		t.Logf("  profile sampled at %+.2fs, accepted at %+.2fs from the naming: %d samples, container.id=%q, k8s.pod.name=%q",
			o.sampled.Sub(named).Seconds(), o.at.Sub(named).Seconds(), o.samples, o.attrs["container.id"], o.attrs["k8s.pod.name"])
	}
}
