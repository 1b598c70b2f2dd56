package e2e

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// languageRunSeconds is the shortest run: all runtimes at once for 30 s at
// the agent's 19 samples a second. The run goes on until every runtime has
// sent languageMinSamples (a busy shared machine gives niced programs little
// CPU), at most languageMaxSeconds, the programs' own limit.
const (
	languageRunSeconds = 30
	languageMaxSeconds = 300
)

// languageMinSamples is the fewest samples a runtime's service must send for
// its stacks to say anything (a program alone on a CPU sends 19 a second).
const languageMinSamples = 20

// languageMinHotShare is the share of an named runtime's samples whose stack
// must hold its hot function (the rest: start-up, the JIT compiler and the
// garbage collector's threads).
const languageMinHotShare = 0.5

// language is one runtime the docs promise frames for: a small program that
// burns CPU in a function called hot, and what a user sees of it.
type language struct {
	name string
	// version is the command that prints the runtime's version.
	version []string
	// hot is the hot function's name as it appears in the stacks.
	hot string
	// command builds what needs building in dir and returns the command line
	// that burns CPU for the given seconds. The runtimes are prepared at
	// once, each on a goroutine of its own: it returns an error rather than
	// failing the test.
	command func(dir, src string, secs int) ([]string, error)
	// limitation, when set, is a known limitation: the hot function is
	// never in the stacks and the symptom is what a user sees instead.
	limitation *limitation
	// minSamples, when set, replaces languageMinSamples for a runtime whose
	// samples are mostly lost (the symptom needs fewer to show).
	minSamples int64
	// unniced runs the program at the collector's priority instead of
	// nice 10, for a runtime whose samples are mostly lost: on a busy
	// machine a niced one may not send minSamples in languageMaxSeconds.
	unniced bool
}

func (l language) wantSamples() int64 {
	if l.minSamples > 0 {
		return l.minSamples
	}
	return languageMinSamples
}

// limitation is a runtime whose frames are not named here, with the exact
// symptom. check returns an error when what arrived is not that symptom.
type limitation struct {
	symptom string
	check   func(r languageResult, collectorLog string) error
}

// languageResult is what arrived for one runtime's service.
type languageResult struct {
	samples    int64            // samples at the double
	hotSamples int64            // of them, with the hot function in the stack
	inclusive  map[string]int64 // per function name: samples with it in the stack
	firstHot   time.Duration    // from the program's start to the first sample with the hot function (file exporter)
}

