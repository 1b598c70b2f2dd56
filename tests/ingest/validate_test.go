package ingest

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// validProfiles is a small valid request with one entry beyond the zero
// entry in every table, so each index can be broken on its own.
func validProfiles() pprofile.Profiles {
	pd := NewRequestBuilder().SeqSample("checkout", 1, "leaf", "root").Profiles()
	d := pd.Dictionary()
	m := d.MappingTable().AppendEmpty()
	m.SetFilenameStrindex(0)
	l := d.LinkTable().AppendEmpty()
	l.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	l.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
	return pd
}

func firstSample(pd pprofile.Profiles) pprofile.Sample {
	return firstProfile(pd).Samples().At(0)
}

func firstProfile(pd pprofile.Profiles) pprofile.Profile {
	return pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0)
}

func TestValidateAcceptsBuilderRequest(t *testing.T) {
	require.NoError(t, Validate(validProfiles()))
}

func TestInvalidIndexAnswers400(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(pd pprofile.Profiles)
		table  string
		index  int32
		field  string
	}{
		{"sample stack_index", func(pd pprofile.Profiles) { firstSample(pd).SetStackIndex(57) }, "stack_table", 57, "samples[0].stack_index"},
		{"negative stack_index", func(pd pprofile.Profiles) { firstSample(pd).SetStackIndex(-1) }, "stack_table", -1, "samples[0].stack_index"},
		{"sample link_index", func(pd pprofile.Profiles) { firstSample(pd).SetLinkIndex(9) }, "link_table", 9, "samples[0].link_index"},
		{"link_index 0 into empty link_table", func(pd pprofile.Profiles) {
			pd.Dictionary().LinkTable().RemoveIf(func(pprofile.Link) bool { return true })
		}, "link_table", 0, "samples[0].link_index"},
		{"sample attribute_indices", func(pd pprofile.Profiles) { firstSample(pd).AttributeIndices().Append(40) }, "attribute_table", 40, "samples[0].attribute_indices[1]"},
		{"profile attribute_indices", func(pd pprofile.Profiles) { firstProfile(pd).AttributeIndices().Append(41) }, "attribute_table", 41, "profiles[0].attribute_indices[0]"},
		{"profile sample_type type", func(pd pprofile.Profiles) { firstProfile(pd).SampleType().SetTypeStrindex(506) }, "string_table", 506, "sample_type.type_strindex"},
		{"profile sample_type unit", func(pd pprofile.Profiles) { firstProfile(pd).SampleType().SetUnitStrindex(507) }, "string_table", 507, "sample_type.unit_strindex"},
		{"profile period_type type", func(pd pprofile.Profiles) { firstProfile(pd).PeriodType().SetTypeStrindex(508) }, "string_table", 508, "period_type.type_strindex"},
		{"profile period_type unit", func(pd pprofile.Profiles) { firstProfile(pd).PeriodType().SetUnitStrindex(509) }, "string_table", 509, "period_type.unit_strindex"},
		{"stack location_indices", func(pd pprofile.Profiles) { pd.Dictionary().StackTable().At(1).LocationIndices().Append(99) }, "location_table", 99, "stack_table[1].location_indices[2]"},
		{"location mapping_index", func(pd pprofile.Profiles) { pd.Dictionary().LocationTable().At(1).SetMappingIndex(7) }, "mapping_table", 7, "location_table[1].mapping_index"},
		{"location attribute_indices", func(pd pprofile.Profiles) { pd.Dictionary().LocationTable().At(2).AttributeIndices().Append(33) }, "attribute_table", 33, "location_table[2].attribute_indices[0]"},
		{"line function_index", func(pd pprofile.Profiles) { pd.Dictionary().LocationTable().At(1).Lines().At(0).SetFunctionIndex(66) }, "function_table", 66, "location_table[1].lines[0].function_index"},
		{"function name", func(pd pprofile.Profiles) { pd.Dictionary().FunctionTable().At(1).SetNameStrindex(500) }, "string_table", 500, "function_table[1].name_strindex"},
		{"function system_name", func(pd pprofile.Profiles) { pd.Dictionary().FunctionTable().At(1).SetSystemNameStrindex(501) }, "string_table", 501, "function_table[1].system_name_strindex"},
		{"function filename", func(pd pprofile.Profiles) { pd.Dictionary().FunctionTable().At(2).SetFilenameStrindex(502) }, "string_table", 502, "function_table[2].filename_strindex"},
		{"mapping filename", func(pd pprofile.Profiles) { pd.Dictionary().MappingTable().At(1).SetFilenameStrindex(503) }, "string_table", 503, "mapping_table[1].filename_strindex"},
		{"mapping attribute_indices", func(pd pprofile.Profiles) { pd.Dictionary().MappingTable().At(1).AttributeIndices().Append(34) }, "attribute_table", 34, "mapping_table[1].attribute_indices[0]"},
		{"attribute key", func(pd pprofile.Profiles) { pd.Dictionary().AttributeTable().At(1).SetKeyStrindex(504) }, "string_table", 504, "attribute_table[1].key_strindex"},
		{"attribute unit", func(pd pprofile.Profiles) { pd.Dictionary().AttributeTable().At(1).SetUnitStrindex(505) }, "string_table", 505, "attribute_table[1].unit_strindex"},
	}
	s := startServer(t, Config{})
	for _, tc := range cases {
		for _, enc := range []string{ContentTypeProto, ContentTypeJSON} {
			t.Run(tc.name+"/"+enc, func(t *testing.T) {
				pd := validProfiles()
				tc.break_(pd)
				err := Validate(pd)
				var ie *IndexError
				require.ErrorAs(t, err, &ie)
				assert.Equal(t, tc.table, ie.Table)
				assert.Equal(t, tc.index, ie.Index)

				body := marshalProto(t, pd)
				if enc == ContentTypeJSON {
					body = marshalJSON(t, pd)
				}
				// Marshalling moves resource attribute strings into the
				// string table, so count the entries as sent.
				n := tableLen(pd, tc.table)
				want := fmt.Sprintf("invalid %s index %d (table has %d entries)", tc.table, tc.index, n)
				a := send(t, s, testKey, enc, "", body)
				require.Equal(t, http.StatusBadRequest, a.status)
				msg := a.message(t)
				assert.Contains(t, msg, want)
				assert.Contains(t, msg, tc.field)
				assert.Contains(t, string(a.body), want, "the raw body names the table and index too")
			})
		}
	}
	st := s.Stats()
	assert.Equal(t, 2*len(cases), st.RequestsByStatus[http.StatusBadRequest])
	assert.Zero(t, st.SamplesAccepted, "refused requests are not accepted")
}

