// A Go program with a hot call only profile-guided optimisation inlines:
// main.heavy costs more than the inliner's default budget (80) and less
// than its budget for hot calls (2000), and main.work calls it in its hot
// loop. Without arguments it burns CPU until killed; "bench N" runs work
// N times and prints the nanoseconds one took (the PGO figure).
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var sink uint64

// reseed is never called in practice (heavy's argument is never 0). A
// function that calls another has a stack frame, and the eBPF profiler,
// which unwinds Go code on amd64 by frame pointers, then sees heavy's
// caller (the caller of a leaf function without a frame is missing from
// its stacks).
//
//go:noinline
func reseed() uint64 { return 0x9e3779b97f4a7c15 }

// heavy's hot path is a few instructions; its cold branch makes it cost
// more than the inliner's default budget, so that without PGO every call
// pays for the call itself.
func heavy(x uint64) uint64 {
	if x == 0 {
		x = reseed()
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
		x *= 0xc4ceb9fe1a85ec53
		x ^= x >> 33
		x ^= x << 7
		x ^= x >> 9
		x *= 0x94d049bb133111eb
		x ^= x >> 31
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 27
	}
	return x*0x9e3779b97f4a7c15 + x>>29
}

//go:noinline
func work(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += heavy(s + uint64(i) | 1)
	}
	return s
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "bench" {
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		start := time.Now()
		for i := 0; i < n; i++ {
			sink += work(1 << 16)
		}
		fmt.Println(time.Since(start).Nanoseconds() / int64(n))
		return
	}
	for {
		sink += work(1 << 20)
	}
}
