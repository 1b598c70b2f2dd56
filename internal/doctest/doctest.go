// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package doctest reads the repository's Markdown pages for the tests that
// keep them true: their fenced blocks (the collector configs that
// tests/manifests validates with the built binary, and the shell lines it
// runs) and their links (checked by this package's own test).
//
// Conventions, written as an HTML comment on the line before a fence (a
// blank line between them is allowed):
//
//	<!-- config: merged over distributions/otelcol-nexovue/agent.yaml -->
//	    the block is a fragment of a config: it is validated merged over that
//	    file (`validate --config=<file> --config=<block>`, the Collector's
//	    own merge), not alone;
//	<!-- config: not a whole config -->
//	    the block is deliberately partial and is not validated; the test
//	    checks that it fails alone (else the marker is wrong) and that few
//	    blocks carry the marker (MaxNotWhole);
//	<!-- tested: TestDocsShellLines -->
//	    a ```sh block whose lines TestDocsShellLines (tests/manifests) runs,
//	    as written, with the built binary first on PATH, from the repository's
//	    top folder (or `<!-- tested: TestDocsShellLines in <folder> -->`).
//
// Every other ```yaml block with a line starting (indented or not) with
// `receivers:` or `exporters:` is a whole config and must validate alone.
package doctest // import "github.com/nexovue/otelcol-nexovue/internal/doctest"

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// MaxNotWhole is how many blocks in the whole repository may be marked
// `<!-- config: not a whole config -->`: the marker is for the odd
// fragment, not a way around the test.
const MaxNotWhole = 3

// ShellRunner is the one test that runs blocks marked `<!-- tested: ... -->`.
const ShellRunner = "TestDocsShellLines"

// Block is one fenced block of a page.
type Block struct {
	File   string // relative to the repository's top folder, with slashes
	Line   int    // of the opening fence, 1-based
	Lang   string // the fence's info string, e.g. "yaml"
	Text   string // the block's lines, the fence's indentation removed
	Marker string // the HTML comment before the fence, without <!-- -->, trimmed; "" if none
}

// Where names the block for messages: file:line.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

var collectorConfig = regexp.MustCompile(`(?m)^\s*(receivers|exporters):`)

// IsCollectorConfig reports whether the block is a collector config the
// snippet test validates: yaml with a line starting with receivers: or
// exporters: (indented or not).
func (b Block) IsCollectorConfig() bool {
	return (b.Lang == "yaml" || b.Lang == "yml") && collectorConfig.MatchString(b.Text)
}

// Pages returns the repository's Markdown pages: every *.md file except
// those under _build, .tools, .git, node_modules and testdata folders,
// relative to root, sorted.
func Pages(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "_build", ".tools", ".git", "node_modules", "testdata", ".mirror":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

var (
	fence   = regexp.MustCompile("^([ \t]*)(```+|~~~+)[ \t]*([A-Za-z0-9_+-]*)")
	comment = regexp.MustCompile(`^\s*<!--\s*(.*?)\s*-->\s*$`)
)

// Blocks returns the fenced blocks of a page (rel is its name relative to
// root).
func Blocks(root, rel string) ([]Block, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	var out []Block
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, mark := m[1], m[2]
		b := Block{File: rel, Line: i + 1, Lang: m[3]}
		for j := i - 1; j >= 0 && j >= i-2; j-- {
			if c := comment.FindStringSubmatch(lines[j]); c != nil {
				b.Marker = c[1]
				break
			}
			if strings.TrimSpace(lines[j]) != "" {
				break
			}
		}
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			if strings.HasPrefix(strings.TrimLeft(lines[j], " \t"), mark) && strings.TrimSpace(strings.TrimLeft(lines[j], " \t`~")) == "" {
				break
			}
			body = append(body, strings.TrimPrefix(lines[j], indent))
		}
		b.Text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
		i = j
	}
	return out, nil
}

// MergedOver returns the base config a fragment is validated over, from its
// marker `config: merged over <path>`, and whether it has one.
func (b Block) MergedOver() (string, bool) {
	const p = "config: merged over "
	if strings.HasPrefix(b.Marker, p) {
		return strings.TrimSpace(strings.TrimPrefix(b.Marker, p)), true
	}
	return "", false
}

// NotWhole reports whether the block is marked as deliberately partial.
func (b Block) NotWhole() bool { return b.Marker == "config: not a whole config" }

// Tested returns the test and folder named by a `tested: <Test> [in <folder>]`
// marker, and whether the block has one.
func (b Block) Tested() (test, dir string, ok bool) {
	if !strings.HasPrefix(b.Marker, "tested:") {
		return "", "", false
	}
	f := strings.Fields(strings.TrimPrefix(b.Marker, "tested:"))
	switch {
	case len(f) == 1:
		return f[0], ".", true
	case len(f) == 3 && f[1] == "in":
		return f[0], f[2], true
	}
	return strings.Join(f, " "), "", true
}
