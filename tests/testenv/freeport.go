package testenv // import "github.com/nexovue/otelcol-nexovue/tests/testenv"

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Ports handed to the collector and the servers tests start come from below
// the host's ephemeral range, so no outgoing connection and no listener on
// port 0 (anywhere on the host) can take one between the choice and the
// bind. Test processes that run at the same time (go test runs packages in
// parallel) keep out of each other's way with a lock file per port, held
// until the test that reserved it ends. The kernel's ephemeral range was
// where the old "listen on :0, close, hand out" ports came from: on
// 2026-12-03 CI's language test lost its health_check port to another
// process in the second between the choice and the collector's bind.
const (
	lowestTestPort = 10000 // well above the privileged and the common service ports
	portAttempts   = 200
)

// portLockDir holds one lock file per reserved port, shared by every test
// process on the host.
var portLockDir = filepath.Join(os.TempDir(), "otelcol-nexovue-test-ports")

// FreeAddr returns a loopback address (127.0.0.1:port) whose port is free
// and reserved for t: no other test on this host is handed it before t
// ends, and it is outside the range the kernel picks ports from.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
}

// FreePort is FreeAddr's port.
func FreePort(t testing.TB) int {
	t.Helper()
	lo, hi, err := testPortRange()
	if err != nil {
		t.Fatalf("find a free loopback port: %v", err)
	}
	port, release, err := reservePort(lo, hi, rand.IntN)
	if err != nil {
		t.Fatalf("find a free loopback port in %d-%d: %v", lo, hi-1, err)
	}
	t.Cleanup(release)
	return port
}

// testPortRange is [lo, hi): from lowestTestPort up to the first port of
// the kernel's ephemeral range.
func testPortRange() (lo, hi int, err error) {
	const file = "/proc/sys/net/ipv4/ip_local_port_range"
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, err
	}
	ephemeralLo, _, err := parsePortRange(string(data))
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", file, err)
	}
	if ephemeralLo-lowestTestPort < 1000 {
		return 0, 0, fmt.Errorf("%s starts at %d: fewer than 1000 ports below it from %d for tests", file, ephemeralLo, lowestTestPort)
	}
	return lowestTestPort, ephemeralLo, nil
}

// parsePortRange reads ip_local_port_range's "first last".
func parsePortRange(s string) (first, last int, err error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("want two numbers, got %q", s)
	}
	if first, err = strconv.Atoi(f[0]); err == nil {
		last, err = strconv.Atoi(f[1])
	}
	if err != nil || first < 1 || last < first || last > 65535 {
		return 0, 0, fmt.Errorf("not a port range: %q", s)
	}
	return first, last, nil
}

// reservePort picks ports in [lo, hi) at random until one is both unlocked
// by other tests and free to listen on, and returns it with the function
// that gives it back.
func reservePort(lo, hi int, intN func(int) int) (int, func(), error) {
	if err := os.MkdirAll(portLockDir, 0o777); err != nil {
		return 0, nil, err
	}
	var last error
	for range portAttempts {
		port := lo + intN(hi-lo)
		release, err := lockPort(port)
		if err != nil {
			last = err
			continue
		}
		if err := canListen(port); err != nil {
			release()
			last = err
			continue
		}
		return port, release, nil
	}
	return 0, nil, fmt.Errorf("no port after %d attempts; last: %w", portAttempts, last)
}

// lockPort takes the port's lock file; it fails at once if another test
// holds it, in this process or another. Releasing removes the file, so the
// folder holds only the ports in use; a lock taken on a file that was removed
// meanwhile (its holder released it between our open and our flock) does not
// count, since a third test may have made and locked a new file by then.
func lockPort(port int) (func(), error) {
	path := filepath.Join(portLockDir, strconv.Itoa(port))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("port %d: reserved by another test", port)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	held, err1 := f.Stat()
	named, err2 := os.Stat(path)
	if err1 != nil || err2 != nil || !os.SameFile(held, named) {
		f.Close()
		return nil, fmt.Errorf("port %d: its lock file changed hands while locking", port)
	}
	return func() {
		os.Remove(path) // while still locked: nobody can hold this file's lock now
		f.Close()
	}, nil
}

// canListen checks the port is bound by nothing: a listener on any address
// would make a wildcard bind fail.
func canListen(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return ln.Close()
}
