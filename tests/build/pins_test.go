// Package build checks the distribution's manifest against this module, so
// that every version stays pinned in one place.
package build

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

type manifest struct {
	Receivers  []module `yaml:"receivers"`
	Processors []module `yaml:"processors"`
	Exporters  []module `yaml:"exporters"`
	Extensions []module `yaml:"extensions"`
	Providers  []module `yaml:"providers"`
	Converters []module `yaml:"converters"`
	Replaces   []string `yaml:"replaces"`
}

type module struct {
	GoMod  string `yaml:"gomod"`
	Import string `yaml:"import"`
}

const self = "github.com/nexovue/otelcol-nexovue"

// pins returns module → version from builder-config.yaml: the gomod lines and
// the replaces that name a version.
func pins(t *testing.T) (map[string]string, manifest) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "builder-config.yaml"))
	require.NoError(t, err)
	var m manifest
	require.NoError(t, yaml.Unmarshal(data, &m))
	out := map[string]string{}
	add := func(mod, version string) {
		if prev, ok := out[mod]; ok && prev != version {
			t.Errorf("builder-config.yaml pins %s twice: %s and %s", mod, prev, version)
		}
		out[mod] = version
	}
	for _, list := range [][]module{m.Receivers, m.Processors, m.Exporters, m.Extensions, m.Providers, m.Converters} {
		for _, c := range list {
			f := strings.Fields(c.GoMod)
			require.Len(t, f, 2, "gomod %q must be `module version`", c.GoMod)
			add(f[0], f[1])
		}
	}
	for _, r := range m.Replaces {
		from, to, ok := strings.Cut(r, "=>")
		require.True(t, ok, "replace %q", r)
		if f := strings.Fields(to); len(f) == 2 {
			add(strings.TrimSpace(from), f[1])
		}
	}
	return out, m
}

// requires returns module → version from this repository's go.mod.
func requires(t *testing.T) map[string]string {
	return requiresOf(t, filepath.Join(testenv.RepoRoot(t), "go.mod"))
}

// requiresOf returns module → version from the go.mod at path.
func requiresOf(t *testing.T, path string) map[string]string {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	line := regexp.MustCompile(`^\s*(?:require\s+)?([a-zA-Z0-9./_~-]+)\s+(v[^\s]+)`)
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if m := line.FindStringSubmatch(s.Text()); m != nil && !strings.HasPrefix(strings.TrimSpace(s.Text()), "module") {
			out[m[1]] = m[2]
		}
	}
	require.NoError(t, s.Err())
	return out
}

// TestVersionsPinnedOnce: a module that both the manifest and go.mod name
// has one version, and our own components come from this checkout.
func TestVersionsPinnedOnce(t *testing.T) {
	p, m := pins(t)
	r := requires(t)
	shared := 0
	for mod, v := range p {
		if have, ok := r[mod]; ok {
			shared++
			assert.Equal(t, v, have, "%s: builder-config.yaml pins %s, go.mod requires %s", mod, v, have)
		}
	}
	assert.Positive(t, shared, "go.mod and builder-config.yaml share no module: is the parsing broken?")
	assert.Contains(t, m.Replaces, self+" => ../", "our components must be built from this checkout")
	for _, list := range [][]module{m.Receivers, m.Processors, m.Exporters, m.Converters} {
		for _, c := range list {
			if strings.HasPrefix(c.GoMod, self+" ") {
				_, err := os.Stat(filepath.Join(testenv.RepoRoot(t), strings.TrimPrefix(c.Import, self)))
				assert.NoError(t, err, "component %s", c.Import)
			}
		}
	}
}

// TestCollectorCoreVersions: every Collector core module in go.mod is at
// v1.67.0 (stable modules) or v0.161.0 (the others), the set that ships together.
func TestCollectorCoreVersions(t *testing.T) {
	n := 0
	for mod, v := range requires(t) {
		if !strings.HasPrefix(mod, "go.opentelemetry.io/collector") {
			continue
		}
		n++
		assert.Contains(t, []string{"v1.67.0", "v0.161.0"}, v, "%s %s is not part of Collector 0.161.0", mod, v)
	}
	assert.Greater(t, n, 10)
}

// TestSameVersionsAsDistribution: every module that go.mod and the
// distribution's go.mod (written by ocb into _build by make build) both
// require is at the same version in both. Otherwise go vet and go test
// compile again, for this module, every package that depends on one of
// them (a different genproto compiles gRPC and most of the Collector again)
// instead of reusing what make build compiled.
func TestSameVersionsAsDistribution(t *testing.T) {
	dist := filepath.Join(testenv.RepoRoot(t), "_build", "go.mod")
	if _, err := os.Stat(dist); err != nil {
		t.Fatalf("%s is missing (%v): run `make build` (or make sources) first", dist, err)
	}
	ours, theirs := requires(t), requiresOf(t, dist)
	shared := 0
	for mod, v := range ours {
		if d, ok := theirs[mod]; ok {
			shared++
			assert.Equal(t, d, v, "%s: go.mod requires %s, the distribution %s: go get %s@%s", mod, v, d, mod, d)
		}
	}
	assert.Greater(t, shared, 50, "go.mod and %s share few modules: is the parsing broken?", dist)
}