func languages() []language {
	return []language{
		{
			name: "go", version: []string{"go", "version"}, hot: hotFunction,
			command: func(dir, src string, secs int) ([]string, error) {
				burner := filepath.Join(src, "..", "..", "..", "smoke", "testdata", "smokeburner")
				bin := filepath.Join(dir, "nxv-lang-go")
				return []string{bin, fmt.Sprint(secs)}, testenv.BuildGoTo(burner, bin)
			},
		},
		{
			name: "c", version: []string{"gcc", "--version"}, hot: "nxv_hot",
			command: func(dir, src string, secs int) ([]string, error) {
				bin := filepath.Join(dir, "nxv-lang-c")
				return []string{bin, fmt.Sprint(secs)}, runStep(dir, "gcc", "-g", "-O1", "-fno-omit-frame-pointer", "-o", bin, filepath.Join(src, "burn.c"))
			},
			// The eBPF profiler sends native frames as an address in a
			// mapping; the symbolize processor of the agent pipeline names
			// them from the binary's symbol table.
		},
		{
			name: "cpp", version: []string{"g++", "--version"}, hot: "nxv::Burner::hot",
			command: func(dir, src string, secs int) ([]string, error) {
				bin := filepath.Join(dir, "nxv-lang-cpp")
				return []string{bin, fmt.Sprint(secs)}, runStep(dir, "g++", "-O1", "-fno-omit-frame-pointer", "-o", bin, filepath.Join(src, "burn.cpp"))
			},
			// Built without -g: the symbol table names it, demangled.
		},
		{
			name: "python", version: []string{"/usr/bin/python3", "--version"}, hot: "nxv_hot",
			command: func(dir, src string, secs int) ([]string, error) {
				return []string{"/usr/bin/python3", filepath.Join(src, "burn.py"), fmt.Sprint(secs)}, nil
			},
		},
		{
			name: "nodejs", version: []string{"/usr/bin/node", "--version"}, hot: "nxvHot",
			command: func(dir, src string, secs int) ([]string, error) {
				return []string{"/usr/bin/node", filepath.Join(src, "burn.js"), fmt.Sprint(secs)}, nil
			},
		},
		{
			name: "java", version: []string{"/usr/bin/java", "-version"}, hot: "nxvHot",
			command: func(dir, src string, secs int) ([]string, error) {
				return []string{"/usr/bin/java", "-cp", dir, "NxvBurn", fmt.Sprint(secs)}, runStep(dir, "/usr/bin/javac", "-d", dir, filepath.Join(src, "NxvBurn.java"))
			},
		},
		{
			name: "php", version: []string{"/usr/bin/php", "--version"}, hot: "nxv_hot",
			command: func(dir, src string, secs int) ([]string, error) {
				return []string{"/usr/bin/php", filepath.Join(src, "burn.php"), fmt.Sprint(secs)}, nil
			},
		},
		{
			name: "perl", version: []string{"/usr/bin/perl", "-e", `print "perl $^V\n"`}, hot: "nxv_hot",
			command: func(dir, src string, secs int) ([]string, error) {
				return []string{"/usr/bin/perl", filepath.Join(src, "burn.pl"), fmt.Sprint(secs)}, nil
			},
			// Perl >= 5.22 keeps a sub of package main that is defined before
			// anything refers to it as a bare code reference in the stash
			// (CvNAMED, no glob); the profiler's Perl unwinder drops such
			// frames ("Unexpected NAMED CV"), so the sub's time shows under
			// the script's <top-level> frame. Subs in packages are named.
			limitation: &limitation{
				symptom: "a sub of the script's main package shows as <top-level>",
				check: func(r languageResult, _ string) error {
					return atLeastHalf(r, "<top-level>")
				},
			},
		},
		{
			name: "perl-package", version: []string{"/usr/bin/perl", "-e", `print "perl $^V\n"`}, hot: "NxvBurn::nxv_hot",
			command: func(dir, src string, secs int) ([]string, error) {
				return []string{"/usr/bin/perl", filepath.Join(src, "burn_package.pl"), fmt.Sprint(secs)}, nil
			},
		},
		{
			name: "ruby", version: []string{"/usr/bin/ruby", "--version"}, hot: "nxv_hot",
			command: func(dir, src string, secs int) ([]string, error) {
				return []string{"/usr/bin/ruby", filepath.Join(src, "burn.rb"), fmt.Sprint(secs)}, nil
			},
			// The profiler looks for ruby_current_ec only in .symtab, which
			// Debian strips from libruby 3.1.2; reading libruby's TLS block
			// through the DTV without that symbol's offset, its eBPF Ruby
			// unwinder yields no frame ("ruby-symtab" adds the symbol back).
			// Debian strips libruby: symbolize names its exported functions
			// from .dynsym (rb_vm_exec), not its static ones (the VM loop).
			limitation: &limitation{
				symptom: "no Ruby frame: the interpreter's exported C functions (rb_vm_exec), its static ones unsymbolized libruby-3.1.so.3.1.2 frames",
				check: func(r languageResult, _ string) error {
					if err := noFunction(r, "<main>", "Object#"); err != nil {
						return err
					}
					if err := atLeastHalf(r, "rb_vm_exec"); err != nil {
						return err
					}
					return atLeastHalf(r, "libruby-3.1.so.3.1.2 (unsymbolized)")
				},
			},
		},
		{
			// The same Ruby with a copy of its libruby whose .symtab holds
			// ruby_current_ec (objcopy): what the profiler needs to name
			// Ruby frames (see the "ruby" entry).
			name: "ruby-symtab", version: []string{"/usr/bin/ruby", "--version"}, hot: "nxv_hot",
			command: func(dir, src string, secs int) ([]string, error) {
				lib, err := rubyWithSymtab(dir)
				return []string{"env", "LD_LIBRARY_PATH=" + lib, "/usr/bin/ruby", filepath.Join(src, "burn.rb"), fmt.Sprint(secs)}, err
			},
		},
		{
			name: "erlang", version: []string{"/usr/bin/erl", "-noshell", "-eval", `io:format("OTP ~s, ERTS ~s~n", [erlang:system_info(otp_release), erlang:system_info(version)]), halt().`},
			hot: "nxv_hot",
			// Most of its samples are lost: CI runs took 5 to 7 in 37 s to
			// 2m44s where the others sent hundreds, and one (cd93280) had
			// fewer than 5 after 300 s. The symptom is the collector's log
			// line and no Erlang frame; one sample under its service name
			// shows that it is named, and the run no longer waits minutes
			// for a handful.
			minSamples: 1,
			unniced:    true,
			command: func(dir, src string, secs int) ([]string, error) {
				return []string{"/usr/bin/erl", "-noshell", "-pa", dir, "-s", "nxv_burn", "main", fmt.Sprint(secs)}, runStep(dir, "/usr/bin/erlc", "-o", dir, filepath.Join(src, "nxv_burn.erl"))
			},
			// The profiler's BEAM support reads the static symbol r of
			// beam_ranges.c, which Debian's stripped beam.smp lacks; past
			// that it supports only OTP 27 and 28 (OTP 25 lacks
			// etp_header_subtag_mask and has other struct layouts).
			// Its JIT-compiled code (BeamAsm) then has no unwinder: a sample
			// taken there holds only kernel frames, one in beam.smp ends in
			// beam.smp frames, and how the two split depends on where the
			// timer interrupts land. Debian strips beam.smp: symbolize names
			// its exported functions from .dynsym (erts_schedule), the rest
			// stays unsymbolized.
			limitation: &limitation{
				symptom: "collector logs \"Failed to load …/beam.smp …: symbol 'r' not found\"; no Erlang frame; its few samples in the kernel, libc and beam.smp (exported C functions such as erts_schedule, or unsymbolized)",
				check: func(r languageResult, log string) error {
					if countLines(log, "Failed to load", "beam.smp", "symbol 'r' not found") == 0 {
						return fmt.Errorf("the collector did not log \"Failed to load …beam.smp…: symbol 'r' not found\"")
					}
					if err := noFunction(r, "nxv_burn", "nxv_hot"); err != nil {
						return err
					}
					// Where its handful of samples land is not checked: the
					// kernel, beam.smp (exported functions or unsymbolized)
					// or libc, any mix (CI runs: 8 samples, 4 in
					// erts_schedule; 5 samples, all in the kernel; 5 samples,
					// 2 in libc's __GI___clock_gettime).
					return nil
				},
			},
		},
	}
}

