// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// The chart on the real API server: the README's install line, then each
// values set installed, upgraded and uninstalled as release chartRelease in
// namespace chartNamespace (the README's names).
const (
	chartRelease   = "otelcol-nexovue"
	chartNamespace = "otelcol-nexovue"
	chartAgent     = "otelcol-nexovue-agent"
	readmeInstall  = "helm install " + chartRelease + " ./charts/otelcol-nexovue "
	// chartKeyMarker stands for an ingest key.
	chartKeyMarker = "nexovue-key-MARKER-2b81d4"
)

// helm runs helm on the cluster and fails the test on error.
func (c *cluster) helm(t testing.TB, args ...string) string {
	t.Helper()
	out, errs, err := testenv.RunHelm(t, []string{"KUBECONFIG=" + c.kubeconfig}, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, errs)
	}
	return out
}

// releaseObjects returns the release's manifest (helm get manifest) without
// the documents of the kinds given.
func (c *cluster) releaseObjects(t *testing.T, without ...string) string {
	t.Helper()
	var keep []string
	for _, doc := range strings.Split(c.helm(t, "get", "manifest", chartRelease, "--namespace", chartNamespace), "\n---") {
		skip := !strings.Contains(doc, "\nkind: ")
		for _, k := range without {
			skip = skip || strings.Contains(doc, "\nkind: "+k+"\n")
		}
		if !skip {
			keep = append(keep, doc)
		}
	}
	return strings.Join(keep, "\n---")
}

