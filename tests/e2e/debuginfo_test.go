package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/dwarftest"
	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// nativeFrame is a location of the sink in a mapping, with its lines.
type nativeFrame struct {
	mapping string
	addr    uint64
	lines   []dwarftest.Frame
}

// nativeFrames returns the distinct locations of the sink's profiles whose
// mapping's file name is one of files, with their lines (function name,
// file base name, line).
func nativeFrames(path string, files ...string) (map[string][]nativeFrame, error) {
	out := map[string][]nativeFrame{}
	seen := map[string]bool{}
	err := testenv.ReadProfileLines(path, func(pd pprofile.Profiles) {
		for _, nf := range batchFrames(pd, files...) {
			key := fmt.Sprintf("%s %x %v", nf.mapping, nf.addr, nf.lines)
			if !seen[key] {
				seen[key] = true
				out[nf.mapping] = append(out[nf.mapping], nf)
			}
		}
	})
	return out, err
}

// batchFrames returns the locations of one request whose mapping's file
// name is one of files, with their lines.
func batchFrames(pd pprofile.Profiles, files ...string) []nativeFrame {
	var out []nativeFrame
	d := pd.Dictionary()
	str := dictString(d)
	for _, loc := range d.LocationTable().All() {
		name, ok := mappingFile(d, loc)
		if !ok || !slices.Contains(files, name) {
			continue
		}
		nf := nativeFrame{mapping: name, addr: loc.Address()}
		for _, ln := range loc.Lines().All() {
			f := d.FunctionTable().At(int(ln.FunctionIndex()))
			nf.lines = append(nf.lines, dwarftest.Frame{Name: str(f.NameStrindex()), File: dwarftest.BaseName(str(f.FilenameStrindex())), Line: ln.Line()})
		}
		out = append(out, nf)
	}
	return out
}

// dictString returns the string of an index of a dictionary ("" outside it).
func dictString(d pprofile.ProfilesDictionary) func(int32) string {
	return func(i int32) string {
		if i < 0 || int(i) >= d.StringTable().Len() {
			return ""
		}
		return d.StringTable().At(int(i))
	}
}

// mappingFile returns the file name of a location's mapping (false: it has
// none).
func mappingFile(d pprofile.ProfilesDictionary, loc pprofile.Location) (string, bool) {
	mi := loc.MappingIndex()
	if mi <= 0 || int(mi) >= d.MappingTable().Len() {
		return "", false
	}
	return dictString(d)(d.MappingTable().At(int(mi)).FilenameStrindex()), true
}

