// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml
// mdatagen v0.161.0 forgets to import xconnector in the lifecycle test of a
// profiles_to_metrics connector; the next line adds the import.
//go:generate perl -0pi -e "s|(?<=connector/connectortest\"\n)|\t\"go.opentelemetry.io/collector/connector/xconnector\"\n|" generated_component_test.go

// Package profilemetricsconnector turns profiles into metrics that OTTL
// cannot compute at Collector 0.161: CPU time per resource group (from eBPF
// samples and pprof CPU profiles), the self (and optionally inclusive) CPU
// time of the top functions of each service, and heap bytes from pprof heap
// profiles, with a hard bound on the number of series.
package profilemetricsconnector // import "github.com/nexovue/otelcol-nexovue/connector/profilemetricsconnector"
