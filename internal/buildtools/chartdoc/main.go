// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Command chartdoc writes a Helm chart's README.md from its Chart.yaml and
// values.yaml: a table of every value (its path, its default, the comment
// above it in values.yaml). `make manifests` runs it for
// charts/otelcol-nexovue; its test fails when the committed README differs.
//
//	go run ./internal/buildtools/chartdoc <chart folder>
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: chartdoc <chart folder>")
		os.Exit(2)
	}
	dir := os.Args[1]
	readme, err := Render(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartdoc:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), readme, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "chartdoc:", err)
		os.Exit(1)
	}
}
