// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import "strings"

// redact removes the key from anything the ingest or the network sends back.
func (e *nexovueExporter) redact(s string) string {
	if e.key == "" {
		return s
	}
	return strings.ReplaceAll(s, e.key, "[REDACTED]")
}

// redactErr returns err with the key removed from its text; the chain stays,
// so that errors.Is still tells a timeout from a cancellation.
func (e *nexovueExporter) redactErr(err error) error {
	if e.key == "" || !strings.Contains(err.Error(), e.key) {
		return err
	}
	return redactedError{msg: e.redact(err.Error()), err: err}
}

// redactedError is an error whose text had the key removed.
type redactedError struct {
	msg string
	err error
}

func (r redactedError) Error() string { return r.msg }
func (r redactedError) Unwrap() error { return r.err }
