package e2e

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/dwarftest"
	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// goLine is one line of a location: function, file base name, line, start
// line.
type goLine struct {
	Name      string
	File      string
	Line      int64
	StartLine int64
}

// goLoc is a distinct location of a program's mapping, with the samples
// whose leaf it is and those it is in.
type goLoc struct {
	addr          uint64
	lines         []goLine
	leaf, samples int64
}

func (l goLoc) key() string { return fmt.Sprintf("%x %v", l.addr, l.lines) }

// goLocations adds to out the locations of one request whose mapping's file
// is name, with their samples (each timestamp of the eBPF profiler's
// samples is one).
func goLocations(pd pprofile.Profiles, name string, out map[string]*goLoc) {
	d := pd.Dictionary()
	str := dictString(d)
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				for _, s := range prof.Samples().All() {
					n := int64(s.TimestampsUnixNano().Len())
					if n == 0 {
						n = 1
					}
					si := s.StackIndex()
					if si < 0 || int(si) >= d.StackTable().Len() {
						continue
					}
					for i, li := range d.StackTable().At(int(si)).LocationIndices().All() {
						loc := d.LocationTable().At(int(li))
						if m, ok := mappingFile(d, loc); !ok || m != name {
							continue
						}
						l := goLoc{addr: loc.Address()}
						for _, ln := range loc.Lines().All() {
							f := d.FunctionTable().At(int(ln.FunctionIndex()))
							l.lines = append(l.lines, goLine{str(f.NameStrindex()), filepath.Base(str(f.FilenameStrindex())), ln.Line(), f.StartLine()})
						}
						e := out[l.key()]
						if e == nil {
							e = &l
							out[l.key()] = e
						}
						e.samples += n
						if i == 0 {
							e.leaf += n
						}
					}
				}
			}
		}
	}
}

// sinkGoLocations reads the sink's requests so far.
func sinkGoLocations(path, name string) (map[string]*goLoc, error) {
	out := map[string]*goLoc{}
	err := testenv.ReadProfileLines(path, func(pd pprofile.Profiles) { goLocations(pd, name, out) })
	return out, err
}

// goSink is what the sink holds of a Go program whose source file is
// main.go: its locations from the first request in which the symbolize
// processor named its frames on; the requests before that one which hold
// its frames as the profiler named them, which went out before the agent
// had read the program's file (the load_wait, and the loader's queue of
// 256 files, of the symbolize processor's README: an agent that starts on
// a busy host meets hundreds of files at once); and the requests after it
// which still hold such frames, which must be none.
type goSink struct {
	locs        map[string]*goLoc
	early       int
	lateUnnamed []string
}

// sinkGoProgram reads the sink's requests so far for the program name. A
// frame of main.go is as the profiler named it when it has no start line
// (the symbolize processor gives every Go function its start line).
func sinkGoProgram(path, name string) (goSink, error) {
	g := goSink{locs: map[string]*goLoc{}}
	named := false
	err := testenv.ReadProfileLines(path, func(pd pprofile.Profiles) {
		req := map[string]*goLoc{}
		goLocations(pd, name, req)
		var ours, profilers []string
		for k, l := range req {
			for _, ln := range l.lines {
				if ln.File != "main.go" {
					continue
				}
				if ln.StartLine == 0 {
					profilers = append(profilers, k)
				} else {
					ours = append(ours, k)
				}
				break
			}
		}
		switch {
		case !named && len(ours) == 0:
			if len(profilers) > 0 {
				g.early++
			}
			return
		case named && len(profilers) > 0:
			g.lateUnnamed = append(g.lateUnnamed, profilers...)
		}
		named = true
		for k, l := range req {
			e := g.locs[k]
			if e == nil {
				e = &goLoc{addr: l.addr, lines: l.lines}
				g.locs[k] = e
			}
			e.leaf += l.leaf
			e.samples += l.samples
		}
	})
	return g, err
}

// goSource is what the test knows of a program's source: each function's
// func line and the lines of its body.
type goSource map[string][2]int64 // main.<name> → {func line, closing brace line}

func parseGoSource(t *testing.T, file string) goSource {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	require.NoError(t, err)
	src := goSource{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			src["main."+fd.Name.Name] = [2]int64{int64(fset.Position(fd.Pos()).Line), int64(fset.Position(fd.End()).Line)}
		}
	}
	return src
}

// body tells whether line is in function fn's body.
func (s goSource) body(fn string, line int64) bool {
	r, ok := s[fn]
	return ok && line > r[0] && line < r[1]
}

