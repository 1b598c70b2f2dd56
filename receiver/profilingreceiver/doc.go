// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package profilingreceiver is otelcol-nexovue's `profiling` receiver: the
// upstream OpenTelemetry eBPF profiler receiver
// (go.opentelemetry.io/ebpf-profiler/collector) with one changed default:
// include_env_vars reports OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, so
// the service_name processor can name every profiled process. On systems other
// than Linux on amd64/arm64 the receiver accepts its configuration but refuses
// to start, with a message saying it needs Linux.
package profilingreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver"

import "fmt"

// DefaultIncludeEnvVars is the comma-separated list of environment variables
// the receiver reports by default, as process.environment_variable.<NAME>
// resource attributes. A value set in the configuration replaces it.
const DefaultIncludeEnvVars = "OTEL_SERVICE_NAME,OTEL_RESOURCE_ATTRIBUTES"

// errNeedsLinux is what the receiver answers on other systems.
func errNeedsLinux(goos, goarch string) error {
	return fmt.Errorf("the profiling (eBPF) receiver needs Linux on amd64 or arm64, this is %s/%s: "+
		"remove it from the pipeline and scrape Go services with the pprof receiver instead "+
		"(see pprof.yaml in this distribution)", goos, goarch)
}
