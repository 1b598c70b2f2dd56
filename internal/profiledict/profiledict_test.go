// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profiledict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

func TestAppendZeroEntries(t *testing.T) {
	d := pprofile.NewProfilesDictionary()
	AppendZeroEntries(d)
	assert.Equal(t, []string{""}, d.StringTable().AsRaw())
	assert.Equal(t, 1, d.AttributeTable().Len())
	assert.Equal(t, pprofile.NewKeyValueAndUnit(), d.AttributeTable().At(0))
	assert.Equal(t, 1, d.FunctionTable().Len())
	assert.Equal(t, pprofile.NewFunction(), d.FunctionTable().At(0))
	assert.Equal(t, 1, d.MappingTable().Len())
	assert.Equal(t, pprofile.NewMapping(), d.MappingTable().At(0))
	assert.Equal(t, 1, d.LocationTable().Len())
	assert.Equal(t, pprofile.NewLocation(), d.LocationTable().At(0))
	assert.Equal(t, 1, d.StackTable().Len())
	assert.Equal(t, pprofile.NewStack(), d.StackTable().At(0))
	assert.Equal(t, 1, d.LinkTable().Len())
	assert.Equal(t, pprofile.NewLink(), d.LinkTable().At(0))
}

func TestStringsIndexesOnce(t *testing.T) {
	d := pprofile.NewProfilesDictionary()
	AppendZeroEntries(d)
	d.StringTable().Append("kept")
	s := NewStrings(d)
	if got := s.Index(""); got != 0 {
		t.Fatalf(`Index("") = %d, want 0`, got)
	}
	if got := s.Index("kept"); got != 1 {
		t.Fatalf(`Index("kept") = %d, want 1 (already in the table)`, got)
	}
	a, b := s.Index("new"), s.Index("new")
	if a != 2 || b != 2 || d.StringTable().Len() != 3 || d.StringTable().At(2) != "new" {
		t.Fatalf(`Index("new") = %d then %d, table %v: want 2 both times, appended once`, a, b, d.StringTable().AsRaw())
	}
}
