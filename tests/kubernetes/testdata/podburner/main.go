// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Command podburner is the workload of a test pod. It first moves itself into
// the cgroup whose cgroup.procs file is its first argument, then executes
// itself again, as a container runtime's init executes the container's
// program once in its cgroup: the profiler reads a process's cgroup again on
// exec, so even a sample taken before the move cannot leave the process
// without its container.id. Then it burns
// about 7% of one CPU (many run at once on a shared machine) in a function
// with a name nothing else has, until it is killed or ten minutes have passed.
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
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
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: podburner <cgroup.procs>")
		os.Exit(2)
	}
	if os.Getenv("PODBURNER_JOINED") == "" {
		if err := os.WriteFile(os.Args[1], []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			fmt.Fprintf(os.Stderr, "podburner: join cgroup: %v\n", err)
			os.Exit(1)
		}
		exe, err := os.Executable()
		if err == nil {
			err = syscall.Exec(exe, os.Args, append(os.Environ(), "PODBURNER_JOINED=1"))
		}
		fmt.Fprintf(os.Stderr, "podburner: exec: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	deadline := time.Now().Add(10 * time.Minute) // never outlive a test run
	var sink uint64
	for time.Now().Before(deadline) {
		sink += nexovuePodHotLoop(time.Now().Add(10 * time.Millisecond))
		time.Sleep(140 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, sink)
}
