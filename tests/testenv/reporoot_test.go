package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepoRoot finds the checkout from the package's folder, as go test
// runs it, with or without -trimpath (make test builds with it).
func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Dir(filepath.Dir(wd)); root != want {
		t.Fatalf("RepoRoot() = %s, want %s (two folders above tests/testenv)", root, want)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(gomod), "module github.com/nexovue/otelcol-nexovue\n") {
		t.Fatalf("%s/go.mod is not this repository's (%v)", root, err)
	}
}