// callLine returns the line of the first call of callee in fn.
func callLine(t *testing.T, file, fn, callee string) int64 {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	require.NoError(t, err)
	var line int64
	ast.Inspect(f, func(n ast.Node) bool {
		fd, ok := n.(*ast.FuncDecl)
		if !ok || "main."+fd.Name.Name != fn {
			return true
		}
		ast.Inspect(fd, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && line == 0 {
				if id, ok := c.Fun.(*ast.Ident); ok && "main."+id.Name == callee {
					line = int64(fset.Position(c.Pos()).Line)
				}
			}
			return true
		})
		return false
	})
	require.NotZero(t, line, "no call of %s in %s", callee, fn)
	return line
}

// buildGo builds the Go program in testdata/goframes/<dir> into out with
// the extra flags, and returns the compiler's -m output (what it inlined).
func buildGo(t *testing.T, dir, out string, flags ...string) string {
	t.Helper()
	src := filepath.Join(testenv.RepoRoot(t), "tests", "e2e", "testdata", "goframes", dir)
	args := append([]string{"build", "-trimpath", "-o", out}, flags...)
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %v: %s", flags, b)
	return string(b)
}

// checkGoProgram checks a program's Go frames (testdata/goframes/inl): the
// hottest leaf line (samples of the locations whose innermost frame it is,
// added up: one address alone is at the whim of where the CPU's samples
// land) is main.hot at a line of its body, and every location there holds
// main.hot, then main.burn at its call of hot; no location names main.burn
// at a line of hot's body; every start line is the source's func line. It
// returns the share of the program's samples whose leaf is an inlined call,
// and the samples.
func checkGoProgram(t *testing.T, name string, locs map[string]*goLoc, src goSource, call int64) (float64, int64) {
	t.Helper()
	var all []*goLoc
	var total, inlinedLeaf int64
	byLine := map[goLine]int64{}
	for _, l := range locs {
		all = append(all, l)
		total += l.leaf
		if len(l.lines) > 1 {
			inlinedLeaf += l.leaf
		}
		if len(l.lines) > 0 {
			byLine[l.lines[0]] += l.leaf
		}
	}
	require.NotEmpty(t, all, "%s: no location", name)
	sort.Slice(all, func(i, j int) bool { return all[i].leaf > all[j].leaf })
	var seen []string
	for _, l := range all[:min(len(all), 12)] {
		seen = append(seen, fmt.Sprintf("%d samples at %#x: %v", l.leaf, l.addr, l.lines))
	}
	var hottest goLine
	for ln, n := range byLine {
		if n > byLine[hottest] {
			hottest = ln
		}
	}
	require.Equal(t, "main.hot", hottest.Name, "%s: the hottest leaf line %v; the hottest locations:\n%s", name, hottest, strings.Join(seen, "\n"))
	require.True(t, src.body("main.hot", hottest.Line), "%s: the hottest leaf line %d is not in hot's body %v", name, hottest.Line, src["main.hot"])
	for _, l := range all {
		if len(l.lines) > 0 && l.lines[0] == hottest {
			require.Equal(t, []goLine{hottest, {"main.burn", "main.go", call, src["main.burn"][0]}}, l.lines, "%s at %#x", name, l.addr)
		}
		for _, ln := range l.lines {
			if ln.Name == "main.burn" {
				require.False(t, src.body("main.hot", ln.Line), "%s: %#x names main.burn at line %d, in hot's body: %v", name, l.addr, ln.Line, l.lines)
			}
			if r, ok := src[ln.Name]; ok && ln.File == "main.go" {
				require.Equal(t, r[0], ln.StartLine, "%s: start line of %s at %#x", name, ln.Name, l.addr)
			}
		}
	}
	t.Logf("%s: hottest leaf line %v (%d of %d samples); the hottest locations:\n%s", name, hottest, byLine[hottest], total, strings.Join(seen, "\n"))
	return float64(inlinedLeaf) / float64(total), total
}

