// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package nexovueexporter sends OTLP profiles to nexovue's ingest.
//
// It is built on the Collector's exporterhelper (profiles variant) for the
// sending queue, retries and timeouts, and adds what nexovue's ingest
// documents: the x-nexovue-key header, per-key pacing under the ingest's
// samples-per-second limit, a Retry-After gate shared by every consumer of the
// same endpoint and key, halving of requests the ingest refuses as too large
// (413), and clear logs for rejected keys (401/403) and format mismatches (400).
//
// Files: exporter.go holds the send loop, transport.go the HTTP client's
// Retry-After gate and redirect policy, response.go the reading of answers,
// retryafter.go the Retry-After parsing, keystate.go the state shared per
// endpoint and key, pacing.go the pacing, encode.go the request body,
// redact.go the key's redaction, adaptive.go the adaptive rate and
// buildinfo.go the profiles format of this build.
package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"
