// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const chart = "../../../charts/otelcol-nexovue"

// The committed README is the one values.yaml gives.
func TestChartReadmeIsCurrent(t *testing.T) {
	want, err := Render(chart)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(chart, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s/README.md is not what values.yaml gives: run `make manifests`", chart)
	}
	for _, v := range []string{"`nexovue.existingSecret`", "`agent.view.bearerToken.existingSecret`", "`gateway.autoscaling.maxReplicas`"} {
		if !strings.Contains(string(want), v) {
			t.Errorf("the README lists no %s", v)
		}
	}
}

func TestValuesNeedAComment(t *testing.T) {
	_, err := Values([]byte("# documented\na: 1\n# documented\nb:\n  # documented\n  c: 2\nd: 3\n"))
	if err == nil || !strings.Contains(err.Error(), "d has no comment") {
		t.Errorf("an undocumented value: want an error naming it, got %v", err)
	}
	vs, err := Values([]byte("# the map\nm:\n  # its leaf\n  x: [1, 2]\n# a whole map\nw:\n  y: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || vs[1].Path != "m.x" || vs[1].Default != "[1, 2]" || vs[2].Path != "w" || vs[2].Default != "{y: 1}" {
		t.Errorf("values %+v", vs)
	}
}
