// cpuburner keeps one CPU busy in a function of its own (main.burn) so that
// the eBPF profiler has something to sample under the process's
// OTEL_SERVICE_NAME. It ends by itself after -for, in case its test dies.
package main

import (
	"crypto/sha256"
	"flag"
	"time"
)

//go:noinline
func burn(seed [32]byte, rounds int) [32]byte {
	for i := 0; i < rounds; i++ {
		seed = sha256.Sum256(seed[:])
	}
	return seed
}

func main() {
	d := flag.Duration("for", 3*time.Minute, "how long to run")
	flag.Parse()
	var sum [32]byte
	for end := time.Now().Add(*d); time.Now().Before(end); {
		sum = burn(sum, 10000)
	}
	_ = sum
}
