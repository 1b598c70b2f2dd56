// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// A Go program whose hot function the compiler inlines: main.mix inlined
// into main.step, inlined into main.main (the symbolize processor's Go
// tests). With "wait" it prints ready and waits to be killed.
package main

import (
	"fmt"
	"os"
	"time"
)

var sink int

func mix(a, b int) int {
	return a*31 + b ^ a>>3
}

func step(a, i int) int {
	return mix(a, i) + 1
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "wait" {
		fmt.Println("ready")
		for {
			time.Sleep(time.Hour)
		}
	}
	s := 0
	for i := 0; i < 1000; i++ {
		s = step(s, i)
	}
	sink = s
	fmt.Println(s)
}
