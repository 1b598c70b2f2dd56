package testenv

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParsePortRange(t *testing.T) {
	first, last, err := parsePortRange("32768\t60999\n")
	require.NoError(t, err)
	require.Equal(t, [2]int{32768, 60999}, [2]int{first, last})
	for _, bad := range []string{"", "32768", "a b", "60999 32768", "0 100", "1 70000"} {
		_, _, err := parsePortRange(bad)
		require.Error(t, err, "%q", bad)
	}
}

// The ports handed out are distinct, below the kernel's ephemeral range,
// and free to bind on loopback.
func TestFreePortIsReservedAndOutsideTheEphemeralRange(t *testing.T) {
	lo, hi, err := testPortRange()
	require.NoError(t, err)
	seen := map[int]bool{}
	for range 50 {
		p := FreePort(t)
		require.GreaterOrEqual(t, p, lo)
		require.Less(t, p, hi)
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
	}
	ln, err := net.Listen("tcp", FreeAddr(t))
	require.NoError(t, err)
	require.NoError(t, ln.Close())
}

// A port another test holds, or one a listener holds on any address, is
// skipped; once released, the lock is free again.
func TestReservePortSkipsLockedAndBoundPorts(t *testing.T) {
	lo, hi, err := testPortRange()
	require.NoError(t, err)
	held, release, err := reservePort(lo, hi, func(n int) int { return n / 2 })
	require.NoError(t, err)

	// The same port from another process: the lock is per host, not per process.
	out, err := exec.Command("flock", "-n", filepath.Join(portLockDir, strconv.Itoa(held)), "true").CombinedOutput()
	require.Error(t, err, "flock took port %d's lock while this test held it: %s", held, out)

	tries := []int{held - lo, held - lo + 1}
	next := func(int) int { v := tries[0]; tries = tries[1:]; return v }
	p, release2, err := reservePort(lo, hi, next)
	require.NoError(t, err)
	require.Equal(t, held+1, p, "the held port was handed out again")
	release2()

	// A listener on loopback makes the port unusable even without a lock.
	release()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(held)))
	require.NoError(t, err)
	defer ln.Close()
	tries = []int{held - lo, held - lo + 2}
	p, release3, err := reservePort(lo, hi, next)
	require.NoError(t, err)
	require.Equal(t, held+2, p, "a port bound on 127.0.0.1 was handed out")
	release3()

	_, err = os.Stat(filepath.Join(portLockDir, strconv.Itoa(held)))
	require.ErrorIs(t, err, fs.ErrNotExist, "port %d's lock file left after release", held)
	out, err = exec.Command("flock", "-n", filepath.Join(portLockDir, strconv.Itoa(held)), "true").CombinedOutput()
	require.NoError(t, err, "port %d's lock still held after release: %s", held, out)
	require.NoError(t, os.Remove(filepath.Join(portLockDir, strconv.Itoa(held))))
}

// Reservers racing over a handful of ports (each with a lock file of its
// own, as separate processes have) never hold the same port at once, also
// while released lock files are removed and made anew.
func TestReservePortRaceHoldsEachPortOnce(t *testing.T) {
	lo, _, err := testPortRange()
	require.NoError(t, err)
	const ports, reservers, rounds = 12, 8, 300
	var mu sync.Mutex
	holder := map[int]int{}
	var wg sync.WaitGroup
	errs := make(chan error, reservers)
	for r := range reservers {
		wg.Go(func() {
			for range rounds {
				p, release, err := reservePort(lo, lo+ports, rand.IntN)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if other, ok := holder[p]; ok {
					mu.Unlock()
					errs <- fmt.Errorf("port %d held by reservers %d and %d at once", p, other, r)
					release()
					return
				}
				holder[p] = r
				mu.Unlock()
				runtime.Gosched()
				mu.Lock()
				delete(holder, p)
				mu.Unlock()
				release()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
