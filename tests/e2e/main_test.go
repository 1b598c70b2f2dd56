package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// defaultParallel is how many of the package's tests marked t.Parallel()
// run at once when -test.parallel is not given (go test's default is
// GOMAXPROCS, 2 on CI). They spend most of their time waiting for what a
// collector sends every reporter interval, not computing; the tests whose
// figures need the CPU (pacing, throttling, the gateway tier, the bench
// harness) do not call t.Parallel, so go test runs them first, one at a
// time. The eBPF agents start one at a time (startEBPFCollector).
const defaultParallel = 3

// TestMain clears the environment every test's collectors and programs
// inherit of OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (a CI job or a
// developer's shell may set them; they would name the programs the tests
// profile), once for the process: a test that runs beside others cannot
// change its own (t.Setenv), and these tests set the names they want on
// each program they start. It then runs the tests, defaultParallel at once
// unless -test.parallel says otherwise.
func TestMain(m *testing.M) {
	for _, v := range []string{"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
		if err := os.Unsetenv(v); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: unset %s: %v\n", v, err)
			os.Exit(2)
		}
	}
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", fmt.Sprint(defaultParallel)); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: -test.parallel: %v\n", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