// present lists, as kind/name, the manifest's objects the API server holds.
func (c *cluster) present(t *testing.T, manifest string) []string {
	t.Helper()
	out, err := c.kubectlIn(manifest, "get", "--ignore-not-found", "-o", "name", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(out)
}

// installLine returns the README's one `helm install` line, and fails the
// test unless docs/install-kubernetes.md gives the same line.
func installLine(t *testing.T) string {
	t.Helper()
	root := testenv.RepoRoot(t)
	find := func(page string) []string {
		f, err := os.Open(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var lines []string
		for s := bufio.NewScanner(f); s.Scan(); {
			if l := strings.TrimSpace(s.Text()); strings.HasPrefix(l, readmeInstall) {
				lines = append(lines, l)
			}
		}
		return lines
	}
	readme := find("README.md")
	if len(readme) != 1 {
		t.Fatalf("README.md has %d lines starting %q, want one: %q", len(readme), readmeInstall, readme)
	}
	if doc := find("docs/install-kubernetes.md"); len(doc) == 0 || doc[0] != readme[0] {
		t.Errorf("docs/install-kubernetes.md's first install line %q is not the README's %q", doc, readme[0])
	}
	return readme[0]
}

// TestChartOnAPIServer installs the chart on a real kube-apiserver and
// etcd: the README's install line as written (helm from `make helm` on
// PATH, the key in $NEXOVUE_KEY), then every values set; each install must
// have every object accepted (server-side apply, strict), an upgrade with a
// changed value must show in the ConfigMap and roll the pods' checksum, a
// rotated Secret must roll the other checksum, the gateway tier must read
// back as issue 31 made it, and helm uninstall must leave none of the
// chart's objects. No hook may need a kubelet: there is none. Then the
// kustomize bases are applied to the same server. (One cluster for all:
// the package's tests run two at a time on two cores, and the naming
// test, the longest, should not wait for more of them.)
func TestChartOnAPIServer(t *testing.T) {
	t.Parallel()
	line := installLine(t)
	c := startCluster(t)
	// The chart's kubeVersion constraint reads the server's version, and
	// the other chart tests render for testenv.KubeVersion: this one.
	var version struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal([]byte(c.kubectl(t, "get", "--raw", "/version")), &version); err != nil {
		t.Fatal(err)
	}
	if v := version.GitVersion; v != "v"+testenv.KubeVersion {
		t.Fatalf("the test API server reports version %q, want v%s: rebuild it with `make kube-apiserver` (since the chart, it is stamped with the pinned k8s.io/kubernetes version), or update testenv.KubeVersion to internal/tools/kube/go.mod's", v, testenv.KubeVersion)
	}

	t.Run("README line", func(t *testing.T) {
		bin := t.TempDir()
		if err := os.Symlink(testenv.Helm(t), filepath.Join(bin, "helm")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", line)
		cmd.Dir = testenv.RepoRoot(t)
		cmd.Env = append(append(os.Environ(), testenv.HelmHomes(t)...), "PATH="+bin+":"+os.Getenv("PATH"),
			"KUBECONFIG="+c.kubeconfig, "NEXOVUE_KEY="+chartKeyMarker)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		if strings.Contains(string(out), chartKeyMarker) {
			t.Errorf("helm install printed the key:\n%s", out)
		}
		t.Logf("README line: helm install to every object accepted took %v", took.Round(time.Millisecond))
		enc := strings.TrimSpace(c.kubectl(t, "-n", chartNamespace, "get", "secret", chartRelease+"-ingest-key", "-o", "jsonpath={.data.key}"))
		if key, err := base64.StdEncoding.DecodeString(enc); err != nil || string(key) != chartKeyMarker {
			t.Errorf("Secret %s-ingest-key holds %q (%v), want $NEXOVUE_KEY", chartRelease, key, err)
		}
		// What the API server stored, but the Secret: no key anywhere.
		stored, err := c.kubectlIn(c.releaseObjects(t, "Secret"), "get", "-o", "yaml", "-f", "-")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stored, chartKeyMarker) || !strings.Contains(stored, "kind: DaemonSet") {
			t.Errorf("the objects as stored (but the Secret) hold the key, or lack the DaemonSet:\n%s", stored)
		}
		uninstallLeavesNothing(t, c)
		if out, err := c.kubectlOut("-n", chartNamespace, "get", "secret", chartRelease+"-ingest-key", "--ignore-not-found", "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("the chart's Secret outlived helm uninstall: %q %v", out, err)
		}
	})

	// The Secrets the values sets name (existingSecret), as a user creates
	// them before installing.
	for _, s := range []string{"nexovue-ingest-key", "nexovue-ingest-key-payments", "nexovue-ingest-key-search"} {
		c.kubectl(t, "-n", chartNamespace, "create", "secret", "generic", s, "--from-literal=key=k-"+s)
	}
	c.kubectl(t, "-n", chartNamespace, "create", "secret", "generic", "nexovue-view-token", "--from-literal=token=view-token")
	// The API server's EndpointSlice, which the NetworkPolicies look up.
	c.apply(t, apiServerSlice)

	for _, set := range testenv.ChartValuesSets(t) {
		t.Run(set.Name, func(t *testing.T) {
			args := append([]string{"install", chartRelease, testenv.Chart, "--namespace", chartNamespace}, set.Args()...)
			start := time.Now()
			c.helm(t, args...)
			took := time.Since(start)
			manifest := c.releaseObjects(t)
			want := strings.Count(manifest, "\nkind: ")
			if got := c.present(t, manifest); len(got) != want || want == 0 {
				t.Errorf("after helm install the API server holds %d of the release's %d objects: %v", len(got), want, got)
			}
			t.Logf("values set %s: helm install to all %d objects accepted took %v", set.Name, want, took.Round(time.Millisecond))
			switch set.Name {
			case "default":
				upgradeRolls(t, c)
			case "gateway":
				checkGatewayTier(t, c, chartNamespace)
				checkGeneratedTLSKept(t, c)
				checkAPIServerEgress(t, c, chartNamespace)
			}
			uninstallLeavesNothing(t, c)
		})
	}

	t.Run("cert-manager", func(t *testing.T) { checkCertManager(t, c) })
	t.Run("network policies", func(t *testing.T) { checkNetworkPolicyRules(t, c) })

	// The kustomize bases, each the chart rendered (tests/manifests checks
	// that), applied with `kubectl apply -k`, server-side with strict field
	// validation, in their namespace, the gateway's last.
	t.Run("kustomize bases", func(t *testing.T) {
		applyDistributions(t, c)
		checkBaseTLSSecrets(t, c)
		if out, err := c.kubectlOut("apply", "-k", filepath.Join(testenv.RepoRoot(t), "distributions", "kubernetes", "gateway"), "--server-side", "--validate=strict", "--field-manager=kubectl"); err != nil {
			t.Fatalf("apply distributions/kubernetes/gateway: %v\n%s", err, out)
		}
		checkGatewayTier(t, c, agentNamespace)
	})
}

// upgradeRolls upgrades the default release with a changed value, then
// after a rotated Secret, and reads the ConfigMap and the DaemonSet's
// checksum annotations back from the API server.
func upgradeRolls(t *testing.T, c *cluster) {
	t.Helper()
	get := func(what, jsonpath string) string {
		return c.kubectl(t, "-n", chartNamespace, "get", what, "-o", "jsonpath="+jsonpath)
	}
	const configSum, secretsSum = `{.spec.template.metadata.annotations.checksum/config}`, `{.spec.template.metadata.annotations.checksum/secrets}`
	cfg0, sec0 := get("daemonset/"+chartAgent, configSum), get("daemonset/"+chartAgent, secretsSum)
	if cfg0 == "" || sec0 == "" {
		t.Fatalf("the DaemonSet's pods carry no checksum annotations (config %q, secrets %q)", cfg0, sec0)
	}
	c.helm(t, "upgrade", chartRelease, testenv.Chart, "--namespace", chartNamespace, "--reuse-values", "--set", "agent.samplesPerSecond=29")
	if data := get("configmap/"+chartAgent, `{.data.config\.yaml}`); !strings.Contains(data, "samples_per_second: 29") {
		t.Errorf("after helm upgrade --set agent.samplesPerSecond=29 the ConfigMap reads:\n%s", data)
	}
	cfg1 := get("daemonset/"+chartAgent, configSum)
	if cfg1 == cfg0 {
		t.Error("helm upgrade changed the config but not the DaemonSet's checksum/config: the pods would not roll")
	}
	if sec1 := get("daemonset/"+chartAgent, secretsSum); sec1 != sec0 {
		t.Error("helm upgrade of a config value changed checksum/secrets")
	}
	// The key rotated in its Secret, then an upgrade: the pods roll.
	rotated := c.kubectl(t, "-n", chartNamespace, "create", "secret", "generic", "nexovue-ingest-key", "--from-literal=key=rotated", "--dry-run=client", "-o", "yaml")
	if _, err := c.kubectlIn(rotated, "apply", "--server-side", "--force-conflicts", "--field-manager=test", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	c.helm(t, "upgrade", chartRelease, testenv.Chart, "--namespace", chartNamespace, "--reuse-values")
	if sec2 := get("daemonset/"+chartAgent, secretsSum); sec2 == sec0 {
		t.Error("after the key's Secret changed, helm upgrade left checksum/secrets as it was: the pods would keep the old key")
	}
	if cfg2 := get("daemonset/"+chartAgent, configSum); cfg2 != cfg1 {
		t.Error("a rotated Secret changed checksum/config")
	}
}

// uninstallLeavesNothing uninstalls the release and checks that none of its
// objects is left (cluster-scoped ones included).
func uninstallLeavesNothing(t *testing.T, c *cluster) {
	t.Helper()
	manifest := c.releaseObjects(t)
	if len(c.present(t, manifest)) == 0 {
		t.Fatal("the release's objects are not there before helm uninstall")
	}
	c.helm(t, "uninstall", chartRelease, "--namespace", chartNamespace, "--wait")
	testenv.WaitFor(t, 30*time.Second, "the release's objects to be deleted", func() (bool, error) {
		return len(c.present(t, manifest)) == 0, nil
	})
	if out := c.kubectl(t, "-n", chartNamespace, "get", "secrets", "-l", "owner=helm", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("helm's release records outlived the uninstall: %s", out)
	}
}