// TestLanguageCoverage runs one small CPU-burning program per runtime the
// docs promise frames for (Go, C and C++ built here, the others from the
// Debian packages `make prereqs` installs), all at once for 30 s, each with its own
// OTEL_SERVICE_NAME, under the shipped agent config (real eBPF profiler)
// sending to the double. Per runtime, its service must arrive with its hot
// function in most of its stacks, or show exactly its known limitation: a
// change either way fails the test (then update the README's table).
func TestLanguageCoverage(t *testing.T) {
	t.Parallel() // see main_test.go
	root := testenv.RepoRoot(t)
	src := filepath.Join(root, "tests", "e2e", "testdata", "languages")
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "languages", srv, &sent)

	// Build and check every runtime, all at once and while the collector
	// starts: no program runs before both are done.
	langs := languages()
	suffix := fmt.Sprintf("-%d", os.Getpid()) // unique among concurrent runs
	type prepared struct {
		language
		service, version string
		argv             []string
	}
	progs := make([]prepared, len(langs))
	errs := make([]error, len(langs))
	var wg sync.WaitGroup
	prepStart := time.Now()
	for i, l := range langs {
		dir := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command(l.version[0], l.version[1:]...).CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("%s: %s failed (run `make prereqs`): %v: %s", l.name, l.version[0], err, out)
				return
			}
			argv, err := l.command(dir, src, languageMaxSeconds)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", l.name, err)
				return
			}
			progs[i] = prepared{
				language: l,
				service:  "nxv-lang-" + l.name + suffix,
				version:  strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]),
				argv:     argv,
			}
		}()
	}
	t.Cleanup(wg.Wait) // before the folders are removed, should the agent fail to start

	sinkPath, collector := startAgent(t, srv)
	wg.Wait()
	require.NoError(t, errors.Join(errs...), "preparing the runtimes")
	t.Logf("e2e languages: %d runtimes built and checked, and the agent started, in %s", len(progs), time.Since(prepStart).Round(100*time.Millisecond))

	// All programs at once, niced: every runtime's CPU burner on a shared machine.
	started := map[string]time.Time{}
	var procs []*testenv.Process
	for _, p := range progs {
		started[p.service] = time.Now()
		niceness := 10
		if p.unniced {
			niceness = 0
		}
		procs = append(procs, startNiced(t, niceness, []string{"OTEL_SERVICE_NAME=" + p.service}, p.argv))
	}
	runStart := time.Now()
	// usage is what each program's process used of the CPU, last read
	// while it ran: "did not run" and "ran, not profiled" read differently.
	usage := make([]procUsage, len(procs))
	readUsage := func() {
		for i, p := range procs {
			if u, ok := readProcUsage(p.Cmd.Process.Pid); ok {
				usage[i] = u
			}
		}
	}
	// shortOf returns the indexes of the runtimes with fewer samples in got
	// than they need.
	shortOf := func(got map[string]int64) []int {
		var idx []int
		for i, p := range progs {
			if got[p.service] < p.wantSamples() {
				idx = append(idx, i)
			}
		}
		return idx
	}
	// short lists the runtimes that have not sent enough samples yet.
	short := func() string {
		got := srv.ServiceSamples()
		var b strings.Builder
		for _, i := range shortOf(got) {
			p := progs[i]
			fmt.Fprintf(&b, "%s=%d (want %d) ", p.name, got[p.service], p.wantSamples())
		}
		return strings.TrimSpace(b.String())
	}
	// diagnose says, for the runtimes short of samples, what arrived and
	// what their programs did (see languageDiagnosis).
	diagnose := func() string {
		var shortProgs []shortProgram
		got := srv.ServiceSamples()
		for _, i := range shortOf(got) {
			p := progs[i]
			var fns []string
			for _, f := range srv.TopInclusiveFunctions(p.service, 10) {
				fns = append(fns, fmt.Sprintf("%s=%d", f.Function, f.Samples))
			}
			shortProgs = append(shortProgs, shortProgram{name: p.name, service: p.service, pid: procs[i].Cmd.Process.Pid,
				usage: usage[i], started: started[p.service], functions: fns})
		}
		return languageDiagnosis(shortProgs, got, sinkPath, collector)
	}
	testenv.WaitFor(t, languageMaxSeconds*time.Second, fmt.Sprintf("%d s and %d samples of every runtime at the double (Erlang: 1)", languageRunSeconds, languageMinSamples), func() (bool, error) {
		readUsage()
		for i, p := range procs {
			if done, err := p.Exited(); done {
				return false, fmt.Errorf("%s's program ended after %s (%v; its own limit is %d s, the wait's too); samples at the double so far: %s\n%s\n%s",
					progs[i].name, time.Since(runStart).Round(time.Second), err, languageMaxSeconds, short(), diagnose(), p.Output())
			}
		}
		if time.Since(runStart) >= languageMaxSeconds*time.Second {
			// WaitFor's own deadline, a little later, would not say why.
			return false, fmt.Errorf("still short after %d s: %s\n%s", languageMaxSeconds, short(), diagnose())
		}
		return time.Since(runStart) >= languageRunSeconds*time.Second && short() == "", nil
	})
	readUsage()
	for _, p := range procs {
		p.Stop(10 * time.Second)
	}
	runLength := time.Since(runStart).Round(time.Second)
	// What was sampled before the programs ended is in the reports that
	// follow: wait for three more requests accepted by the double.
	accepted := func() int { return srv.Stats().RequestsByStatus[200] }
	after := accepted()
	testenv.WaitFor(t, time.Minute, "three more requests at the double after the programs ended", func() (bool, error) {
		return accepted() >= after+3, nil
	})

	firstHot, err := readFirstHot(sinkPath, func(service string) (string, time.Time, bool) {
		for _, p := range progs {
			if p.service == service {
				return p.hot, started[service], true
			}
		}
		return "", time.Time{}, false
	})
	require.NoError(t, err)
	log := collector.Output()

	for _, p := range progs {
		r := languageResult{samples: srv.ServiceSamples()[p.service], inclusive: map[string]int64{}, firstHot: -1}
		for _, f := range srv.TopInclusiveFunctions(p.service, 0) {
			r.inclusive[f.Function] = f.Samples
			if strings.Contains(f.Function, p.hot) && f.Samples > r.hotSamples {
				r.hotSamples = f.Samples
			}
		}
		if d, ok := firstHot[p.service]; ok {
			r.firstHot = d
		}
		status := "named"
		if p.limitation != nil {
			status = "known limitation: " + p.limitation.symptom
		}
		first := "none"
		if r.firstHot >= 0 {
			first = r.firstHot.Round(100 * time.Millisecond).String()
		}
		t.Logf("e2e languages %s (%s): run=%s samples=%d hot=%d (%.0f%%) first_named=%s status=%s",
			p.name, p.version, runLength, r.samples, r.hotSamples, 100*share(r.hotSamples, r.samples), first, status)
		t.Run(p.name, func(t *testing.T) {
			if r.samples < p.wantSamples() {
				t.Fatalf("%s (%s): %d samples of service %s at the double, want at least %d\n%s", p.name, p.version, r.samples, p.service, p.wantSamples(), diagnose())
			}
			if p.limitation == nil {
				if share(r.hotSamples, r.samples) < languageMinHotShare {
					t.Fatalf("%s (%s): %s in %d of %d samples, want at least %.0f%%; functions in its stacks: %v",
						p.name, p.version, p.hot, r.hotSamples, r.samples, 100*languageMinHotShare, top(r.inclusive, 15))
				}
				return
			}
			if r.hotSamples > 0 {
				t.Fatalf("%s (%s): %s now arrives named in %d of %d samples: the known limitation (%s) is gone; update this test and the README's table",
					p.name, p.version, p.hot, r.hotSamples, r.samples, p.limitation.symptom)
			}
			if err := p.limitation.check(r, log); err != nil {
				t.Fatalf("%s (%s): the known limitation (%s) changed: %v; functions in its stacks: %v",
					p.name, p.version, p.limitation.symptom, err, top(r.inclusive, 15))
			}
		})
	}
}

