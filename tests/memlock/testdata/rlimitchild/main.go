// Command rlimitchild makes the rlimit calls the eBPF profiler makes and
// prints what they return, for memlock's tests.
package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func main() {
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &cur); err != nil {
		fmt.Println("get-memlock:", err)
	} else {
		fmt.Printf("get-memlock: cur=%d max=%d\n", cur.Cur, cur.Max)
	}
	var old unix.Rlimit
	inf := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &inf, &old); err != nil {
		fmt.Println("set-memlock:", err)
	} else {
		fmt.Println("set-memlock: ok")
	}
	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
		fmt.Println("get-nofile:", err)
		return
	}
	above := unix.Rlimit{Cur: nofile.Max + 1, Max: nofile.Max + 1}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &above); err != nil {
		fmt.Println("nofile-above-hard:", err)
	} else {
		fmt.Println("nofile-above-hard: ok")
	}
}
