// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package pproftest

import (
	"bytes"
	"compress/gzip"
	"testing"
)

// Gzip returns data gzipped (a pprof body, or a layer of a bomb).
func Gzip(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
