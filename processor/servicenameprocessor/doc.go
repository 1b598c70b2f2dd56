// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package servicenameprocessor gives every profiles resource a service.name,
// the way OpenTelemetry SDKs name a process: from an existing service.name,
// from the process's OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES captured
// by the eBPF profiler, or else unknown_service:<executable>.
package servicenameprocessor // import "github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor"
