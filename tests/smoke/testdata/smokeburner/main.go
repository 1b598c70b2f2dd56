// Command smokeburner burns CPU in a function with a name nothing else has,
// so a test can find it among the frames the eBPF profiler reports. It stops
// after the seconds given as its argument, else after two minutes.
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

func main() {
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
	var sink uint64
	for time.Now().Before(deadline) {
		sink += nexovueSmokeHotLoop(1 << 20)
	}
	fmt.Fprintln(os.Stderr, sink)
}
