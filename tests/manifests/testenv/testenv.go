// Package testenv finds what the distribution tests need: the repository's
// root, the shipped files and the built collector binary. A missing binary
// fails the test with the make target that builds it; nothing is skipped.
package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot returns the repository root: the nearest directory above the
// test's working directory that holds go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("working directory: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Path joins elements below the repository root.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	return filepath.Join(append([]string{RepoRoot(t)}, elem...)...)
}

// Binary returns the path of a built file: the value of env if set, else def
// below the repository root. It fails the test, naming the make target to
// run, when the file is absent.
func Binary(t testing.TB, env, def, makeTarget string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		p = Path(t, filepath.FromSlash(def))
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatalf("%s is missing (%v): run `make %s` first, or set %s to a built binary", p, err, makeTarget, env)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("%s is not an executable file: run `make %s` first, or set %s", p, makeTarget, env)
	}
	return p
}

// Collector returns the Linux collector binary: $OTELCOL_NEXOVUE_BIN, else
// _build/otelcol-nexovue.
func Collector(t testing.TB) string {
	t.Helper()
	return Binary(t, "OTELCOL_NEXOVUE_BIN", "_build/otelcol-nexovue", "build")
}

// Env returns the current environment without the variables the shipped
// configs read (NEXOVUE_*), plus extra ("NAME=value" entries). Tests set
// what they mean to and nothing leaks in from the caller's shell.
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if len(kv) >= 8 && kv[:8] == "NEXOVUE_" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}
