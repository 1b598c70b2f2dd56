// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package doctest

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// TestLinks checks every relative link of every page: the file or folder
// it names exists in the repository, and an anchor (#...) names a heading
// of that page (or of the page itself).
func TestLinks(t *testing.T) {
	root := testenv.RepoRoot(t)
	pages, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d pages under %s: %v", len(pages), root, pages)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		anchors[rel] = Anchors(string(data))
		return anchors[rel], nil
	}
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range Links(string(data)) {
			if External(l.Target) {
				continue
			}
			checked++
			target, anchor, _ := strings.Cut(l.Target, "#")
			rel := page
			if target != "" {
				rel = path.Clean(path.Join(path.Dir(page), target))
				if strings.HasPrefix(rel, "../") {
					t.Errorf("%s:%d: link %q leaves the repository", page, l.Line, l.Target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", page, l.Line, l.Target, rel)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(rel, ".md") {
				continue
			}
			a, err := anchorsOf(rel)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", page, l.Line, l.Target, err)
				continue
			}
			if !a[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading with the anchor #%s", page, l.Line, l.Target, rel, anchor)
			}
		}
	}
	t.Logf("%d relative links checked in %d pages", checked, len(pages))
}

// TestMarkers checks the snippet markers (see the package comment): each is
// one this package knows, few blocks are marked as not a whole config, a
// merged fragment's base exists, and a tested block names the test that
// runs it and a folder that exists.
func TestMarkers(t *testing.T) {
	root := testenv.RepoRoot(t)
	pages, err := Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	notWhole, configs := 0, 0
	for _, page := range pages {
		blocks, err := Blocks(root, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if b.IsCollectorConfig() {
				configs++
			}
			if b.Marker == "" {
				continue
			}
			if base, ok := b.MergedOver(); ok {
				if !b.IsCollectorConfig() {
					t.Errorf("%s: a merged-over marker on a block that is not a collector config", b.Where())
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(base))); err != nil {
					t.Errorf("%s: merged over %s: %v", b.Where(), base, err)
				}
				continue
			}
			if b.NotWhole() {
				notWhole++
				if !b.IsCollectorConfig() {
					t.Errorf("%s: a not-a-whole-config marker on a block that is not a collector config", b.Where())
				}
				continue
			}
			if test, dir, ok := b.Tested(); ok {
				if test != ShellRunner {
					t.Errorf("%s: tested: %q: only %s runs marked blocks", b.Where(), b.Marker, ShellRunner)
				}
				if b.Lang != "sh" {
					t.Errorf("%s: tested: the block is %q, want sh", b.Where(), b.Lang)
				}
				if st, err := os.Stat(filepath.Join(root, filepath.FromSlash(dir))); dir == "" || err != nil || !st.IsDir() {
					t.Errorf("%s: tested: folder %q does not exist", b.Where(), dir)
				}
				continue
			}
			if strings.HasPrefix(b.Marker, "config:") || strings.HasPrefix(b.Marker, "tested") {
				t.Errorf("%s: unknown marker %q (see internal/doctest's package comment)", b.Where(), b.Marker)
			}
		}
	}
	if notWhole > MaxNotWhole {
		t.Errorf("%d blocks are marked `config: not a whole config` (at most %d): validate them whole or merged over a shipped config", notWhole, MaxNotWhole)
	}
	if configs < 10 {
		t.Errorf("found %d collector configs in the pages, expected more: is the block reader broken?", configs)
	}
	t.Logf("%d collector configs, %d marked not whole", configs, notWhole)
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Kubernetes (`kubernetes/`)":                                "kubernetes-kubernetes",
		"Go: inlined calls, start lines and PGO":                    "go-inlined-calls-start-lines-and-pgo",
		"Recipes: shaping profiles, metrics from profiles":          "recipes-shaping-profiles-metrics-from-profiles",
		"macOS and Windows (`make dist`)":                           "macos-and-windows-make-dist",
		"One DaemonSet, many nexovue projects (`agent-multi-key/`)": "one-daemonset-many-nexovue-projects-agent-multi-key",
		"[Link](x.md) and *emphasis*":                               "link-and-emphasis",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
	a := Anchors("# A\n## A\n```\n# not a heading\n```\n## B\n")
	for _, want := range []string{"a", "a-1", "b"} {
		if !a[want] {
			t.Errorf("Anchors: no %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Errorf("Anchors read a heading inside a fence")
	}
}
