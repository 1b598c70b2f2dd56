// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"runtime/debug"
	"strings"
	"sync"
)

// pprofileModulePath is the module whose version names the profiles format
// this build speaks (it tracks Collector releases).
const pprofileModulePath = "go.opentelemetry.io/collector/pdata/pprofile"

// profilesFormat names the profiles format this build speaks, from the build
// information: the version of the pprofile module it was built with.
var profilesFormat = sync.OnceValue(func() string {
	bi, _ := debug.ReadBuildInfo()
	return "OTLP profiles v1development of OpenTelemetry Collector " + moduleVersion(bi, pprofileModulePath)
})

// moduleVersion is path's version in bi, without the leading v (a replace
// with a version wins); "(unknown version: no build information)" when bi
// does not name it.
func moduleVersion(bi *debug.BuildInfo, path string) string {
	if bi != nil {
		for _, dep := range bi.Deps {
			if dep.Path != path {
				continue
			}
			if dep.Replace != nil && dep.Replace.Version != "" {
				return strings.TrimPrefix(dep.Replace.Version, "v")
			}
			return strings.TrimPrefix(dep.Version, "v")
		}
	}
	return "(unknown version: no build information)"
}
