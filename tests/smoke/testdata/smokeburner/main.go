// Command smokeburner burns CPU in a function with a name nothing else has,
// so a test can find it among the frames the eBPF profiler reports.
package main

import (
	"fmt"
	"os"
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
	deadline := time.Now().Add(2 * time.Minute) // never outlive a test run
	var sink uint64
	for time.Now().Before(deadline) {
		sink += nexovueSmokeHotLoop(1 << 20)
	}
	fmt.Fprintln(os.Stderr, sink)
}
