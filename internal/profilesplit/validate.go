package profilesplit // import "github.com/nexovue/otelcol-nexovue/internal/profilesplit"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Validate checks that pd is a well-formed request of the 0.161 profiles
// data model as far as its dictionary goes: every table of the dictionary
// starts with its zero value at index 0 (string_table[0] is ""), and every
// index held by the dictionary, the profiles and the samples lies inside its
// table. The error names the field and the table, e.g.
// "resource_profiles[0].scope_profiles[0].profiles[0].samples[3].stack_index: index 12 outside dictionary.stack_table (10 entries)".
// All problems are reported, joined, up to 20.
func Validate(pd pprofile.Profiles) error {
	v := validator{dict: pd.Dictionary()}
	v.check()
	forEachProfile(pd, func(path samplePath, p pprofile.Profile) {
		base := path.profilePath()
		v.valueType(p.SampleType(), base+".sample_type")
		v.valueType(p.PeriodType(), base+".period_type")
		v.indices(p.AttributeIndices(), v.nAttrs, base+".attribute_indices", "attribute_table")
		samples := p.Samples()
		for l := 0; l < samples.Len(); l++ {
			s := samples.At(l)
			path.sample = l
			v.indexf(s.StackIndex(), v.nStacks, "stack_table", "%s.stack_index", path)
			v.indexf(s.LinkIndex(), v.nLinks, "link_table", "%s.link_index", path)
			v.indicesf(s.AttributeIndices(), v.nAttrs, "attribute_table", "%s.attribute_indices", path)
		}
	})
	return errors.Join(v.errs...)
}

const maxValidationErrors = 20

type validator struct {
	dict                                                        pprofile.ProfilesDictionary
	nStrings, nAttrs, nFuncs, nMappings, nLocs, nStacks, nLinks int
	errs                                                        []error
}

func (v *validator) add(format string, args ...any) {
	if len(v.errs) < maxValidationErrors {
		v.errs = append(v.errs, fmt.Errorf(format, args...))
	}
}

func (v *validator) index(i int32, n int, field, table string) {
	if i < 0 || int(i) >= n {
		if len(v.errs) < maxValidationErrors {
			v.errs = append(v.errs, indexError(field, int(i), table, n))
		}
	}
}

// indexf is index with a field name formatted only when the index is bad.
func (v *validator) indexf(i int32, n int, table, format string, args ...any) {
	if i < 0 || int(i) >= n {
		v.index(i, n, fmt.Sprintf(format, args...), table)
	}
}

func (v *validator) indices(s pcommon.Int32Slice, n int, field, table string) {
	for k := 0; k < s.Len(); k++ {
		v.indexf(s.At(k), n, table, "%s[%d]", field, k)
	}
}

func (v *validator) valueType(t pprofile.ValueType, field string) {
	v.index(t.TypeStrindex(), v.nStrings, field+".type_strindex", "string_table")
	v.index(t.UnitStrindex(), v.nStrings, field+".unit_strindex", "string_table")
}

// indicesf is indices with a field name formatted only when an index is bad.
func (v *validator) indicesf(s pcommon.Int32Slice, n int, table, format string, i any) {
	for k := 0; k < s.Len(); k++ {
		if x := s.At(k); x < 0 || int(x) >= n {
			v.index(x, n, fmt.Sprintf(format+"[%d]", i, k), table)
		}
	}
}

// check validates the dictionary's own tables.
func (v *validator) check() {
	d := v.dict
	v.nStrings = d.StringTable().Len()
	v.nAttrs = d.AttributeTable().Len()
	v.nFuncs = d.FunctionTable().Len()
	v.nMappings = d.MappingTable().Len()
	v.nLocs = d.LocationTable().Len()
	v.nStacks = d.StackTable().Len()
	v.nLinks = d.LinkTable().Len()

	for _, t := range []struct {
		name string
		n    int
	}{
		{"string_table", v.nStrings}, {"attribute_table", v.nAttrs}, {"function_table", v.nFuncs},
		{"mapping_table", v.nMappings}, {"location_table", v.nLocs}, {"stack_table", v.nStacks}, {"link_table", v.nLinks},
	} {
		if t.n == 0 {
			v.add("dictionary.%s: empty, index 0 must hold the zero value", t.name)
		}
	}
	if v.nStrings > 0 && d.StringTable().At(0) != "" {
		v.add("dictionary.string_table[0]: %q, must be the empty string", d.StringTable().At(0))
	}
	if v.nAttrs > 0 && !d.AttributeTable().At(0).Equal(pprofile.NewKeyValueAndUnit()) {
		v.add("dictionary.attribute_table[0]: must be the zero value")
	}
	if v.nFuncs > 0 && !d.FunctionTable().At(0).Equal(pprofile.NewFunction()) {
		v.add("dictionary.function_table[0]: must be the zero value")
	}
	if v.nMappings > 0 && !d.MappingTable().At(0).Equal(pprofile.NewMapping()) {
		v.add("dictionary.mapping_table[0]: must be the zero value")
	}
	if v.nLocs > 0 && !d.LocationTable().At(0).Equal(pprofile.NewLocation()) {
		v.add("dictionary.location_table[0]: must be the zero value")
	}
	if v.nStacks > 0 && d.StackTable().At(0).LocationIndices().Len() != 0 {
		v.add("dictionary.stack_table[0]: must be the zero value (no locations)")
	}
	if v.nLinks > 0 && !d.LinkTable().At(0).Equal(pprofile.NewLink()) {
		v.add("dictionary.link_table[0]: must be the zero value")
	}

	for i := 0; i < v.nAttrs; i++ {
		a := d.AttributeTable().At(i)
		v.indexf(a.KeyStrindex(), v.nStrings, "string_table", "dictionary.attribute_table[%d].key_strindex", i)
		v.indexf(a.UnitStrindex(), v.nStrings, "string_table", "dictionary.attribute_table[%d].unit_strindex", i)
	}
	for i := 0; i < v.nFuncs; i++ {
		f := d.FunctionTable().At(i)
		v.indexf(f.NameStrindex(), v.nStrings, "string_table", "dictionary.function_table[%d].name_strindex", i)
		v.indexf(f.SystemNameStrindex(), v.nStrings, "string_table", "dictionary.function_table[%d].system_name_strindex", i)
		v.indexf(f.FilenameStrindex(), v.nStrings, "string_table", "dictionary.function_table[%d].filename_strindex", i)
	}
	for i := 0; i < v.nMappings; i++ {
		m := d.MappingTable().At(i)
		v.indexf(m.FilenameStrindex(), v.nStrings, "string_table", "dictionary.mapping_table[%d].filename_strindex", i)
		v.indicesf(m.AttributeIndices(), v.nAttrs, "attribute_table", "dictionary.mapping_table[%d].attribute_indices", i)
	}
	for i := 0; i < v.nLocs; i++ {
		l := d.LocationTable().At(i)
		v.indexf(l.MappingIndex(), v.nMappings, "mapping_table", "dictionary.location_table[%d].mapping_index", i)
		for k := 0; k < l.Lines().Len(); k++ {
			v.indexf(l.Lines().At(k).FunctionIndex(), v.nFuncs, "function_table", "dictionary.location_table[%d].lines[%d].function_index", i, k)
		}
		v.indicesf(l.AttributeIndices(), v.nAttrs, "attribute_table", "dictionary.location_table[%d].attribute_indices", i)
	}
	for i := 0; i < v.nStacks; i++ {
		v.indicesf(d.StackTable().At(i).LocationIndices(), v.nLocs, "location_table", "dictionary.stack_table[%d].location_indices", i)
	}
}
