// A program whose hot function the compiler inlines (the gopclntab tests
// build it plain, stripped, as PIE, and linked externally with cgo, which
// compiles what it uses of the standard library again: it imports no
// package, println is built in, so that this costs little with an empty
// build cache).
package main

// The lines below are those the tests expect.

var sink int

func mix(a, b int) int {
	return a*31 + b ^ a>>3
}

func step(a, i int) int {
	return mix(a, i) + 1
}

func main() {
	n := 1000
	if sink > 0 {
		n = 1 << 30
	}
	s := 0
	for i := 0; i < n; i++ {
		s = step(s, i)
	}
	sink = s
	println(s)
}
