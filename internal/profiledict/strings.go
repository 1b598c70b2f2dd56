// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profiledict // import "github.com/nexovue/otelcol-nexovue/internal/profiledict"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Strings interns strings into a dictionary's string table: a string is
// appended the first time it is asked for, and its index returned every
// time.
type Strings struct {
	table pcommon.StringSlice
	index map[string]int32
}

// NewStrings indexes the strings d's table already holds (the first index
// of each) and appends new ones to it.
func NewStrings(d pprofile.ProfilesDictionary) *Strings {
	st := d.StringTable()
	s := &Strings{table: st, index: make(map[string]int32, st.Len())}
	for i := 0; i < st.Len(); i++ {
		if _, ok := s.index[st.At(i)]; !ok {
			s.index[st.At(i)] = int32(i)
		}
	}
	return s
}

// Index returns v's index in the string table, appending v if it is not there.
func (s *Strings) Index(v string) int32 {
	if i, ok := s.index[v]; ok {
		return i
	}
	i := int32(s.table.Len())
	s.table.Append(v)
	s.index[v] = i
	return i
}