// readFirstHot reads the file exporter's output and returns, per service
// that hotOf knows, the time from its program's start to the earliest
// sample whose stack holds its hot function.
func readFirstHot(path string, hotOf func(service string) (string, time.Time, bool)) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	err := testenv.ReadProfileLines(path, func(pd pprofile.Profiles) {
		dict := pd.Dictionary()
		str := func(i int32) string { return dict.StringTable().At(int(i)) }
		for _, rp := range pd.ResourceProfiles().All() {
			v, ok := rp.Resource().Attributes().Get("service.name")
			if !ok {
				continue
			}
			hot, start, ok := hotOf(v.AsString())
			if !ok {
				continue
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, p := range sp.Profiles().All() {
					for _, smp := range p.Samples().All() {
						if !stackHas(dict, smp, hot, str) {
							continue
						}
						ts := smp.TimestampsUnixNano()
						if ts.Len() == 0 {
							continue
						}
						d := time.Unix(0, int64(ts.At(0))).Sub(start)
						if cur, seen := out[v.AsString()]; !seen || d < cur {
							out[v.AsString()] = d
						}
					}
				}
			}
		}
	})
	return out, err
}

func stackHas(dict pprofile.ProfilesDictionary, smp pprofile.Sample, fn string, str func(int32) string) bool {
	for _, li := range dict.StackTable().At(int(smp.StackIndex())).LocationIndices().All() {
		for _, line := range dict.LocationTable().At(int(li)).Lines().All() {
			if strings.Contains(str(dict.FunctionTable().At(int(line.FunctionIndex())).NameStrindex()), fn) {
				return true
			}
		}
	}
	return false
}

