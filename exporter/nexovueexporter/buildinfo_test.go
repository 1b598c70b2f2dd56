// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestModuleVersionFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{Deps: []*debug.Module{
		{Path: "example.com/other", Version: "v1.2.3"},
		{Path: pprofileModulePath, Version: "v0.170.0"},
	}}
	assert.Equal(t, "0.170.0", moduleVersion(bi, pprofileModulePath))

	bi.Deps[1].Replace = &debug.Module{Path: pprofileModulePath, Version: "v0.171.1"}
	assert.Equal(t, "0.171.1", moduleVersion(bi, pprofileModulePath), "a replace with a version wins")

	assert.Contains(t, moduleVersion(nil, pprofileModulePath), "unknown version")
	assert.Contains(t, moduleVersion(&debug.BuildInfo{}, pprofileModulePath), "unknown version")

	// go test builds without module information: the built binary's message
	// (Collector 0.161.0) is checked end to end by tests/e2e TestBadFormatLogged.
}
