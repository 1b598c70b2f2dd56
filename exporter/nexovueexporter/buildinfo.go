// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"runtime/debug"
	"strings"
	"sync"
)

const (
	pprofileModulePath = "go.opentelemetry.io/collector/pdata/pprofile"
	// collectorVersion is the profiles format this build speaks when the build
	// information does not name the pprofile module (it tracks Collector releases).
	collectorVersion = "0.161.0"
)

var profilesFormat = sync.OnceValue(func() string {
	v := collectorVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == pprofileModulePath {
				v = strings.TrimPrefix(dep.Version, "v")
				if dep.Replace != nil && dep.Replace.Version != "" {
					v = strings.TrimPrefix(dep.Replace.Version, "v")
				}
				break
			}
		}
	}
	return "OTLP profiles v1development of OpenTelemetry Collector " + v
})
