package manifests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// builtFile returns $env, else def (below the repository root if relative),
// failing the test with makeTarget when it is absent.
func builtFile(t *testing.T, env, def, makeTarget string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		p = filepath.FromSlash(def)
		if !filepath.IsAbs(p) {
			p = repoPath(t, p)
		}
	}
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		hint := ""
		if env != "" {
			hint = ", or set " + env
		}
		t.Fatalf("%s is missing (%v): run `make %s` first%s", p, err, makeTarget, hint)
	}
	return p
}

func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is missing (%v): apt-get install -y %s", name, err, pkg)
	}
	return p
}

// wineRun runs a Windows program under Wine in prefix; it returns the
// combined output.
func wineRun(t *testing.T, wine, prefix string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, wine, args...)
	cmd.Env = append(env, "WINEPREFIX="+prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// winPath is a Linux path as Wine's Z: drive shows it.
func winPath(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }

// winePrefix returns the cross-built Windows binary, Wine, and a fresh Wine
// prefix (removed with the test) with the ProcessPrng shim installed, and the
// environment to run it with.
func winePrefix(t *testing.T) (exe, wine, prefix string, env []string) {
	t.Helper()
	exe = builtFile(t, "OTELCOL_NEXOVUE_WINDOWS_BIN", "_build/windows-amd64/otelcol-nexovue.exe", "crossbuild")
	wine = tool(t, "wine", "wine wine64")
	wineserver := tool(t, "wineserver", "wine wine64")
	as := tool(t, "x86_64-w64-mingw32-as", "binutils-mingw-w64-x86-64")
	ld := tool(t, "x86_64-w64-mingw32-ld", "binutils-mingw-w64-x86-64")
	dlltool := tool(t, "x86_64-w64-mingw32-dlltool", "binutils-mingw-w64-x86-64")

	// The ProcessPrng shim (see testdata/winshim/bcryptprimitives.s).
	shim := repoPath(t, "tests", "manifests", "testdata", "winshim")
	work := t.TempDir()
	dll := filepath.Join(work, "bcryptprimitives.dll")
	for _, c := range [][]string{
		{as, "-o", filepath.Join(work, "shim.o"), filepath.Join(shim, "bcryptprimitives.s")},
		{dlltool, "-d", filepath.Join(shim, "advapi32.def"), "-l", filepath.Join(work, "libadvapi32.a")},
		{ld, "--dll", "-e", "DllMain", "-o", dll, filepath.Join(work, "shim.o"), filepath.Join(shim, "bcryptprimitives.def"), filepath.Join(work, "libadvapi32.a")},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}

	// A fresh Wine prefix with the shim where Go looks for it (System32 only).
	prefix = filepath.Join(work, "wineprefix")
	env = cleanEnv("NEXOVUE_KEY=" + validateKey)
	t.Cleanup(func() {
		cmd := exec.Command(wineserver, "-k")
		cmd.Env = append(os.Environ(), "WINEPREFIX="+prefix)
		_ = cmd.Run()
	})
	if out, err := wineRun(t, wine, prefix, env, "wineboot", "--init"); err != nil {
		t.Fatalf("wineboot --init: %v\n%s", err, out)
	}
	sys32 := filepath.Join(prefix, "drive_c", "windows", "system32")
	data, err := os.ReadFile(dll)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sys32, "bcryptprimitives.dll"), data, 0o644); err != nil {
		t.Fatalf("installing the shim in %s: %v", sys32, err)
	}

	return exe, wine, prefix, env
}

// TestWindowsValidateUnderWine runs the cross-built Windows binary's
// `validate` on the shipped pprof.yaml under Debian's Wine, then its profile
// view (windows_view_test.go) in the same Wine prefix.
func TestWindowsValidateUnderWine(t *testing.T) {
	exe, wine, prefix, env := winePrefix(t)
	work := t.TempDir()
	pprof := repoPath(t, "distributions", "otelcol-nexovue", "pprof.yaml")
	out, err := wineRun(t, wine, prefix, env, exe, "validate", "--config", winPath(pprof), testenv.FeatureGate)
	if err != nil {
		t.Fatalf("wine otelcol-nexovue.exe validate --config pprof.yaml %s: %v\n%s", testenv.FeatureGate, err, out)
	}

	// And it does validate: a misspelt setting fails, naming it.
	bad := filepath.Join(work, "misspelt.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(mustRead(t, pprof)), "collection_interval:", "collection_intervl:", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = wineRun(t, wine, prefix, env, exe, "validate", "--config", winPath(bad), testenv.FeatureGate)
	if err == nil || !strings.Contains(out, "collection_intervl") {
		t.Fatalf("validate of a misspelt pprof.yaml under wine: err=%v, want an error naming collection_intervl:\n%s", err, out)
	}
	t.Run("profile view", func(t *testing.T) { windowsProfileView(t, exe, wine, prefix, env) })
}