// TestGoFramesEBPF runs the shipped agent (real eBPF profiler) with the
// profile view while four Go programs, started before it, burn CPU (their
// frames are checked from the first request that has them named on: see
// goSink): testdata/goframes/inl
// (main.hot inlined into main.burn, checked with -gcflags=-m) built plain,
// stripped (-ldflags=-s -w), and stripped in a podman container (its
// file only in the container's root), and testdata/goframes/pgo
// (main.heavy, too costly for the inliner, called in main.work's hot
// loop). The first three are checked by checkGoProgram. The fourth's
// on-CPU profile, downloaded from the view, builds with go build -pgo,
// whose -d=pgodebug=1 output names the hot call of heavy in work as
// inlined; once the programs are stopped, the PGO build's time per call of
// work against the plain build's is logged (a figure).
func TestGoFramesEBPF(t *testing.T) {
	t.Parallel() // see main_test.go
	root := testenv.RepoRoot(t)
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "goframes", srv, &sent)

	dir := t.TempDir()
	inlSrc := filepath.Join(root, "tests", "e2e", "testdata", "goframes", "inl", "main.go")
	plain, stripped, pgo := filepath.Join(dir, "nxv-goinl"), filepath.Join(dir, "nxv-goinl-s"), filepath.Join(dir, "nxv-gopgo")
	m := buildGo(t, "inl", plain, "-gcflags=-m")
	require.Regexp(t, `main\.go:\d+:\d+: inlining call to hot`, m, "the compiler does not inline main.hot")
	buildGo(t, "inl", stripped, "-ldflags=-s -w")
	m = buildGo(t, "pgo", pgo, "-gcflags=-m=2")
	require.Regexp(t, `cannot inline heavy: function too complex`, m, "main.heavy must be too costly for the inliner without PGO")

	// The same program stripped, with an identity of its own, in a podman
	// container: the host has no file at its path (/nxv-goinl-pod).
	pod := filepath.Join(dir, "nxv-goinl-pod")
	buildGo(t, "inl", pod, "-ldflags=-s -w -X main.attempt=pod")
	stopPod := startGoContainer(t, pod)
	// At the tests' own priority, as the container's program: niced, they
	// got 48 samples each in 150 s of make test's e2e-rest phase (three
	// tests at a time beside the Kubernetes and container phases) while the
	// container's got 516.
	burners := []*testenv.Process{
		testenv.Start(t, nil, plain),
		testenv.Start(t, nil, stripped),
		testenv.Start(t, []string{"OTEL_SERVICE_NAME=nxv-gopgo"}, pgo),
	}

	viewAddr := testenv.FreeAddr(t)
	sinkPath := filepath.Join(dir, "profiles.jsonl")
	// load_wait 30s, not the shipped 2s: in make test's e2e-rest phase
	// (load 9 and more) reading a program's Go table once took longer than
	// 2 s, and its first batch went out as the profiler named it (load_wait
	// at work, documented); what this test checks is the naming.
	overlay := writeFile(t, dir, "overlay.yaml", fmt.Sprintf(`
receivers:
  profiling:
    reporter_interval: 2s
processors:
  symbolize:
    load_wait: 30s
exporters:
  file/e2e:
    path: %s
  profileview:
    endpoint: %s
service:
  pipelines:
    profiles:
      exporters: [nexovue, file/e2e, profileview]
`, sinkPath, viewAddr))
	startEBPFCollector(t, filepath.Join(root, "distributions", "otelcol-nexovue", "agent.yaml"), testenv.CollectorOptions{
		Env: agentEnv(t, srv.URL(), dir), Args: []string{"--config", overlay, testenv.FeatureGate},
	})

	// Samples of each program: the hottest leaf line is main.hot's with a
	// wide margin at 100 (about half of them on one line of its body, a
	// sixth on main.burn's), and main.heavy, at half of them, is hot for
	// the PGO build.
	const enough = 100
	var locs map[string]map[string]*goLoc
	early := map[string]int{}
	var why string
	testenv.LastSeen(t, &why)
	// Up to 5 minutes: in clean-clone make test runs (2026-12-06) e2e-rest,
	// three tests at a time beside the Kubernetes phase, left the plain
	// programs 148 to 173 samples in 150 s (the container's had 2,507),
	// and, in another, the container's program 163 in 300 s (the plain
	// ones 553 and 563).
	testenv.WaitFor(t, 300*time.Second, fmt.Sprintf("%d samples of each Go program, main.heavy's among them", enough), func() (bool, error) {
		locs = map[string]map[string]*goLoc{}
		var counts []string
		ok := true
		for _, name := range []string{"nxv-goinl", "nxv-goinl-s", "nxv-goinl-pod", "nxv-gopgo"} {
			g, err := sinkGoProgram(sinkPath, name)
			if err != nil {
				return false, err
			}
			if len(g.lateUnnamed) > 0 {
				return false, fmt.Errorf("%s: after a request with its frames named, one with frames as the profiler named them: %v", name, g.lateUnnamed)
			}
			early[name] = g.early
			l := g.locs
			locs[name] = l
			var n, heavy int64
			for _, loc := range l {
				n += loc.leaf
				if len(loc.lines) > 0 && loc.lines[0].Name == "main.heavy" {
					heavy += loc.leaf
				}
			}
			counts = append(counts, fmt.Sprintf("%s %d", name, n))
			ok = ok && n >= enough && (name != "nxv-gopgo" || heavy >= enough/2)
		}
		why = strings.Join(counts, ", ")
		return ok, nil
	})

	// The programs ran before the agent started: a first request may have
	// gone out before the agent had read their files (goSink).
	t.Logf("figure: requests with a program's frames as the profiler named them, before the first with them named: %v", early)
	for name, n := range early {
		// 30 s of them (reporter_interval 2s) would be more than this
		// test's load_wait: a file not read though a batch waited.
		require.LessOrEqual(t, n, 15, "%s: %d requests with its frames as the profiler named them before the first named", name, n)
	}
	src := parseGoSource(t, inlSrc)
	call := callLine(t, inlSrc, "main.burn", "main.hot")
	for _, name := range []string{"nxv-goinl", "nxv-goinl-s", "nxv-goinl-pod"} {
		share, n := checkGoProgram(t, name, locs[name], src, call)
		t.Logf("figure: %s: %.1f%% of %d samples have an inlined call as their leaf frame (the profiler alone: 0%%, those samples named main.burn at a line of main.hot)", name, 100*share, n)
	}
	// The agent itself is a Go service: its own share, as a figure.
	self, err := sinkGoLocations(sinkPath, "otelcol-nexovue")
	require.NoError(t, err)
	var selfTotal, selfInl int64
	for _, l := range self {
		selfTotal += l.leaf
		if len(l.lines) > 1 {
			selfInl += l.leaf
		}
	}
	if selfTotal > 0 {
		t.Logf("figure: otelcol-nexovue (the agent): %.1f%% of %d samples have an inlined call as their leaf frame (the profiler alone: 0%%)", 100*float64(selfInl)/float64(selfTotal), selfTotal)
	}

	// PGO from the view.
	pgoSrc := filepath.Join(root, "tests", "e2e", "testdata", "goframes", "pgo", "main.go")
	profile := filepath.Join(dir, "default.pgo")
	resp, err := http.Get("http://" + viewAddr + "/download?service=nxv-gopgo&type=samples_count")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.NoError(t, os.WriteFile(profile, body, 0o644))
	out := buildGo(t, "pgo", filepath.Join(dir, "nxv-gopgo-pgo"), "-pgo="+profile, "-gcflags=-d=pgodebug=1")
	workCall := callLine(t, pgoSrc, "main.work", "main.heavy")
	require.Regexp(t, regexp.MustCompile(fmt.Sprintf(`hot-budget check allows inlining for call main\.heavy \(cost \d+\) at \S*main\.go:%d:\d+ in function main\.work`, workCall)), out,
		"go build -pgo with the view's profile does not inline the hot call of main.heavy in main.work")
	t.Logf("go build -pgo: %s", strings.TrimSpace(regexp.MustCompile(`(?m)^hot-budget check allows.*$`).FindString(out)))

	// The figure: both builds, alternately, same run, once the programs
	// profiled have stopped.
	for _, b := range burners {
		b.Kill()
	}
	stopPod()
	var times [2][]int64
	for i := 0; i < 5; i++ {
		for j, bin := range []string{pgo, filepath.Join(dir, "nxv-gopgo-pgo")} {
			b, err := exec.Command(bin, "bench", "300").Output()
			require.NoError(t, err)
			ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			require.NoError(t, err)
			times[j] = append(times[j], ns)
		}
	}
	for j := range times {
		slices.Sort(times[j])
	}
	t.Logf("figure: main.work(65536), µs per call, median of 5 alternating runs: plain %d, PGO (the view's profile) %d (PGO/plain %.2f); all: plain %v, PGO %v",
		times[0][2]/1000, times[1][2]/1000, float64(times[1][2])/float64(times[0][2]), times[0], times[1])
}