// TestDebugInfoWithEBPF runs the shipped agent config (real eBPF profiler)
// while three C programs burn CPU:
//   - inl.c built with -g -O2 (its hot function inlined into its caller),
//     stripped, its debug file next to it through .gnu_debuglink;
//   - the same code with another build id, stripped without a debug link,
//     its debug file only under its build id in a debug_dirs directory;
//   - a program sorting with libc's qsort, whose time is in libc's static
//     merge sort, named only by Debian's libc6-dbg debug file.
//
// The inlined function and its caller both appear, innermost first, with
// the lines readelf gives for the sampled addresses; libc's frames are
// named from its debug file, with file and line.
func TestDebugInfoWithEBPF(t *testing.T) {
	t.Parallel() // see main_test.go
	root := testenv.RepoRoot(t)
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "debuginfo", srv, &sent)

	dir := t.TempDir()
	inl := filepath.Join(root, "processor", "symbolizeprocessor", "testdata", "src", "inl.c")
	linked := dwarftest.Build(t, inl, dir, "nxv-inl-link", true)
	byID := dwarftest.Build(t, inl, dir, "nxv-inl-bid", false, "-DNXV_OTHER=2")
	debugDir := filepath.Join(dir, "debug")
	id := buildID(t, byID.Bin)
	dst := filepath.Join(debugDir, ".build-id", id[:2], id[2:]+".debug")
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	require.NoError(t, os.Rename(byID.Debug, dst))
	qsort := filepath.Join(dir, "nxv-qsort")
	dwarftest.Run(t, "gcc", "-O2", "-o", qsort, filepath.Join(root, "tests", "e2e", "testdata", "debuginfo", "qsort.c"))
	out, err := exec.Command("gcc", "-print-file-name=libc.so.6").Output()
	require.NoError(t, err)
	libcID := buildID(t, strings.TrimSpace(string(out)))
	libcDebug := filepath.Join("/usr/lib/debug/.build-id", libcID[:2], libcID[2:]+".debug")
	_, err = os.Stat(libcDebug)
	require.NoError(t, err, "libc's debug file (Debian's libc6-dbg: run `make prereqs`)")

	// The same code, static, in a podman container: its file is at
	// /nxv-inl-pod in the container only, its debug file under its build id
	// in the container's /usr/lib/debug.
	inPod := dwarftest.Build(t, inl, dir, "nxv-inl-pod", false, "-static", "-DNXV_OTHER=3")
	startContainer(t, inPod)

	for _, bin := range []string{linked.Bin, byID.Bin, qsort} {
		testenv.Start(t, nil, "nice", "-n", "10", bin)
	}
	sinkPath, _ := startAgent(t, srv, fmt.Sprintf(`
processors:
  symbolize:
    debug_dirs: [%s]
`, debugDir))

	inlined := func(fs []nativeFrame) bool {
		for _, f := range fs {
			if len(f.lines) == 2 && f.lines[0].Name == "nxv_inl_hot" && f.lines[1].Name == "nxv_inl_caller" {
				return true
			}
		}
		return false
	}
	msort := func(fs []nativeFrame) bool {
		for _, f := range fs {
			if n := len(f.lines); n > 0 && f.lines[n-1].Name == "msort_with_tmp" && f.lines[0].Line > 0 {
				return true
			}
		}
		return false
	}
	var frames map[string][]nativeFrame
	testenv.WaitFor(t, 120*time.Second, "nxv_inl_hot inlined into nxv_inl_caller in the three programs, and libc's msort_with_tmp with a line", func() (bool, error) {
		var err error
		frames, err = nativeFrames(sinkPath, "nxv-inl-link", "nxv-inl-bid", "nxv-inl-pod", "libc.so.6")
		return inlined(frames["nxv-inl-link"]) && inlined(frames["nxv-inl-bid"]) && inlined(frames["nxv-inl-pod"]) && msort(frames["libc.so.6"]), err
	})

	// Every frame of the programs in their own code has readelf's frames.
	for name, p := range map[string]dwarftest.Program{"nxv-inl-link": linked, "nxv-inl-bid": byID, "nxv-inl-pod": inPod} {
		checked := 0
		for _, f := range frames[name] {
			if len(f.lines) == 0 || !strings.HasPrefix(f.lines[len(f.lines)-1].Name, "nxv_inl_") {
				continue
			}
			require.Equal(t, dwarftest.Frames(t, p.Oracle, f.addr), f.lines, "%s at %#x", name, f.addr)
			checked++
		}
		t.Logf("%s: %d distinct frames in nxv_inl_caller checked against readelf", name, checked)
	}
	// libc's frames in msort_with_tmp: the innermost line is readelf's.
	rows := dwarftest.Lines(t, libcDebug)
	checked := 0
	for _, f := range frames["libc.so.6"] {
		if n := len(f.lines); n == 0 || f.lines[n-1].Name != "msort_with_tmp" {
			continue
		}
		row := dwarftest.LineAt(t, rows, f.addr)
		require.Equal(t, dwarftest.Frame{Name: f.lines[0].Name, File: row.File, Line: row.Line}, f.lines[0], "libc at %#x: %v", f.addr, f.lines)
		checked++
	}
	t.Logf("libc.so.6: %d distinct frames in msort_with_tmp checked against readelf", checked)
}

// startContainer runs a stripped program in a podman container of an image
// made of it alone (podman import of a root with the program at /<name>
// and its debug file under its build id in /usr/lib/debug), removed when
// the test ends. The host has no file at /<name>.
func startContainer(t *testing.T, p dwarftest.Program) {
	t.Helper()
	pm, err := exec.LookPath("podman")
	require.NoError(t, err, "podman (Debian's podman and runc: run `make prereqs`)")
	name := filepath.Base(p.Bin)
	_, err = os.Stat("/" + name)
	require.True(t, os.IsNotExist(err), "/%s must not exist on the host", name)
	root := t.TempDir()
	id := buildID(t, p.Bin)
	for src, dst := range map[string]string{
		p.Bin:   filepath.Join(root, name),
		p.Debug: filepath.Join(root, "usr", "lib", "debug", ".build-id", id[:2], id[2:]+".debug"),
	} {
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, data, 0o755))
	}
	tarball := filepath.Join(t.TempDir(), "root.tar")
	dwarftest.Run(t, "tar", "-C", root, "-cf", tarball, ".")
	image := "localhost/nxv-debuginfo-test:" + id[:12]
	container := "nxv-debuginfo-test-" + id[:12]
	dwarftest.Run(t, pm, "import", tarball, image)
	t.Cleanup(func() {
		for _, args := range [][]string{{"rm", "-f", "-t", "0", container}, {"rmi", "-f", image}} {
			if out, err := exec.Command(pm, args...).CombinedOutput(); err != nil {
				t.Errorf("podman %v: %v\n%s", args, err, out)
			}
		}
	})
	// This machine's podman settings (tests/container: podmanArgs).
	dwarftest.Run(t, pm, "run", "-d", "--name", container, "--runtime", "runc",
		"--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768", "--network=host", image, "/"+name)
}

// buildID returns a file's GNU build id (readelf -n).
func buildID(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("readelf", "-n", path).Output()
	require.NoError(t, err)
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Build ID: "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no GNU build id", path)
	return ""
}
