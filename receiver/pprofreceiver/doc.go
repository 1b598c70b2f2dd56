// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package pprofreceiver scrapes a remote net/http/pprof endpoint on an
// interval and emits its profiles as OTLP profiles.
package pprofreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver"
