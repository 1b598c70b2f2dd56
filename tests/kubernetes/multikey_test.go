// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// TestKubernetesMultiKey runs the agent the chart installs with
// ci/multi-key-values.yaml (its config, routing rules included, read back
// from a real kube-apiserver) against real processes in the cgroups of pods
// in three namespaces, with the teams' keys as files where the chart mounts
// their Secrets: each key of the ingest double receives its own namespaces'
// profiles and no other's.
func TestKubernetesMultiKey(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	installChart(t, c, "multi-key")
	routing := agentConfig(t, c)
	const keysDir = "/etc/nexovue/keys/"
	if !strings.Contains(routing, keysDir+"payments") || !strings.Contains(routing, keysDir+"search") {
		t.Fatalf("the chart's routing rules do not read the payments and search keys from %s:\n%s", keysDir, routing)
	}
	mounts := c.kubectl(t, "-n", agentNamespace, "get", "daemonset", agentName, "-o",
		`jsonpath={range .spec.template.spec.containers[0].volumeMounts[*]}{.name}={.mountPath}{"\n"}{end}`)
	if !strings.Contains(mounts, "team-keys="+strings.TrimSuffix(keysDir, "/")+"\n") {
		t.Fatalf("the DaemonSet does not mount the team keys at %s:\n%s", keysDir, mounts)
	}
	node := "nxv-node-" + randHex(t, 3)
	cg := newCgroups(t)
	burner := buildBurner(t)
	noEnv := []string{"OTEL_SERVICE_NAME=", "OTEL_RESOURCE_ATTRIBUTES="}

	// The service of each pod is its Deployment (docs/service-names.md,
	// "On Kubernetes"); the key its namespace's team's.
	teams := []struct{ key, name, namespace, deployment string }{
		{"nxv-k8s-payments-key", "payments", "payments", "pay-api"},
		{"nxv-k8s-search-key", "search", "search-eu", "indexer"},
		{testKey, "platform", "shop", "cart"},
	}
	keys := map[string]string{}
	for _, tm := range teams {
		keys[tm.key] = tm.name
		hash := "6c9f8d7b5"
		p := createPod(t, c, node, podSpec{namespace: tm.namespace, name: tm.deployment + "-" + hash + "-abcde",
			owner: &owner{"ReplicaSet", tm.deployment + "-" + hash}, labels: map[string]string{"pod-template-hash": hash}, env: noEnv})
		startProcesses(t, cg, burner, p)
		nameContainers(t, c, p)
	}
	// The Secrets' files, where the test can write them.
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "keys", "payments"), teams[0].key+"\n")
	mustWrite(t, filepath.Join(dir, "keys", "search"), teams[1].key+"\n")
	keyFiles := func(cfg string) string { return strings.ReplaceAll(cfg, keysDir, filepath.Join(dir, "keys")+"/") }

	run := startAgentWith(t, c, node, true, keyFiles, nil, ingest.Config{Keys: []string{teams[0].key, teams[1].key, testKey}, KeyNames: keys})
	seen := func() string {
		var b strings.Builder
		for name, ks := range run.srv.Stats().Keys {
			fmt.Fprintf(&b, "%s: %v %v; ", name, ks.RequestsByStatus, ks.Services)
		}
		return b.String()
	}
	testenv.WaitFor(t, 2*time.Minute, "every team's service at its own key", func() (bool, error) {
		st := run.srv.Stats()
		for _, tm := range teams {
			if st.Keys[tm.name].Services[tm.deployment] == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	st := run.srv.Stats()
	for _, tm := range teams {
		for _, other := range teams {
			if other.name != tm.name && st.Keys[tm.name].Services[other.deployment] > 0 {
				t.Errorf("key %s received %s's service %s: %s", tm.name, other.namespace, other.deployment, seen())
			}
		}
	}
	for _, tm := range teams[:2] {
		// Only the team's own pods send with a rule's key; everything else
		// on the node goes with the default key.
		if len(st.Keys[tm.name].Services) != 1 {
			t.Errorf("key %s received services other than %s: %s", tm.name, tm.deployment, seen())
		}
	}
	if n := st.RequestsByStatus[401]; n > 0 {
		t.Errorf("%d requests refused for their key: %s", n, seen())
	}
	if out := run.proc.Output(); strings.Contains(out, teams[0].key) || strings.Contains(out, teams[1].key) {
		t.Error("the agent logged a team's key")
	}
	t.Logf("kubernetes multi-key: %s", seen())
}
