// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile

import (
	"context"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// inNetnsEnv marks the copy of the test binary that runs inside its own
// network namespace.
const inNetnsEnv = "NXV_DEBUGFILE_IN_NETNS"

// TestDebuginfodRealServer runs Debian's debuginfod serving a directory
// that holds only a debug file, and the client against it, both in a
// network namespace of their own (loopback only, `unshare -n`): the test
// re-executes its own binary there. The stripped binary's static function
// gets its name and its line from the fetched file.
func TestDebuginfodRealServer(t *testing.T) {
	if os.Getenv(inNetnsEnv) != "1" {
		need(t, "unshare", "debuginfod", "gcc", "objcopy", "strip")
		if os.Geteuid() != 0 {
			t.Fatal("unshare -n needs root (make test runs as root)")
		}
		cmd := exec.Command("unshare", "-n", "--", os.Args[0], "-test.run=^TestDebuginfodRealServer$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), inNetnsEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in its own network namespace:\n%s", out)
		if err != nil {
			t.Fatalf("unshare -n: %v", err)
		}
		if !strings.Contains(string(out), "--- PASS: TestDebuginfodRealServer") {
			t.Fatal("the test did not pass inside the namespace")
		}
		return
	}
	loopbackUp(t)
	dir := t.TempDir()
	bin, addr := buildHot(t, dir)
	id := buildIDOf(t, bin)
	srvDir := filepath.Join(dir, "served")
	if err := os.Mkdir(srvDir, 0o700); err != nil {
		t.Fatal(err)
	}
	run(t, "objcopy", "--only-keep-debug", bin, filepath.Join(srvDir, "hot.debug"))
	stripped := filepath.Join(dir, "hot.stripped")
	run(t, "strip", "--strip-all", "-o", stripped, bin)
	if symbolAddr(t, stripped, "nxv_hot") != 0 {
		t.Fatal("the stripped binary names nxv_hot")
	}
	if got := buildIDOf(t, stripped); got != id {
		t.Fatalf("strip changed the build ID: %s, %s", got, id)
	}

	port := freePort(t)
	logPath := filepath.Join(dir, "debuginfod.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	srv := exec.Command("debuginfod", "-F", "-p", fmt.Sprint(port), "-d", filepath.Join(dir, "db.sqlite"), "-t", "3600", "-g", "3600", srvDir)
	srv.Stdout, srv.Stderr = logf, logf
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitScanned(t, base, logPath)

	cfg := DefaultDebuginfodConfig()
	cfg.URLs = []string{base}
	cfg.CacheDir = filepath.Join(dir, "cache")
	d, err := NewDebuginfod(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	results := make(chan error, 1)
	d.done = func(_ string, err error) { results <- err }
	if _, ok := d.Lookup(id); ok {
		t.Fatal("found before the fetch")
	}
	if err := <-results; err != nil {
		t.Fatalf("fetch from debuginfod: %v", err)
	}
	p, ok := d.Lookup(id)
	if !ok {
		t.Fatal("not cached after the fetch")
	}
	// Names: the fetched file's symbol table has the function the stripped
	// binary lost, at its address.
	if got := symbolAddr(t, p, "nxv_hot"); got != addr {
		t.Fatalf("nxv_hot at %#x in the fetched file, %#x in the build", got, addr)
	}
	// Lines: the fetched file's line table gives the address the line the
	// build's own gives it.
	file, line := lineOf(t, p, addr)
	wantFile, wantLine := lineOf(t, bin, addr)
	if filepath.Base(file) != "hot.c" || file != wantFile || line != wantLine || line == 0 {
		t.Fatalf("line of nxv_hot: %s:%d from debuginfod, %s:%d from the build", file, line, wantFile, wantLine)
	}
	t.Logf("stripped binary: nxv_hot at %#x named from debuginfod, %s:%d", addr, filepath.Base(file), line)
}

// loopbackUp brings up lo in a new network namespace (SIOCSIFFLAGS).
func loopbackUp(t *testing.T) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		t.Fatal(err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		t.Fatalf("bringing lo up: %v", err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitScanned polls debuginfod's metrics until its scan of the directory
// has found the files (at most a minute).
func waitScanned(t *testing.T, base, logPath string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", http.NoBody)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var sb strings.Builder
			_, _ = ioCopyN(&sb, resp)
			resp.Body.Close()
			if scannedELF(sb.String()) {
				cancel()
				return
			}
		}
		cancel()
		time.Sleep(100 * time.Millisecond) // polling interval of the condition
	}
	log, _ := os.ReadFile(logPath)
	t.Fatalf("debuginfod did not scan its directory within a minute; its log:\n%s", log)
}

// ioCopyN reads at most 1 MiB of a response body.
func ioCopyN(sb *strings.Builder, resp *http.Response) (int64, error) {
	return io.Copy(sb, io.LimitReader(resp.Body, 1<<20))
}

// scannedELF reports whether debuginfod's metrics count a debug file found
// in its directory.
func scannedELF(metrics string) bool {
	for _, l := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(l, `found_debuginfo_total{source="files"} `); ok {
			return v != "0"
		}
	}
	return false
}

// lineOf returns the file and line DWARF's line table gives an address.
func lineOf(t *testing.T, path string, addr uint64) (string, int) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil || cu == nil {
			t.Fatalf("%s: no unit holds %#x (%v)", path, addr, err)
		}
		if cu.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		ranges, err := d.Ranges(cu)
		r.SkipChildren()
		if err != nil {
			continue
		}
		in := false
		for _, rg := range ranges {
			in = in || (addr >= rg[0] && addr < rg[1])
		}
		if !in {
			continue
		}
		lr, err := d.LineReader(cu)
		if err != nil || lr == nil {
			t.Fatalf("%s: line table: %v", path, err)
		}
		var e dwarf.LineEntry
		if err := lr.SeekPC(addr, &e); err != nil && !errors.Is(err, dwarf.ErrUnknownPC) {
			t.Fatal(err)
		}
		if e.File == nil {
			t.Fatalf("%s: no line for %#x", path, addr)
		}
		return e.File.Name, e.Line
	}
}
