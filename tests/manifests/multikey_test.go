package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

const multiKeyDir = "distributions/kubernetes/agent-multi-key"

// TestKustomizeAgentMultiKey: the base's agent config holds the routing
// rules and the agent mounts the teams' key Secrets; every rule's key_file
// is a file the keys volume holds; the config passes the built binary's
// validate, which rejects a broken rule.
func TestKustomizeAgentMultiKey(t *testing.T) {
	built := kustomize(t, multiKeyDir)
	ds := find[appsv1.DaemonSet](t, built, "", "DaemonSet", agentName)
	spec := &ds.Spec.Template.Spec
	c := container(t, spec)
	if want := []string{"--config=/etc/otelcol/config.yaml", "--feature-gates=service.profilesSupport"}; !slices.Equal(c.Args, want) {
		t.Errorf("agent args %v, want %v", c.Args, want)
	}
	if envVar(c, ingestKeyEnv) == nil || !spec.HostPID {
		t.Errorf("the overlay lost the agent's %s (the default key) or hostPID", ingestKeyEnv)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	files := map[string]string{} // path in the container -> Secret
	for _, v := range spec.Volumes {
		if v.Name != "team-keys" {
			continue
		}
		if v.Projected == nil {
			t.Fatal("team-keys is not a projected volume of Secrets")
		}
		for _, s := range v.Projected.Sources {
			if s.Secret == nil || len(s.Secret.Items) != 1 || s.Secret.Items[0].Key != "key" {
				t.Fatalf("team-keys source %+v: want one Secret's `key`", s)
			}
			files[filepath.Join(mounts["team-keys"], s.Secret.Items[0].Path)] = s.Secret.Name
		}
	}
	agent := find[corev1.ConfigMap](t, built, "", "ConfigMap", agentName).Data["config.yaml"]
	routing := parseConfig(t, "config.yaml", []byte(agent))
	rules, _ := get(routing, "exporters", "nexovue", "routing", "rules").([]any)
	if len(rules) != 2 {
		t.Fatalf("routing rules %v: want payments and search", rules)
	}
	for _, r := range rules {
		rule := r.(map[string]any)
		name, keyFile := rule["name"].(string), rule["key_file"].(string)
		if want := "nexovue-ingest-key-" + name; files[keyFile] != want {
			t.Errorf("rule %s: key_file %s is not Secret %s's key in the keys volume (%v)", name, keyFile, want, files)
		}
	}
	dir := t.TempDir()
	agentPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(agentPath, []byte(agent), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testenv.Binary(t)
	env := cleanEnv("NEXOVUE_KEY="+validateKey, nodeNameEnv+"=validate-node")
	if out, err := validate(t, bin, agentPath, env, testenv.FeatureGate); err != nil {
		t.Fatalf("validate of the agent config with the routing rules: %v\n%s", err, out)
	}
	broken := filepath.Join(dir, "broken.yaml")
	if !strings.Contains(agent, "name: payments") {
		t.Fatalf("no rule named payments in the agent's config:\n%s", agent)
	}
	if err := os.WriteFile(broken, []byte(strings.Replace(agent, "name: payments", "name: search", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := validate(t, bin, broken, env, testenv.FeatureGate); err == nil || !strings.Contains(out, "routing::rules::1::name") {
		t.Errorf("validate with two rules named search: err=%v, want an error naming routing::rules::1::name:\n%s", err, out)
	}
}
