// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Chart is the chart's folder, relative to the repository's top folder.
const Chart = "charts/otelcol-nexovue"

// KubeVersion is the Kubernetes version the chart is rendered and linted
// for: the test API server's (k8s.io/kubernetes in internal/tools/kube).
// Helm built without its ldflags would otherwise assume its client's.
const KubeVersion = "1.34.4"

// Helm returns the helm `make helm` builds ($HELM_BIN, else .tools/helm); a
// missing one fails the test.
func Helm(t testing.TB) string {
	t.Helper()
	path := os.Getenv("HELM_BIN")
	if path == "" {
		path = filepath.Join(RepoRoot(t), ".tools", "helm")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("helm not found (%v): run `make helm`, or set HELM_BIN", err)
	}
	return path
}

// ValuesSet is one of the chart's values files the tests render and
// install: "default" (values.yaml alone) and each ci/<name>-values.yaml.
type ValuesSet struct {
	Name string
	File string // absolute; "" for default
}

// Args are helm's arguments selecting the set's values.
func (v ValuesSet) Args() []string {
	if v.File == "" {
		return nil
	}
	return []string{"-f", v.File}
}

// ChartValuesSets returns the default set and every ci/*-values.yaml, by name.
func ChartValuesSets(t testing.TB) []ValuesSet {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(RepoRoot(t), Chart, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	sets := []ValuesSet{{Name: "default"}}
	for _, f := range files {
		sets = append(sets, ValuesSet{Name: strings.TrimSuffix(filepath.Base(f), "-values.yaml"), File: f})
	}
	if len(sets) < 5 {
		t.Fatalf("found only %d values sets in %s/ci: %v", len(sets), Chart, sets)
	}
	return sets
}

// RunHelm runs helm with args from the repository's top folder and returns
// its standard output, its standard error and its error.
func RunHelm(t testing.TB, env []string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Helm(t), args...)
	cmd.Dir = RepoRoot(t)
	cmd.Env = append(append(os.Environ(), HelmHomes(t)...), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// HelmHomes are environment variables giving helm a cache, config and data
// folder of the test's own: nothing is read from or left in the user's.
func HelmHomes(t testing.TB) []string {
	t.Helper()
	dir := t.TempDir()
	return []string{"HELM_CACHE_HOME=" + filepath.Join(dir, "cache"), "HELM_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"HELM_DATA_HOME=" + filepath.Join(dir, "data")}
}

// RenderChart runs `helm template <release> <chart> --namespace <ns>
// --kube-version KubeVersion <args...>` and fails the test on error.
func RenderChart(t testing.TB, release, namespace string, args ...string) string {
	t.Helper()
	argv := append([]string{"template", release, Chart, "--namespace", namespace, "--kube-version", KubeVersion}, args...)
	out, errs, err := RunHelm(t, nil, argv...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(argv, " "), err, errs)
	}
	return out
}
