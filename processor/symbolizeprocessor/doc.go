// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package symbolizeprocessor names native frames (C, C++, Rust) on the host:
// a location the eBPF profiler sends as an address in a mapping, with no
// function, gets a line whose function is named by the symbol of the mapped
// ELF file (.symtab, else .dynsym) that holds the address, demangled.
package symbolizeprocessor // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor"
