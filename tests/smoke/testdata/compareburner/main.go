// Command compareburner burns CPU in one function, then in another, so that
// a test can compare the two halves in the profile view.
//
// BURN_MODE=halves (the default) burns in nexovueCompareFirst for
// PHASE_SECONDS (default 25), sleeps GAP_SECONDS (default 6: longer than one
// of the view's time slots, so no slot holds both), then burns in
// nexovueCompareSecond for PHASE_SECONDS. It prints "first <time>",
// "gap <time>", "second <time>" and "done <time>" (RFC 3339, nanoseconds)
// to standard output as it goes, then sleeps (at most two minutes) so that
// a test reads the view while it still exists. BURN_MODE=first or second
// burns only in that function for 2*PHASE_SECONDS+GAP_SECONDS.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

//go:noinline
func nexovueCompareFirst(n int) uint64 {
	var x uint64 = 1
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func nexovueCompareSecond(n int) uint64 {
	x := uint64(n)
	for i := 0; i < n; i++ {
		x ^= x<<13 ^ x>>7 ^ x<<17
	}
	return x
}

var sink uint64

func burn(fn func(int) uint64, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		sink += fn(1 << 18)
	}
}

func seconds(name string, def int) time.Duration {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "%s: %q is not a positive number of seconds\n", name, s)
			os.Exit(2)
		}
		return time.Duration(n) * time.Second
	}
	return time.Duration(def) * time.Second
}

func mark(what string) { fmt.Printf("%s %s\n", what, time.Now().UTC().Format(time.RFC3339Nano)) }

func main() {
	phase, gap := seconds("PHASE_SECONDS", 25), seconds("GAP_SECONDS", 6)
	switch mode := os.Getenv("BURN_MODE"); mode {
	case "", "halves":
		mark("first")
		burn(nexovueCompareFirst, phase)
		mark("gap")
		time.Sleep(gap)
		mark("second")
		burn(nexovueCompareSecond, phase)
	case "first":
		mark("first")
		burn(nexovueCompareFirst, 2*phase+gap)
	case "second":
		mark("second")
		burn(nexovueCompareSecond, 2*phase+gap)
	default:
		fmt.Fprintf(os.Stderr, "BURN_MODE: %q is not halves, first or second\n", mode)
		os.Exit(2)
	}
	mark("done")
	fmt.Fprintln(os.Stderr, sink)
	time.Sleep(2 * time.Minute)
}
