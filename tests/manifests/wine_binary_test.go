package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// builderModule is one entry of an ocb builder config.
type builderModule struct {
	GoMod  string `json:"gomod"`
	Import string `json:"import,omitempty"`
}

// importPath is the package ocb imports for the entry.
func (m builderModule) importPath() string {
	if m.Import != "" {
		return m.Import
	}
	return strings.Fields(m.GoMod)[0]
}

// componentKinds are the builder config's lists of components, named as the
// Collector's config names their sections.
var componentKinds = []string{"receivers", "processors", "exporters", "extensions", "connectors"}

// readBuilderConfig returns the module lists of an ocb builder config by
// section (receivers, ..., providers, converters).
func readBuilderConfig(t *testing.T, path string) map[string][]builderModule {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal(mustRead(t, path), &cfg); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string][]builderModule{}
	for _, kind := range append(slices.Clone(componentKinds), "providers", "converters") {
		raw, err := yaml.Marshal(cfg[kind])
		if err != nil {
			t.Fatal(err)
		}
		var mods []builderModule
		if err := yaml.UnmarshalStrict(raw, &mods); err != nil {
			t.Fatalf("%s: %s: %v", path, kind, err)
		}
		out[kind] = mods
	}
	return out
}

// componentTypes returns, for each package, the component types its factory
// registers: the `type` of the metadata.yaml mdatagen generated it from, and
// its `deprecated_type` (an alias the factory also answers to, such as
// otlphttp for otlp_http), found through `go list` in the module ocb
// generated in _build (which holds every version the binaries are built
// with).
func componentTypes(t *testing.T, pkgs []string) map[string][]string {
	t.Helper()
	build := repoPath(t, "_build")
	if _, err := os.Stat(filepath.Join(build, "go.mod")); err != nil {
		t.Fatalf("%s has no go.mod (%v): run `make sources` first", build, err)
	}
	cmd := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}"}, pkgs...)...)
	cmd.Dir = build
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %v in %s: %v\n%s", pkgs, build, err, stderr)
	}
	types := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, dir, _ := strings.Cut(line, "\t")
		var md struct {
			Type           string `json:"type"`
			DeprecatedType string `json:"deprecated_type"`
		}
		file := filepath.Join(dir, "metadata.yaml")
		if err := yaml.Unmarshal(mustRead(t, file), &md); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if md.Type == "" {
			t.Fatalf("%s names no component type", file)
		}
		types[pkg] = []string{md.Type}
		if md.DeprecatedType != "" {
			types[pkg] = append(types[pkg], md.DeprecatedType)
		}
	}
	for _, p := range pkgs {
		if len(types[p]) == 0 {
			t.Fatalf("go list did not find %s in %s:\n%s", p, build, out)
		}
	}
	return types
}

// configComponents returns the component types a Collector config defines
// (the part of each ID before "/"), by section.
func configComponents(t *testing.T, name string, data []byte) map[string][]string {
	t.Helper()
	cfg := parseConfig(t, name, data)
	out := map[string][]string{}
	for _, kind := range componentKinds {
		section, _ := cfg[kind].(map[string]any)
		for id := range section {
			typ, _, _ := strings.Cut(id, "/")
			out[kind] = append(out[kind], typ)
		}
	}
	return out
}

// The configurations the Wine test runs: the shipped pprof.yaml (in the
// Windows archive), the docs' pprof config verbatim, and the profile view's.
func wineConfigs(t *testing.T) map[string][]byte {
	return map[string][]byte{
		"distributions/otelcol-nexovue/pprof.yaml":  mustRead(t, repoPath(t, "distributions", "otelcol-nexovue", "pprof.yaml")),
		"tests/testdata/pprof-docs.yaml":            mustRead(t, repoPath(t, "tests", "testdata", "pprof-docs.yaml")),
		"the profile view's (windows_view_test.go)": []byte(wineViewConfig("127.0.0.1:1", "127.0.0.1:2")),
	}
}

// TestWineBinaryCoversPprofConfigs keeps the small Windows binary of the Wine
// test (internal/buildtools/wine-builder.yaml) honest: every component the
// shipped pprof.yaml, the docs' pprof config and the view test name is in
// it; each of its entries is in builder-config.yaml, the same module and
// version (it is a part of the shipped binary, nothing else); and its
// providers and converters are the shipped binary's, so configurations
// resolve the same.
func TestWineBinaryCoversPprofConfigs(t *testing.T) {
	wine := readBuilderConfig(t, repoPath(t, "internal", "buildtools", "wine-builder.yaml"))
	full := readBuilderConfig(t, repoPath(t, "builder-config.yaml"))

	for kind, mods := range wine {
		for _, m := range mods {
			if !slices.Contains(full[kind], m) {
				t.Errorf("wine-builder.yaml %s: %+v is not in builder-config.yaml's %s: the Wine binary must be a part of the shipped one", kind, m, kind)
			}
		}
	}
	for _, kind := range []string{"providers", "converters"} {
		if !slices.Equal(wine[kind], full[kind]) {
			t.Errorf("wine-builder.yaml %s %+v, builder-config.yaml %+v: they must be the same, so a configuration resolves as in the shipped binary", kind, wine[kind], full[kind])
		}
	}

	var pkgs []string
	for _, kind := range componentKinds {
		for _, m := range wine[kind] {
			pkgs = append(pkgs, m.importPath())
		}
	}
	types := componentTypes(t, pkgs)
	has := map[string][]string{}
	for _, kind := range componentKinds {
		for _, m := range wine[kind] {
			has[kind] = append(has[kind], types[m.importPath()]...)
		}
	}
	t.Logf("the Wine binary's components: %v", has)

	for name, data := range wineConfigs(t) {
		used := configComponents(t, name, data)
		if len(used["receivers"]) == 0 || len(used["exporters"]) == 0 {
			t.Fatalf("%s: found no receivers or exporters in it: %v", name, used)
		}
		for kind, typs := range used {
			for _, typ := range typs {
				if !slices.Contains(has[kind], typ) {
					t.Errorf("%s names the %s %q, which the Wine binary lacks: add its entry from builder-config.yaml to internal/buildtools/wine-builder.yaml", name, kind, typ)
				}
			}
		}
	}
}
