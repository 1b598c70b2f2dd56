// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package profileviewexporter keeps the most recent profiles it receives, in a
// window bounded by time and memory, and serves them over HTTP as pprof's web
// UI (flame graph, top, peek, source) per service and profile type, with an
// index of services and a gzipped pprof download of any selection.
package profileviewexporter // import "github.com/nexovue/otelcol-nexovue/exporter/profileviewexporter"
