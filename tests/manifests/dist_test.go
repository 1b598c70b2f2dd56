//go:build dist

package manifests

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDistArchives runs `make dist-only` on the cross-built binaries and
// checks each archive: one folder with the binary (executable, identical to
// the build's), pprof.yaml as shipped, and the platform's README.
func TestDistArchives(t *testing.T) {
	// $OTELCOL_NEXOVUE_BUILD_DIR, else _build: where make crossbuild puts
	// <os>-<arch>/otelcol-nexovue[.exe].
	buildDir := os.Getenv("OTELCOL_NEXOVUE_BUILD_DIR")
	if buildDir == "" {
		buildDir = repoPath(t, "_build")
	}
	for _, d := range []string{"darwin-amd64", "darwin-arm64", "windows-amd64"} {
		exe := "otelcol-nexovue"
		if strings.HasPrefix(d, "windows") {
			exe += ".exe"
		}
		builtFile(t, "", filepath.Join(buildDir, d, exe), "crossbuild")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-f", "distributions/dist.mk", "dist-only", "DIST_OUT="+out, "BUILD_DIR="+buildDir)
	cmd.Dir = repoPath(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make dist-only: %v\n%s", err, b)
	}
	version := distVersion(t)
	pprof := mustRead(t, repoPath(t, "distributions", "otelcol-nexovue", "pprof.yaml"))
	for _, tc := range []struct{ os, arch, archive, exe string }{
		{"darwin", "amd64", ".tar.gz", "otelcol-nexovue"},
		{"darwin", "arm64", ".tar.gz", "otelcol-nexovue"},
		{"windows", "amd64", ".zip", "otelcol-nexovue.exe"},
	} {
		dir := "otelcol-nexovue_" + version + "_" + tc.os + "_" + tc.arch
		path := filepath.Join(out, dir+tc.archive)
		t.Run(filepath.Base(path), func(t *testing.T) {
			files := readArchive(t, path)
			var names []string
			for n := range files {
				names = append(names, n)
			}
			slices.Sort(names)
			want := []string{dir + "/README.md", dir + "/" + tc.exe, dir + "/pprof.yaml"}
			if !slices.Equal(names, want) {
				t.Fatalf("%s holds %v, want %v", path, names, want)
			}
			bin := mustRead(t, filepath.Join(buildDir, tc.os+"-"+tc.arch, tc.exe))
			if got := files[dir+"/"+tc.exe]; got.mode&0o111 == 0 || string(got.data) != string(bin) {
				t.Errorf("%s: the binary is not the cross-built one, or not executable (mode %o)", path, got.mode)
			}
			if string(files[dir+"/pprof.yaml"].data) != string(pprof) {
				t.Errorf("%s: pprof.yaml differs from distributions/otelcol-nexovue/pprof.yaml", path)
			}
			readme := string(files[dir+"/README.md"].data)
			if string(mustRead(t, repoPath(t, "distributions", "archive", "README-"+tc.os+".md"))) != readme {
				t.Errorf("%s: README.md is not distributions/archive/README-%s.md", path, tc.os)
			}
			if !strings.Contains(readme, "--feature-gates=service.profilesSupport") || !strings.Contains(readme, "NEXOVUE_KEY") {
				t.Errorf("%s: README.md does not say how to run it", path)
			}
			if tc.os == "windows" && !strings.Contains(readme, "sc.exe create") {
				t.Errorf("%s: README.md does not document the Windows service", path)
			}
		})
	}
}

type archived struct {
	mode os.FileMode
	data []byte
}

// readArchive returns the regular files of a .tar.gz or .zip by name.
func readArchive(t *testing.T, path string) map[string]archived {
	t.Helper()
	files := map[string]archived{}
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			if f.FileInfo().IsDir() {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			files[f.Name] = archived{mode: f.Mode(), data: data}
		}
		return files
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = archived{mode: h.FileInfo().Mode(), data: data}
	}
	return files
}
