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
