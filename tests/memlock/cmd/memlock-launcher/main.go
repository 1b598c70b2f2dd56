//go:build linux

// Command memlock-launcher runs a program (the collector) so that its calls
// setting RLIMIT_MEMLOCK succeed where the process lacks CAP_SYS_RESOURCE.
// Test-only: see package github.com/nexovue/otelcol-nexovue/tests/memlock for
// why it exists and when it applies.
//
//	memlock-launcher <program> [args...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/nexovue/otelcol-nexovue/tests/memlock"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: memlock-launcher <program> [args...]")
		os.Exit(2)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "memlock-launcher: %v\n", err)
		os.Exit(127)
	}
	needed, err := memlock.Needed()
	if err != nil {
		fmt.Fprintf(os.Stderr, "memlock-launcher: %v\n", err)
		os.Exit(1)
	}
	if needed {
		if err := memlock.Install(); err != nil {
			fmt.Fprintf(os.Stderr, "memlock-launcher: %v\n", err)
			os.Exit(1)
		}
	}
	err = syscall.Exec(path, os.Args[1:], os.Environ())
	fmt.Fprintf(os.Stderr, "memlock-launcher: exec %s: %v\n", path, err)
	os.Exit(126)
}
