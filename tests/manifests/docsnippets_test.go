// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/internal/doctest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// snippetEnv is the environment the pages' configs and shell lines are
// validated and run with: the variables they read that have no default.
// A ${env:NAME} without a default not listed here gets a placeholder.
func snippetEnv(t *testing.T) []string {
	return cleanEnv(
		"NEXOVUE_KEY="+validateKey,
		"NEXOVUE_KEY_PAYMENTS="+validateKey+"-payments",
		"NEXOVUE_KEY_SEARCH="+validateKey+"-search",
		nodeNameEnv+"=validate-node",
		"NEXOVUE_METRICS_OTLP_ENDPOINT=https://metrics.example.com:4318",
		"NEXOVUE_STORAGE_DIR="+t.TempDir(),
		"VIEW_TOKEN=view-token",
	)
}

var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// withPlaceholders adds a value for every ${env:NAME} (no default) of text
// that env does not set.
func withPlaceholders(env []string, text string) []string {
	set := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	for _, m := range envRef.FindAllStringSubmatch(text, -1) {
		if !set[m[1]] {
			env = append(env, m[1]+"=snippet-"+strings.ToLower(m[1]))
			set[m[1]] = true
		}
	}
	return env
}

// docBlocks returns every fenced block of the repository's pages.
func docBlocks(t *testing.T) []doctest.Block {
	t.Helper()
	root := testenv.RepoRoot(t)
	pages, err := doctest.Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []doctest.Block
	for _, p := range pages {
		bs, err := doctest.Blocks(root, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bs...)
	}
	return out
}

// TestDocsConfigsValidate validates every collector config of the pages
// (README.md, docs/, the component and distribution READMEs: each ```yaml
// block with receivers: or exporters:) with the built binary, as
// internal/doctest's package comment describes: alone, or merged over the
// shipped config its marker names; a block marked as not a whole config
// must fail alone.
func TestDocsConfigsValidate(t *testing.T) {
	bin := testenv.Binary(t)
	root := testenv.RepoRoot(t)
	dir := t.TempDir()
	n := 0
	for _, b := range docBlocks(t) {
		if !b.IsCollectorConfig() {
			continue
		}
		n++
		path := filepath.Join(dir, strings.NewReplacer("/", "_", ".md", "").Replace(b.File)+"-"+strconv.Itoa(b.Line)+".yaml")
		if err := os.WriteFile(path, []byte(b.Text), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Run(b.Where(), func(t *testing.T) {
			env := withPlaceholders(snippetEnv(t), b.Text)
			args := []string{testenv.FeatureGate}
			config := path
			if base, ok := b.MergedOver(); ok {
				// --config twice: the Collector merges the second over the first.
				config = filepath.Join(root, filepath.FromSlash(base))
				data, err := os.ReadFile(config)
				if err != nil {
					t.Fatal(err)
				}
				env = withPlaceholders(env, string(data))
				args = append(args, "--config", path)
			}
			out, err := validate(t, bin, config, env, args...)
			switch {
			case b.NotWhole():
				if err == nil {
					t.Errorf("%s is marked as not a whole config, but validates alone: remove the marker", b.Where())
				}
			case err != nil:
				t.Errorf("%s: validate: %v\n%s\n--- the block:\n%s", b.Where(), err, out, b.Text)
			}
			if strings.Contains(out, validateKey) {
				t.Errorf("validate printed the ingest key:\n%s", out)
			}
		})
	}
	if n < 10 {
		t.Fatalf("found %d collector configs in the pages: is the block reader broken?", n)
	}
}

// TestDocsShellLines runs the shell blocks marked
// `<!-- tested: TestDocsShellLines [in <folder>] -->`, each line (a line
// ending in \ joined with the next) as written, with bash, from that folder
// of the repository, the built binary first on PATH as otelcol-nexovue.
func TestDocsShellLines(t *testing.T) {
	bin := testenv.Binary(t)
	root := testenv.RepoRoot(t)
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "otelcol-nexovue")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range docBlocks(t) {
		test, dir, ok := b.Tested()
		if !ok || test != doctest.ShellRunner {
			continue
		}
		for _, line := range shellLines(b.Text) {
			n++
			t.Run(b.Where(), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", line)
				cmd.Dir = filepath.Join(root, filepath.FromSlash(dir))
				cmd.Env = append(withPlaceholders(snippetEnv(t), line), "PATH="+binDir+":"+os.Getenv("PATH"))
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Errorf("%s: %s (in %s): %v\n%s", b.Where(), line, dir, err, out)
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("no shell line of the pages is marked as tested: is the block reader broken?")
	}
}

// shellLines returns a block's commands: lines joined over a trailing \,
// without blank lines and comments.
func shellLines(text string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(text, "\n") {
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		l = cur + l
		cur = ""
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, s)
		}
	}
	return out
}
