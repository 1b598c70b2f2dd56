// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package doctest

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Link is one inline Markdown link of a page, outside fenced blocks and
// inline code.
type Link struct {
	Line   int
	Target string // as written, e.g. ../README.md#languages
}

var (
	inlineCode = regexp.MustCompile("`+[^`]*`+")
	// [text](target) and ![alt](target); text may hold one level of brackets.
	linkRE    = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlID    = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// outsideFences calls f for every line of text that is not inside a fenced
// block, with its 1-based number.
func outsideFences(text string, f func(n int, line string)) {
	inFence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if inFence != "" {
			if strings.HasPrefix(trimmed, inFence) && strings.TrimSpace(strings.Trim(trimmed, "`~")) == "" {
				inFence = ""
			}
			continue
		}
		if m := fence.FindStringSubmatch(line); m != nil {
			inFence = m[2]
			continue
		}
		f(i+1, line)
	}
}

// Links returns the inline links of a page's text.
func Links(text string) []Link {
	var out []Link
	outsideFences(text, func(n int, line string) {
		line = inlineCode.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			out = append(out, Link{Line: n, Target: m[1]})
		}
	})
	return out
}

// External reports whether a link target leaves the repository (a URL
// with a scheme, or mailto:).
func External(target string) bool {
	if strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "//") {
		return true
	}
	if i := strings.Index(target, ":"); i > 0 {
		scheme := target[:i]
		return !strings.ContainsAny(scheme, "/.#")
	}
	return false
}

// Anchors returns the anchors a page's headings get on GitHub (and
// explicit <a name|id="..."> anchors).
func Anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	outsideFences(text, func(_ int, line string) {
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := Slug(m[2])
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	})
	return out
}

var mdLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// Slug is GitHub's anchor for a heading's text: the rendered text (links'
// text, code spans' content, no emphasis marks) lowercased, every character
// but letters, digits, spaces, hyphens and underscores removed, spaces
// turned into hyphens.
func Slug(heading string) string {
	s := mdLink.ReplaceAllString(heading, "$1")
	s = strings.NewReplacer("`", "", "*", "").Replace(s)
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
