// Package nexovueexporter sends OTLP profiles to nexovue's ingest.
//
// It is built on the Collector's exporterhelper (profiles variant) for the
// sending queue, retries and timeouts, and adds what nexovue's ingest
// documents: the x-nexovue-key header, per-key pacing under the ingest's
// samples-per-second limit, a Retry-After gate shared by every consumer of the
// same endpoint and key, halving of requests the ingest refuses as too large
// (413), and clear logs for rejected keys (401/403) and format mismatches (400).
package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

//go:generate mdatagen metadata.yaml
