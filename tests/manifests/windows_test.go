package manifests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
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
	cmd.Env = append(env, wineEnv(prefix)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// wineDLLOverrides keeps wineboot from offering to install Mono and Gecko.
const wineDLLOverrides = "mscoree,mshtml="

// wineEnv is what Wine runs with in prefix, besides the test's environment.
func wineEnv(prefix string) []string {
	return []string{"WINEPREFIX=" + prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=" + wineDLLOverrides}
}

// winPath is a Linux path as Wine's Z: drive shows it.
func winPath(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }

// winePrefix returns Wine and a Wine prefix of the test's own (removed with
// it) with the ProcessPrng shim installed, and the environment to run in it.
// The prefix is a copy of the one cachedWinePrefix keeps in _build.
func winePrefix(t *testing.T) (wine, prefix string, env []string) {
	t.Helper()
	wine = tool(t, "wine", "wine wine64")
	wineserver := tool(t, "wineserver", "wine wine64")
	as := tool(t, "x86_64-w64-mingw32-as", "binutils-mingw-w64-x86-64")
	ld := tool(t, "x86_64-w64-mingw32-ld", "binutils-mingw-w64-x86-64")
	dlltool := tool(t, "x86_64-w64-mingw32-dlltool", "binutils-mingw-w64-x86-64")

	// The ProcessPrng shim (see testdata/winshim/bcryptprimitives.s), built
	// from its sources on every run.
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

	env = cleanEnv("NEXOVUE_KEY=" + validateKey)
	cached := cachedWinePrefix(t, wine, wineserver, env)
	prefix = filepath.Join(work, "wineprefix")
	t.Cleanup(func() {
		cmd := exec.Command(wineserver, "-k")
		cmd.Env = append(os.Environ(), "WINEPREFIX="+prefix)
		_ = cmd.Run()
	})
	start := time.Now()
	if err := copyWinePrefix(cached, prefix); err != nil {
		t.Fatalf("copying the Wine prefix %s: %v", cached, err)
	}
	t.Logf("Wine prefix copied from %s in %.1fs", cached, time.Since(start).Seconds())

	// The shim where Go looks for it (System32 only).
	sys32 := filepath.Join(prefix, "drive_c", "windows", "system32")
	if err := writeNew(filepath.Join(sys32, "bcryptprimitives.dll"), mustRead(t, dll)); err != nil {
		t.Fatalf("installing the shim in %s: %v", sys32, err)
	}
	return wine, prefix, env
}

// peFiles are the files of a Wine prefix that Wine maps and never writes (the
// PE images and NLS tables wineboot installs, 630 of its 695 MB with Wine
// 8.0): copyWinePrefix links them instead of copying them.
var peFiles = map[string]bool{".dll": true, ".exe": true, ".sys": true, ".drv": true, ".ocx": true,
	".cpl": true, ".acm": true, ".tlb": true, ".nls": true, ".ds": true, ".com": true}

// copyWinePrefix copies the Wine prefix src to dst (which must not exist):
// the files in peFiles as hard links, every other file (the registry, .ini
// and the other files Wine may rewrite) and symbolic link as a copy of its
// own, so nothing run in dst changes src.
func copyWinePrefix(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(to, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file, folder or symbolic link (%s)", path, d.Type())
		case peFiles[strings.ToLower(filepath.Ext(path))]:
			return os.Link(path, to)
		default:
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if err := os.WriteFile(to, data, info.Mode().Perm()); err != nil {
				return err
			}
			return os.Chtimes(to, info.ModTime(), info.ModTime())
		}
	})
}

