// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package collectorversion tells which Collector release a binary was built
// with, from its build information, so that messages naming it stay true
// when the pins move.
package collectorversion // import "github.com/nexovue/otelcol-nexovue/internal/collectorversion"

import (
	"runtime/debug"
	"strings"
	"sync"
)

// ModulePath is the module whose version is the Collector release's: the
// profiles data model, versioned with the Collector's 0.x line (0.161.0).
const ModulePath = "go.opentelemetry.io/collector/pdata/pprofile"

// Get returns the Collector release (e.g. "0.161.0"), or "" when the binary
// does not hold ModulePath (a test binary that does not link it).
var Get = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return moduleVersion(bi, ModulePath)
})

// moduleVersion returns the version of module path in bi, a replacement's
// if it is replaced, without the leading "v".
func moduleVersion(bi *debug.BuildInfo, path string) string {
	for _, dep := range bi.Deps {
		if dep.Path != path {
			continue
		}
		if dep.Replace != nil && dep.Replace.Version != "" {
			return strings.TrimPrefix(dep.Replace.Version, "v")
		}
		return strings.TrimPrefix(dep.Version, "v")
	}
	return ""
}
