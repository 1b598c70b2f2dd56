// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// dbgdC spends its time in a static function that a stripped build names
// nowhere (only the debug file on the debuginfod server does), and in the
// vDSO's clock_gettime.
const dbgdC = `#include <stdio.h>
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) static unsigned long nxv_dbgd_hot(unsigned long n) {
	unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x = x * 31 + (i ^ (x >> 7));
	return x;
}
int main(void) {
	struct timespec ts;
	for (;;) {
		sink += nxv_dbgd_hot(1000000 + (sink & 1)); // a call per turn: sink is volatile
		for (int i = 0; i < 20000; i++) { // the vDSO's clock_gettime
			clock_gettime(CLOCK_MONOTONIC, &ts);
			sink += ts.tv_nsec;
		}
	}
}
`

// TestDebuginfodEndToEnd: the shipped agent (real eBPF profiler) with
// debuginfod on, and Debian's debuginfod serving a directory that holds the
// only debug file of a stripped C program; both run in a network namespace
// of their own (unshare -n, loopback only), the program on the host. The
// program's hot static function gets its name and its source line, from the
// file fetched off the batch path; its frames in the vDSO are named from
// its [vdso] mapping.
func TestDebuginfodEndToEnd(t *testing.T) {
	t.Parallel() // see main_test.go
	for _, tool := range []string{"unshare", "ip", "debuginfod", "gcc", "objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (make prereqs installs it): %v", tool, err)
		}
	}
	dir := t.TempDir()
	src := writeFile(t, dir, "dbgd.c", dbgdC)
	bin := filepath.Join(dir, "nxv-dbgd")
	run(t, dir, "gcc", "-g", "-O2", "-Wl,--build-id", "-o", bin, src)
	srvDir := filepath.Join(dir, "served")
	require.NoError(t, os.Mkdir(srvDir, 0o700))
	run(t, dir, "objcopy", "--only-keep-debug", bin, filepath.Join(srvDir, "nxv-dbgd.debug"))
	run(t, dir, "strip", "--strip-all", bin)

	// The function's lines in the source: where a named frame's line must be.
	lines := strings.Split(dbgdC, "\n")
	first, last := 0, 0
	for i, l := range lines {
		if strings.Contains(l, "nxv_dbgd_hot(unsigned long n)") {
			first = i + 1
		}
		if first > 0 && last == 0 && l == "}" {
			last = i + 1
		}
	}

	prog := exec.Command(bin)
	prog.Env = append(os.Environ(), "OTEL_SERVICE_NAME=nxv-dbgd")
	require.NoError(t, prog.Start())
	t.Cleanup(func() { _ = prog.Process.Kill(); _ = prog.Wait() })

	port := testenv.FreePort(t)
	script := fmt.Sprintf(`set -e
ip link set lo up
debuginfod -F -p %d -d %s -t 3600 -g 3600 %s >%s 2>&1 &
exec "$@"`, port, filepath.Join(dir, "db.sqlite"), srvDir, filepath.Join(dir, "debuginfod.log"))
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sink, _ := startAgentWith(t, srv, []string{"unshare", "-n", "--", "sh", "-c", script, "sh"}, fmt.Sprintf(`
processors:
  symbolize:
    debuginfod:
      urls: [http://127.0.0.1:%d]
      cache_dir: %s
      negative_cache_ttl: 1s
`, port, filepath.Join(dir, "cache")))

	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		log, _ := os.ReadFile(filepath.Join(dir, "debuginfod.log"))
		t.Logf("debuginfod's log:\n%s", tail(string(log), 2000))
		var cached []string
		_ = filepath.Walk(filepath.Join(dir, "cache"), func(p string, _ os.FileInfo, _ error) error {
			cached = append(cached, p)
			return nil
		})
		t.Logf("cache: %v", cached)
		seen := map[string]int{}
		_ = testenv.ReadProfileLines(sink, func(pd pprofile.Profiles) { dbgdNames(pd, seen) })
		t.Logf("nxv-dbgd's frames: %v", seen)
	})
	var got string
	testenv.WaitFor(t, 3*time.Minute, "nxv_dbgd_hot named with its line from debuginfod", func() (bool, error) {
		err := testenv.ReadProfileLines(sink, func(pd pprofile.Profiles) {
			if got == "" {
				got = dbgdFrame(pd, first, last)
			}
		})
		return got != "", err
	})
	t.Logf("from debuginfod: %s (the function spans lines %d-%d)", got, first, last)

	// The vDSO, named from the process's own [vdso] mapping.
	var vdso string
	testenv.WaitFor(t, time.Minute, "a frame in linux-vdso.1.so named clock_gettime", func() (bool, error) {
		err := testenv.ReadProfileLines(sink, func(pd pprofile.Profiles) {
			eachDbgdFrame(pd, func(loc pprofile.Location, str func(int32) string) {
				mapping := str(pd.Dictionary().MappingTable().At(int(loc.MappingIndex())).FilenameStrindex())
				for _, ln := range loc.Lines().All() {
					name := str(pd.Dictionary().FunctionTable().At(int(ln.FunctionIndex())).NameStrindex())
					if vdso == "" && mapping == "linux-vdso.1.so" && strings.Contains(name, "clock_gettime") {
						vdso = name
					}
				}
			})
		})
		return vdso != "", err
	})
	t.Logf("vDSO frame: %s", vdso)
}

