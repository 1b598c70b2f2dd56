// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package profiledict holds what every writer of OTLP profiles (Collector
// 0.161 data model) needs of a ProfilesDictionary: the zero entry that index
// 0 of every table must hold.
package profiledict // import "github.com/nexovue/otelcol-nexovue/internal/profiledict"

import "go.opentelemetry.io/collector/pdata/pprofile"

// AppendZeroEntries appends the zero entry of every table of d: the empty
// string, and an empty attribute, function, mapping, location, stack and
// link. Called on an empty dictionary, it makes index 0 of every table the
// zero value, as the data model requires; the entries a writer adds then start
// at index 1.
func AppendZeroEntries(d pprofile.ProfilesDictionary) {
	d.StringTable().Append("")
	d.AttributeTable().AppendEmpty()
	d.FunctionTable().AppendEmpty()
	d.MappingTable().AppendEmpty()
	d.LocationTable().AppendEmpty()
	d.StackTable().AppendEmpty()
	d.LinkTable().AppendEmpty()
}