// startGoContainer runs a static Go program in a podman container of an
// image made of it alone (at /<name>), removed when the test ends or when
// the function it returns is called.
func startGoContainer(t *testing.T, bin string) func() {
	t.Helper()
	pm, err := exec.LookPath("podman")
	require.NoError(t, err, "podman (Debian's podman and runc: run `make prereqs`)")
	name := filepath.Base(bin)
	_, err = os.Stat("/" + name)
	require.True(t, os.IsNotExist(err), "/%s must not exist on the host", name)
	root := t.TempDir()
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, name), data, 0o755))
	tarball := filepath.Join(t.TempDir(), "root.tar")
	dwarftest.Run(t, "tar", "-C", root, "-cf", tarball, ".")
	tag := fmt.Sprintf("%d", time.Now().UnixNano())
	image := "localhost/nxv-goframes-test:" + tag
	container := "nxv-goframes-test-" + tag
	dwarftest.Run(t, pm, "import", tarball, image)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			for _, args := range [][]string{{"rm", "-f", "-t", "0", container}, {"rmi", "-f", image}} {
				if out, err := exec.Command(pm, args...).CombinedOutput(); err != nil {
					t.Errorf("podman %v: %v\n%s", args, err, out)
				}
			}
		})
	}
	t.Cleanup(stop)
	// This machine's podman settings (tests/container: podmanArgs).
	dwarftest.Run(t, pm, "run", "-d", "--name", container, "--runtime", "runc",
		"--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768", "--network=host", image, "/"+name)
	return stop
}