// writeNew writes data to path as a new file: a file already there, which
// may be linked to the cached prefix, is removed first.
func writeNew(path string, data []byte) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// cachedWinePrefix returns a Wine prefix as `wineboot --init` makes it,
// kept in _build/wineprefix/<key> (key: Wine's version) as kube-apiserver
// is kept in _build/kube: making one takes most of a minute on a 2-core
// machine, copying it (copyWinePrefix) under a second. Tests copy it and
// never run in it. It is
// made in a temporary folder and renamed into place once wineserver has
// written it out, so an interrupted run leaves no half-made prefix behind.
func cachedWinePrefix(t *testing.T, wine, wineserver string, env []string) string {
	t.Helper()
	version, err := exec.Command(wine, "--version").Output()
	if err != nil {
		t.Fatalf("wine --version: %v", err)
	}
	sum := sha256.Sum256(append(version, wineDLLOverrides...))
	root := repoPath(t, "_build", "wineprefix")
	dir := filepath.Join(root, hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(dir, "system.reg")); err == nil {
		return dir
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(root, "new-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	if out, err := wineRun(t, wine, tmp, env, "wineboot", "--init"); err != nil {
		t.Fatalf("wineboot --init: %v\n%s", err, out)
	}
	// wineserver writes the registry out when it exits.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, wineserver, "-w")
	cmd.Env = append(os.Environ(), "WINEPREFIX="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wineserver -w (waiting for the new prefix's wineserver to end): %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(tmp, "system.reg")); err != nil {
		t.Fatalf("wineboot --init made no prefix in %s: %v", tmp, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "system.reg")); statErr != nil {
			t.Fatalf("keeping the Wine prefix in %s: %v", dir, err)
		} // another run put one there first
	}
	t.Logf("Wine prefix made in %.1fs (%s), kept in %s", time.Since(start).Seconds(), strings.TrimSpace(string(version)), dir)
	return dir
}

// TestWindowsValidateUnderWine runs, under Debian's Wine, a Windows binary
// with our components (by default the small one of
// internal/buildtools/wine-builder.yaml that `make windows-test-binary`
// builds; OTELCOL_NEXOVUE_WINDOWS_BIN names another, such as the full
// _build/windows-amd64/otelcol-nexovue.exe of `make crossbuild`): its
// `validate` accepts the shipped pprof.yaml and the docs' pprof config,
// rejects a misspelt setting naming it, and its profile view serves
// (windows_view_test.go), all at once in one Wine prefix.
func TestWindowsValidateUnderWine(t *testing.T) {
	exe := builtFile(t, "OTELCOL_NEXOVUE_WINDOWS_BIN", "_build/wine/otelcol-nexovue-wine.exe", "windows-test-binary")
	wine, prefix, env := winePrefix(t)
	pprof := repoPath(t, "distributions", "otelcol-nexovue", "pprof.yaml")
	bad := filepath.Join(t.TempDir(), "misspelt.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(mustRead(t, pprof)), "collection_interval:", "collection_intervl:", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		wantErr    string // "" when it must validate
	}{
		{"pprof.yaml", pprof, ""},
		{"pprof-docs.yaml", repoPath(t, "tests", "testdata", "pprof-docs.yaml"), ""},
		// And it does validate: a misspelt setting fails, naming it.
		{"misspelt pprof.yaml", bad, "collection_intervl"},
	} {
		t.Run("validate "+c.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			out, err := wineRun(t, wine, prefix, env, exe, "validate", "--config", winPath(c.path), testenv.FeatureGate)
			t.Logf("wine %s validate --config %s: %v in %.1fs", filepath.Base(exe), c.name, err, time.Since(start).Seconds())
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("wine %s validate --config %s %s: %v\n%s", filepath.Base(exe), c.path, testenv.FeatureGate, err, out)
			case c.wantErr != "" && (err == nil || !strings.Contains(out, c.wantErr)):
				t.Fatalf("wine %s validate --config %s: err=%v, want an error naming %s:\n%s", filepath.Base(exe), c.path, err, c.wantErr, out)
			}
			if strings.Contains(out, validateKey) {
				t.Errorf("validate printed the ingest key:\n%s", out)
			}
		})
	}
	t.Run("profile view", func(t *testing.T) {
		t.Parallel()
		windowsProfileView(t, exe, wine, prefix, env)
	})
}
