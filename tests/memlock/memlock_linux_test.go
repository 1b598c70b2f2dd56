package memlock

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKernelVersion(t *testing.T) {
	for release, want := range map[string][2]int{
		"6.18.44-fc-v1045": {6, 18},
		"5.11.0":           {5, 11},
		"5.10.0-28-amd64":  {5, 10},
		"6.1":              {6, 1},
		"4.19.0+":          {4, 19},
	} {
		major, minor, err := kernelVersion(release)
		require.NoError(t, err, release)
		require.Equal(t, want, [2]int{major, minor}, release)
	}
	_, _, err := kernelVersion("linux")
	require.Error(t, err)
}

// TestLauncher runs a child through the real launcher binary and checks the
// three cases the filter distinguishes: setting RLIMIT_MEMLOCK succeeds,
// reading it returns the real limit, and setting another limit above its hard
// limit still fails as it should.
func TestLauncher(t *testing.T) {
	needed, err := Needed()
	require.NoError(t, err)
	dir := t.TempDir()
	launcher := filepath.Join(dir, "memlock-launcher")
	child := filepath.Join(dir, "rlimit-child")
	build := func(out, pkg string) {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, string(b))
	}
	build(launcher, "./cmd/memlock-launcher")
	build(child, "./testdata/rlimitchild")

	direct, _ := exec.Command(child).CombinedOutput()
	launched, err := exec.Command(launcher, child).CombinedOutput()
	require.NoError(t, err, string(launched))
	t.Logf("direct:\n%s\nlaunched:\n%s", direct, launched)

	require.Contains(t, string(launched), "set-memlock: ok")
	require.Contains(t, string(launched), "nofile-above-hard: operation not permitted")
	// A read is not faked: it reports the same limit as without the launcher.
	require.Equal(t, line(string(direct), "get-memlock:"), line(string(launched), "get-memlock:"))
	if needed {
		require.Contains(t, string(direct), "set-memlock: operation not permitted",
			"without CAP_SYS_RESOURCE the plain call must fail, or the launcher is not needed")
	}
}

func line(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
