// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package framelimitprocessor splits profiles batches whose stacks write out
// to more frames than the ingest accepts in one request (nexovue answers 413
// above 1,000,000) into several batches, each within the limit and each with
// its own compacted dictionary.
package framelimitprocessor // import "github.com/nexovue/otelcol-nexovue/processor/framelimitprocessor"
