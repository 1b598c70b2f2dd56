// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package collectorversion

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Get itself reads the binary's build information, which a test binary
// lacks: tests/smoke checks it on the built collector's message.

func TestModuleVersion(t *testing.T) {
	bi := &debug.BuildInfo{Deps: []*debug.Module{
		{Path: "example.com/other", Version: "v1.0.0"},
		{Path: ModulePath, Version: "v0.161.0"},
	}}
	assert.Equal(t, "0.161.0", moduleVersion(bi, ModulePath))
	bi.Deps[1].Replace = &debug.Module{Path: ModulePath, Version: "v0.162.0"}
	assert.Equal(t, "0.162.0", moduleVersion(bi, ModulePath), "a replacement's version wins")
	assert.Empty(t, moduleVersion(bi, "example.com/absent"))
}
