// A Go program whose hot function the compiler inlines: main.hot into
// main.burn (TestGoFrames* check it with -gcflags=-m). It burns CPU until
// killed, or for the milliseconds given after "for".
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var sink uint64

// attempt is set by -ldflags=-X (a build of its own per attempt).
var attempt = "0"

// hot spends its time in two dependent divisions (the instructions after
// them, where samples land, are lines of its body).
func hot(a, b uint64) uint64 {
	a |= 1 << 63
	q := a / (b | 1)
	r := a / (q>>7 | 3)
	return q ^ r*0x9e3779b97f4a7c15
}

//go:noinline
func burn(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s = hot(s, uint64(i))
	}
	return s
}

func main() {
	sink = uint64(len(attempt))
	until := time.Now().Add(100 * 365 * 24 * time.Hour)
	if len(os.Args) == 3 && os.Args[1] == "for" {
		ms, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		until = time.Now().Add(time.Duration(ms) * time.Millisecond)
	}
	for time.Now().Before(until) {
		sink += burn(1 << 20)
	}
}
