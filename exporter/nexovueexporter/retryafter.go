// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter bounds a Retry-After: a longer one is taken as this long.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads a Retry-After value in either of its forms
// (delay-seconds or HTTP-date) and returns the time before which no request
// may leave.
func parseRetryAfter(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > int64(maxRetryAfter/time.Second) {
			secs = int64(maxRetryAfter / time.Second)
		}
		return now.Add(time.Duration(secs) * time.Second), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return time.Time{}, false
	}
	return minTime(t, now.Add(maxRetryAfter)), true
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
