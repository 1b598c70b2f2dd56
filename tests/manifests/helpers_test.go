package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// repoPath joins elem below the repository root.
func repoPath(t *testing.T, elem ...string) string {
	t.Helper()
	return filepath.Join(append([]string{testenv.RepoRoot(t)}, elem...)...)
}

// cleanEnv is the test's environment without the variables the shipped
// configs read (NEXOVUE_*), plus extra: nothing leaks in from the caller's
// shell.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NEXOVUE_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}
