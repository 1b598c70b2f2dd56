// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Command pprofserver is the workload the receiver's tests scrape. It serves
// net/http/pprof on 127.0.0.1 (printing "listening on http://ADDR" first)
// while allocating, burning CPU, blocking on channels and contending a mutex,
// each in a function of its own. GET /burst?n=N&size=S allocates N objects of
// S bytes in main.knownBurst and runs a GC, so that the allocs profile shows
// them; every allocation is recorded (MemProfileRate 1).
package main

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

func init() {
	runtime.MemProfileRate = 1
}

var (
	sinkMu sync.Mutex
	sink   [][]byte
	kept   [][]byte
)

//go:noinline
func burnCPU() {
	var sum [32]byte
	for {
		for i := 0; i < 20000; i++ {
			sum = sha256.Sum256(sum[:])
		}
		time.Sleep(time.Millisecond) // leave the shared CPU some air
	}
}

//go:noinline
func allocate() {
	for i := 0; ; i++ {
		b := make([]byte, 1024+i%4096)
		if i%16 == 0 {
			kept = append(kept, b)
			if len(kept) > 256 {
				kept = kept[1:]
			}
		}
		if i%16 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

//go:noinline
func blockOnChannel(ch chan int) {
	for range ch {
	}
}

//go:noinline
func contendMutex(mu *sync.Mutex) {
	for {
		mu.Lock()
		time.Sleep(100 * time.Microsecond)
		mu.Unlock()
		time.Sleep(50 * time.Microsecond)
	}
}

// burst allocates n objects of size bytes, all of them in knownBurst.
func burst(n, size int) {
	out := make([][]byte, n)
	knownBurst(out, size)
	sinkMu.Lock()
	sink = append(sink, out...)
	sinkMu.Unlock()
}

//go:noinline
func knownBurst(out [][]byte, size int) {
	for i := range out {
		out[i] = make([]byte, size)
	}
}

func main() {
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}

	go burnCPU()
	go allocate()
	ch := make(chan int)
	go blockOnChannel(ch)
	go func() {
		for i := 0; ; i++ {
			time.Sleep(time.Millisecond)
			ch <- i
		}
	}()
	var mu sync.Mutex
	for i := 0; i < 3; i++ {
		go contendMutex(&mu)
	}

	http.HandleFunc("/burst", func(w http.ResponseWriter, r *http.Request) {
		n, err1 := strconv.Atoi(r.URL.Query().Get("n"))
		size, err2 := strconv.Atoi(r.URL.Query().Get("size"))
		if err1 != nil || err2 != nil || n <= 0 || size <= 0 {
			http.Error(w, "want n and size", http.StatusBadRequest)
			return
		}
		burst(n, size)
		runtime.GC() // publish the allocations in the heap profile
		fmt.Fprintln(w, "ok")
	})

	fmt.Printf("listening on http://%s\n", ln.Addr())
	if err := http.Serve(ln, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
