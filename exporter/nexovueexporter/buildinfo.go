// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import "github.com/nexovue/otelcol-nexovue/internal/collectorversion"

// profilesFormat names the profiles format this build speaks, from the build
// information: the Collector release of the profiles data model it links.
func profilesFormat() string {
	v := collectorversion.Get()
	if v == "" {
		v = "(unknown version: no build information)"
	}
	return "OTLP profiles v1development of OpenTelemetry Collector " + v
}
