// A program whose hot function the compiler inlines (the gopclntab tests
// build it plain, stripped and as PIE).
package main

import (
	"fmt"
	"os"
)

var sink int

func mix(a, b int) int {
	return a*31 + b ^ a>>3
}

func step(a, i int) int {
	return mix(a, i) + 1
}

func main() {
	n := 1000
	if len(os.Args) > 1 {
		n = 1 << 30
	}
	s := 0
	for i := 0; i < n; i++ {
		s = step(s, i)
	}
	sink = s
	fmt.Println(s)
}
