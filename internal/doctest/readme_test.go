// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// dated matches a date as the measurements are dated ("4 December 2026",
// "2026-12-05").
var dated = regexp.MustCompile(`\b\d{1,2} (January|February|March|April|May|June|July|August|September|October|November|December) \d{4}\b|\b20\d\d-\d\d-\d\d\b`)

// TestReadme keeps the README what issue 45 made it: at most 150 lines,
// the two commands for a fresh machine in its first block, and no dated
// measurement (figures live in BENCHMARKS.md and the pages that need them).
func TestReadme(t *testing.T) {
	root := testenv.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if n := strings.Count(text, "\n"); n > 150 {
		t.Errorf("README.md has %d lines, at most 150: move the detail to a page of docs/", n)
	}
	blocks, err := Blocks(root, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatal("README.md has no fenced block: the two commands must be its first")
	}
	lines := shellLinesOf(blocks[0].Text)
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "make run") || !strings.HasPrefix(lines[1], "make test") {
		t.Errorf("README.md's first block must be `make run` then `make test` (the project's rule), got %q", lines)
	}
	for i, l := range strings.Split(text, "\n") {
		if m := dated.FindString(l); m != "" {
			t.Errorf("README.md:%d: %q dates a measurement: figures live in BENCHMARKS.md and the pages, with their command", i+1, m)
		}
	}
}

func shellLinesOf(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, s)
		}
	}
	return out
}
