// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package spanlinksprocessor turns the span and trace IDs a sample carries in
// its labels (Go pprof goroutine labels, as otel-profiling-go writes them,
// read by the eBPF profiler or scraped by the pprof receiver) into an OTLP
// link: an entry of the dictionary's link table and the sample's link_index.
package spanlinksprocessor // import "github.com/nexovue/otelcol-nexovue/processor/spanlinksprocessor"
