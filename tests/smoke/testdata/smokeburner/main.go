// Command smokeburner burns CPU in a function with a name nothing else has,
// so a test can find it among the frames the eBPF profiler reports. It stops
// after the seconds given as its argument, else after two minutes.
//
// With BURN_THREADS=n it burns on n threads at once.
//
// With BURN_SECONDS=n (instead of the argument) it burns for n seconds, prints "done" to standard
// output and then sleeps, so that a test can read the CPU time the kernel
// accounted to it (/proc/<pid>/stat) while it still exists. With
// WARM_UNTIL=path it first burns in nexovueSmokeWarmLoop until path exists
// (at most a minute), prints "warm" and sleeps a second (a test reads
// /proc/<pid>/stat then).
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

//go:noinline
func nexovueSmokeHotLoop(n int) uint64 {
	var x uint64 = 1
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// nexovueSmokeWarmLoop is another leaf function, for the warm-up.
//
//go:noinline
func nexovueSmokeWarmLoop(n int) uint64 {
	x := uint64(n)
	for i := 0; i < n; i++ {
		x ^= x<<13 ^ x>>7 ^ x<<17
	}
	return x
}

func main() {
	if until := os.Getenv("WARM_UNTIL"); until != "" {
		var sink uint64
		for end := time.Now().Add(time.Minute); time.Now().Before(end); {
			if _, err := os.Stat(until); err == nil {
				break
			}
			sink += nexovueSmokeWarmLoop(1 << 20)
		}
		fmt.Fprintln(os.Stderr, sink)
		fmt.Println("warm")
		time.Sleep(time.Second)
	}
	run := 2 * time.Minute // never outlive a test run
	if len(os.Args) > 1 {
		secs, err := strconv.Atoi(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "usage: smokeburner [SECONDS]")
			os.Exit(2)
		}
		run = time.Duration(secs) * time.Second
	}
	deadline := time.Now().Add(run)
	burn, _ := strconv.Atoi(os.Getenv("BURN_SECONDS"))
	if burn > 0 {
		deadline = time.Now().Add(time.Duration(burn) * time.Second)
	}
	// BURN_THREADS=n burns on n threads at once (default 1).
	threads, _ := strconv.Atoi(os.Getenv("BURN_THREADS"))
	sums := make(chan uint64, max(threads, 1))
	for range max(threads, 1) {
		go func() {
			var sink uint64
			for time.Now().Before(deadline) {
				sink += nexovueSmokeHotLoop(1 << 20)
			}
			sums <- sink
		}()
	}
	var sink uint64
	for range max(threads, 1) {
		sink += <-sums
	}
	fmt.Fprintln(os.Stderr, sink)
	if burn > 0 {
		fmt.Println("done")
		time.Sleep(2 * time.Minute)
	}
}