func tableLen(pd pprofile.Profiles, table string) int {
	d := pd.Dictionary()
	switch table {
	case "string_table":
		return d.StringTable().Len()
	case "attribute_table":
		return d.AttributeTable().Len()
	case "stack_table":
		return d.StackTable().Len()
	case "location_table":
		return d.LocationTable().Len()
	case "function_table":
		return d.FunctionTable().Len()
	case "mapping_table":
		return d.MappingTable().Len()
	case "link_table":
		return d.LinkTable().Len()
	}
	panic("unknown table " + table)
}

func TestEmptyResourceAttributeKeyAnswers400(t *testing.T) {
	s := startServer(t, Config{})
	pd := validProfiles()
	pd.ResourceProfiles().At(0).Resource().Attributes().PutStr("", "x")
	a := send(t, s, testKey, ContentTypeProto, "", marshalProto(t, pd))
	require.Equal(t, http.StatusBadRequest, a.status)
	assert.Contains(t, a.message(t), "resource_profiles[0].resource.attributes: empty attribute key")
}

func TestStackIndexErrorMessage(t *testing.T) {
	err := &IndexError{Table: "stack_table", Index: 57, Len: 12, Field: "x.stack_index"}
	assert.Equal(t, "invalid stack_table index 57 (table has 12 entries) at x.stack_index", err.Error())
}