// atLeastHalf returns an error unless a function whose name ends with fn is
// in at least half of the runtime's samples.
func atLeastHalf(r languageResult, fn string) error {
	for name, n := range r.inclusive {
		if strings.HasSuffix(name, fn) && 2*n >= r.samples {
			return nil
		}
	}
	return fmt.Errorf("%s is not in half of the %d samples", fn, r.samples)
}

// noFunction returns an error if a function whose name contains one of
// names is in the runtime's stacks.
func noFunction(r languageResult, names ...string) error {
	for name, n := range r.inclusive {
		for _, want := range names {
			if strings.Contains(name, want) {
				return fmt.Errorf("%s is now in %d samples", name, n)
			}
		}
	}
	return nil
}

// run runs a build step in dir and fails the test with its output.
func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	if err := runStep(dir, name, args...); err != nil {
		t.Fatal(err)
	}
}

// runStep runs a build step in dir; its error holds the step's output.
func runStep(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v (run `make prereqs`)\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func share(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// top returns the n functions with the most samples, as "name=samples".
func top(counts map[string]int64, n int) []string {
	var out []string
	for _, f := range ingest.TopCounts(counts, n) {
		out = append(out, fmt.Sprintf("%s=%d", f.Function, f.Samples))
	}
	return out
}

// rubyWithSymtab writes into dir/lib a copy of Debian's libruby with
// ruby_current_ec added to a .symtab (Debian strips the library's .symtab;
// the symbol stays in .dynsym, where the profiler does not look) and returns
// that directory, for LD_LIBRARY_PATH.
func rubyWithSymtab(dir string) (string, error) {
	const name = "libruby-3.1.so.3.1"
	orig, err := filepath.EvalSymlinks(filepath.Join("/usr/lib/x86_64-linux-gnu", name))
	if err != nil {
		return "", fmt.Errorf("Debian's libruby (run `make prereqs`): %w", err)
	}
	f, err := elf.Open(orig)
	if err != nil {
		return "", err
	}
	syms, err := f.DynamicSymbols()
	f.Close()
	if err != nil {
		return "", fmt.Errorf("%s's .dynsym: %w", orig, err)
	}
	value := ""
	for _, sym := range syms {
		if sym.Name == "ruby_current_ec" && elf.ST_TYPE(sym.Info) == elf.STT_TLS {
			value = fmt.Sprintf("%#x", sym.Value)
		}
	}
	if value == "" {
		return "", fmt.Errorf("no TLS symbol ruby_current_ec in %s's .dynsym", orig)
	}
	lib := filepath.Join(dir, "lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		return "", err
	}
	// The profiler knows libruby by a file name ending in .so.X.Y.Z: the
	// copy keeps Debian's name, the soname is a link to it.
	if err := runStep(dir, "objcopy", "--add-symbol", "ruby_current_ec="+value+",global", orig, filepath.Join(lib, filepath.Base(orig))); err != nil {
		return "", err
	}
	return lib, os.Symlink(filepath.Base(orig), filepath.Join(lib, name))
}

// startNiced starts argv at the given niceness without a wrapper: the
// child inherits the niceness of the thread that forks it, so the test
// goroutine's thread is reniced around the start. With `nice -n 10 prog`
// the eBPF profiler could sync the PID while it was still nice, before the
// exec: it then drops the samples of the runtime's JIT code (anonymous
// mappings it does not know of for that PID) until a sample in native code
// triggers a new sync (ebpf-profiler support/ebpf/tracemgmt.h,
// interpreter_dispatcher.ebpf.c): 25 to 38 s for node by hand, with the
// profiler's rate limit for such syncs used up. That is a limitation of
// exec wrappers, not of the runtime this test covers.
func startNiced(t *testing.T, niceness int, env, argv []string) *testenv.Process {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := syscall.Gettid()
	// Linux's getpriority returns 20 - nice.
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	require.NoError(t, err, "getpriority of the test's thread")
	own := 20 - raw
	require.NoError(t, syscall.Setpriority(syscall.PRIO_PROCESS, tid, niceness), "renicing the test's thread to %d to start %s", niceness, argv[0])
	defer func() {
		require.NoError(t, syscall.Setpriority(syscall.PRIO_PROCESS, tid, own), "restoring the test's thread to nice %d", own)
	}()
	return testenv.Start(t, env, argv[0], argv[1:]...)
}