// eachDbgdFrame calls each for every location of nxv-dbgd's samples.
func eachDbgdFrame(pd pprofile.Profiles, each func(loc pprofile.Location, str func(int32) string)) {
	dict := pd.Dictionary()
	str := func(i int32) string { return dict.StringTable().At(int(i)) }
	for _, rp := range pd.ResourceProfiles().All() {
		if v, ok := rp.Resource().Attributes().Get("service.name"); !ok || v.AsString() != "nxv-dbgd" {
			continue
		}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, smp := range p.Samples().All() {
					for _, li := range dict.StackTable().At(int(smp.StackIndex())).LocationIndices().All() {
						each(dict.LocationTable().At(int(li)), str)
					}
				}
			}
		}
	}
}

// dbgdFrame returns "name file:line" of a frame of nxv-dbgd's samples in
// nxv_dbgd_hot with a line within [first, last], "" when there is none.
func dbgdFrame(pd pprofile.Profiles, first, last int) string {
	found := ""
	eachDbgdFrame(pd, func(loc pprofile.Location, str func(int32) string) {
		for _, ln := range loc.Lines().All() {
			fn := pd.Dictionary().FunctionTable().At(int(ln.FunctionIndex()))
			if found == "" && strings.HasPrefix(str(fn.NameStrindex()), "nxv_dbgd_hot") && filepath.Base(str(fn.FilenameStrindex())) == "dbgd.c" &&
				ln.Line() >= int64(first) && ln.Line() <= int64(last) {
				found = fmt.Sprintf("%s %s:%d", str(fn.NameStrindex()), str(fn.FilenameStrindex()), ln.Line())
			}
		}
	})
	return found
}

// dbgdNames counts the frames of nxv-dbgd's samples by "name file:line"
// (the test's diagnosis).
func dbgdNames(pd pprofile.Profiles, seen map[string]int) {
	eachDbgdFrame(pd, func(loc pprofile.Location, str func(int32) string) {
		if loc.Lines().Len() == 0 {
			seen["unsymbolized in "+str(pd.Dictionary().MappingTable().At(int(loc.MappingIndex())).FilenameStrindex())]++
		}
		for _, ln := range loc.Lines().All() {
			fn := pd.Dictionary().FunctionTable().At(int(ln.FunctionIndex()))
			seen[fmt.Sprintf("%s %s:%d", str(fn.NameStrindex()), str(fn.FilenameStrindex()), ln.Line())]++
		}
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
