// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilingreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestErrNeedsLinux(t *testing.T) {
	err := errNeedsLinux("darwin", "arm64")
	assert.EqualError(t, err, "the profiling (eBPF) receiver needs Linux on amd64 or arm64, this is darwin/arm64: "+
		"remove it from the pipeline and scrape Go services with the pprof receiver instead (see pprof.yaml in this distribution)")
}
