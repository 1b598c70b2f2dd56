// Command benchload is the workload of the benchmark harness.
//
//	benchload work    reads lines from standard input; for each line "N" it
//	                  hashes N rounds in one goroutine and prints the
//	                  elapsed nanoseconds and the CPU nanoseconds the
//	                  process used meanwhile (the fixed work of the
//	                  overhead benchmark, timed by the workload itself)
//	benchload busy I  stays busy for a fraction of every 100 ms (-duty) in
//	                  a call chain I frames deep, so that 20 of them give
//	                  the profiler a steady load of distinct stacks
//
// Both end by themselves after -for, in case the harness dies.
package main

import (
	"bufio"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

//go:noinline
func hashRounds(seed [32]byte, rounds int) [32]byte {
	for i := 0; i < rounds; i++ {
		seed = sha256.Sum256(seed[:])
	}
	return seed
}

// descend calls itself depth times, then burns for d.
//
//go:noinline
func descend(depth int, d time.Duration, seed [32]byte) [32]byte {
	if depth > 0 {
		return descend(depth-1, d, seed)
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
		seed = hashRounds(seed, 64)
	}
	return seed
}

func main() {
	life := flag.Duration("for", 15*time.Minute, "end after this long")
	duty := flag.Float64("duty", 0.05, "busy: fraction of every 100 ms spent busy")
	flag.Parse()
	time.AfterFunc(*life, func() { os.Exit(3) })
	switch flag.Arg(0) {
	case "work":
		runtime.GOMAXPROCS(1)
		work()
	case "busy":
		id, _ := strconv.Atoi(flag.Arg(1))
		busy(id, *duty)
	default:
		fmt.Fprintln(os.Stderr, "usage: benchload [-for D] work | [-duty F] busy ID")
		os.Exit(2)
	}
}

func work() {
	in := bufio.NewScanner(os.Stdin)
	var seed [32]byte
	for in.Scan() {
		n, err := strconv.Atoi(strings.TrimSpace(in.Text()))
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchload: want a round count:", err)
			os.Exit(2)
		}
		c0, t0 := cpuTime(), time.Now()
		seed = hashRounds(seed, n)
		wall := time.Since(t0)
		fmt.Println(wall.Nanoseconds(), (cpuTime() - c0).Nanoseconds(), seed[0])
	}
}

// cpuTime is the user and system time of this process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func busy(id int, duty float64) {
	const period = 100 * time.Millisecond
	on := time.Duration(duty * float64(period))
	var seed [32]byte
	for next := time.Now(); ; {
		seed = descend(5+3*id, on, seed)
		next = next.Add(period)
		time.Sleep(time.Until(next))
	}
}
