// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"errors"
	"strings"
)

// redact removes the key from anything the ingest or the network sends back.
func (e *nexovueExporter) redact(s string) string {
	if e.key == "" {
		return s
	}
	return strings.ReplaceAll(s, e.key, "[REDACTED]")
}

func (e *nexovueExporter) redactErr(err error) error {
	if e.key == "" || !strings.Contains(err.Error(), e.key) {
		return err
	}
	return errors.New(e.redact(err.Error()))
}