// TestGoFramesExitedProcess: as TestDebugInfoExitedProcess, for a stripped
// Go program (testdata/goframes/inl, -ldflags=-s -w) that burns CPU for
// 2 s and exits, its binary then deleted: the first batch that holds its
// samples, cut after it exited, has its Go frames with the inlined main.hot
// then main.burn, and the source's start lines.
func TestGoFramesExitedProcess(t *testing.T) {
	t.Parallel() // see main_test.go
	root := testenv.RepoRoot(t)
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "goframes-exited", srv, &sent)
	dir := t.TempDir()
	inlSrc := filepath.Join(root, "tests", "e2e", "testdata", "goframes", "inl", "main.go")
	sinkPath, _ := startAgentEvery(t, srv, nil, exitedInterval.String(), `
processors:
  symbolize:
    load_wait: 30s
`)
	testenv.WaitFor(t, 120*time.Second, "the agent's first batch at the sink", func() (bool, error) {
		all, err := sinkBatches(sinkPath)
		return len(all) > 0, err
	})
	var frames []nativeFrame
	var name string
	for attempt := 1; attempt <= 3 && len(frames) == 0; attempt++ {
		name = fmt.Sprintf("nxv-goinl-short%d", attempt)
		bin := filepath.Join(dir, name)
		// Each attempt a file identity of its own (-X).
		buildGo(t, "inl", bin, fmt.Sprintf("-ldflags=-s -w -X main.attempt=%d", attempt))
		frames = runExitedGo(t, sinkPath, bin)
	}
	require.NotEmpty(t, frames, "three short-lived Go programs ran and no batch held a frame of theirs")
	// That batch (and any after it) at the sink, with start lines.
	batches, err := sinkBatches(sinkPath)
	require.NoError(t, err)
	locs := map[string]*goLoc{}
	for _, pd := range batches {
		goLocations(pd, name, locs)
	}
	src := parseGoSource(t, inlSrc)
	call := callLine(t, inlSrc, "main.burn", "main.hot")
	inlined := 0
	for _, l := range locs {
		for _, ln := range l.lines {
			if ln.Name == "main.burn" {
				require.False(t, src.body("main.hot", ln.Line), "%#x names main.burn at line %d, in hot's body: %v", l.addr, ln.Line, l.lines)
			}
			if r, ok := src[ln.Name]; ok && ln.File == "main.go" {
				require.Equal(t, r[0], ln.StartLine, "start line of %s at %#x", ln.Name, l.addr)
			}
		}
		if len(l.lines) == 2 && l.lines[0].Name == "main.hot" && src.body("main.hot", l.lines[0].Line) {
			require.Equal(t, goLine{"main.burn", "main.go", call, src["main.burn"][0]}, l.lines[1])
			inlined++
		}
	}
	require.Positive(t, inlined, "no location of main.hot inlined into main.burn: %v", locs)
	t.Logf("%s: %d locations of main.hot inlined into main.burn", name, inlined)
}

// runExitedGo is runExited for a Go program (its "for 2000" burns 2 s).
func runExitedGo(t *testing.T, sinkPath, bin string) []nativeFrame {
	t.Helper()
	return runExited(t, sinkPath, dwarftest.Program{Bin: bin})
}
