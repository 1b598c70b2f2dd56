// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Command podburner is the workload of a test pod. The test starts it in its
// container's cgroup (startInCgroup: a launcher joins the cgroup, then
// executes it, as a container runtime does). It says "ready", then burns
// about 7% of one CPU (many run at once on a shared machine) in a function
// with a name nothing else has, until it is killed or ten minutes have passed.
package main

import (
	"fmt"
	"os"
	"time"
)

//go:noinline
func nexovuePodHotLoop(until time.Time) uint64 {
	var x uint64 = 1
	for time.Now().Before(until) {
		for i := 0; i < 1<<14; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

func main() {
	fmt.Println("ready")
	deadline := time.Now().Add(10 * time.Minute) // never outlive a test run
	var sink uint64
	for time.Now().Before(deadline) {
		sink += nexovuePodHotLoop(time.Now().Add(10 * time.Millisecond))
		time.Sleep(140 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, sink)
}
