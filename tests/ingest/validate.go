package ingest

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Names of the dictionary tables as they appear in the 400 answers.
const (
	tableString    = "string_table"
	tableAttribute = "attribute_table"
	tableStack     = "stack_table"
	tableLocation  = "location_table"
	tableFunction  = "function_table"
	tableMapping   = "mapping_table"
	tableLink      = "link_table"
)

// IndexError is the reason for a 400 answer to a request that refers to a
// table entry that does not exist. Its message names the table and the index,
// e.g. "invalid stack_table index 57 (table has 12 entries) at
// resource_profiles[0].scope_profiles[0].profiles[0].samples[3].stack_index".
type IndexError struct {
	Table string // e.g. "stack_table"
	Index int32  // the offending index
	Len   int    // number of entries the table has
	Field string // where the index was found
}

func (e *IndexError) Error() string {
	return fmt.Sprintf("invalid %s index %d (table has %d entries) at %s", e.Table, e.Index, e.Len, e.Field)
}

// validator checks every index of a request against the request's dictionary.
type validator struct {
	lens map[string]int
}

func newValidator(dict pprofile.ProfilesDictionary) *validator {
	return &validator{lens: map[string]int{
		tableString:    dict.StringTable().Len(),
		tableAttribute: dict.AttributeTable().Len(),
		tableStack:     dict.StackTable().Len(),
		tableLocation:  dict.LocationTable().Len(),
		tableFunction:  dict.FunctionTable().Len(),
		tableMapping:   dict.MappingTable().Len(),
		tableLink:      dict.LinkTable().Len(),
	}}
}

// check returns an *IndexError when idx is not a valid index of table. The
// field is built lazily, only on failure.
func (v *validator) check(table string, idx int32, field func() string) error {
	if idx >= 0 && int(idx) < v.lens[table] {
		return nil
	}
	return &IndexError{Table: table, Index: idx, Len: v.lens[table], Field: field()}
}

func (v *validator) checkAll(table string, s pcommon.Int32Slice, field func() string) error {
	for i := 0; i < s.Len(); i++ {
		if err := v.check(table, s.At(i), func() string { return fmt.Sprintf("%s[%d]", field(), i) }); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks every index in pd: the dictionary's own cross references
// (stacks, locations, lines, functions, mappings, attributes) and every index
// used by profiles and samples. It returns an *IndexError for the first index
// out of range, a *LinkError for a link (other than the zero link) without a
// full trace and span ID, or an error for a resource or scope attribute whose key is
// empty (what an unresolvable key_strindex reference decodes to).
func Validate(pd pprofile.Profiles) error {
	dict := pd.Dictionary()
	v := newValidator(dict)
	if err := v.dictionary(dict); err != nil {
		return err
	}
	if err := v.links(dict); err != nil {
		return err
	}
	rps := pd.ResourceProfiles()
	for i := 0; i < rps.Len(); i++ {
		rp := rps.At(i)
		if err := v.keys(rp.Resource().Attributes(), func() string { return fmt.Sprintf("resource_profiles[%d].resource.attributes", i) }); err != nil {
			return err
		}
		sps := rp.ScopeProfiles()
		for j := 0; j < sps.Len(); j++ {
			sp := sps.At(j)
			if err := v.keys(sp.Scope().Attributes(), func() string {
				return fmt.Sprintf("resource_profiles[%d].scope_profiles[%d].scope.attributes", i, j)
			}); err != nil {
				return err
			}
			ps := sp.Profiles()
			for k := 0; k < ps.Len(); k++ {
				at := func() string { return fmt.Sprintf("resource_profiles[%d].scope_profiles[%d].profiles[%d]", i, j, k) }
				if err := v.profile(ps.At(k), at); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (v *validator) keys(m pcommon.Map, field func() string) error {
	for k := range m.All() {
		if k == "" {
			return fmt.Errorf("invalid %s reference at %s: empty attribute key (key_strindex out of range or unset; %s has %d entries)",
				tableString, field(), tableString, v.lens[tableString])
		}
	}
	return nil
}

func (v *validator) valueType(vt pprofile.ValueType, field func() string) error {
	if err := v.check(tableString, vt.TypeStrindex(), func() string { return field() + ".type_strindex" }); err != nil {
		return err
	}
	return v.check(tableString, vt.UnitStrindex(), func() string { return field() + ".unit_strindex" })
}

func (v *validator) profile(p pprofile.Profile, at func() string) error {
	if err := v.valueType(p.SampleType(), func() string { return at() + ".sample_type" }); err != nil {
		return err
	}
	if err := v.valueType(p.PeriodType(), func() string { return at() + ".period_type" }); err != nil {
		return err
	}
	if err := v.checkAll(tableAttribute, p.AttributeIndices(), func() string { return at() + ".attribute_indices" }); err != nil {
		return err
	}
	samples := p.Samples()
	for s := 0; s < samples.Len(); s++ {
		sample := samples.At(s)
		sat := func() string { return fmt.Sprintf("%s.samples[%d]", at(), s) }
		if err := v.check(tableStack, sample.StackIndex(), func() string { return sat() + ".stack_index" }); err != nil {
			return err
		}
		if err := v.check(tableLink, sample.LinkIndex(), func() string { return sat() + ".link_index" }); err != nil {
			return err
		}
		if err := v.checkAll(tableAttribute, sample.AttributeIndices(), func() string { return sat() + ".attribute_indices" }); err != nil {
			return err
		}
	}
	return nil
}

func (v *validator) dictionary(dict pprofile.ProfilesDictionary) error {
	stacks := dict.StackTable()
	for i := 0; i < stacks.Len(); i++ {
		if err := v.checkAll(tableLocation, stacks.At(i).LocationIndices(), func() string {
			return fmt.Sprintf("dictionary.stack_table[%d].location_indices", i)
		}); err != nil {
			return err
		}
	}
	locs := dict.LocationTable()
	for i := 0; i < locs.Len(); i++ {
		loc := locs.At(i)
		at := func() string { return fmt.Sprintf("dictionary.location_table[%d]", i) }
		if err := v.check(tableMapping, loc.MappingIndex(), func() string { return at() + ".mapping_index" }); err != nil {
			return err
		}
		if err := v.checkAll(tableAttribute, loc.AttributeIndices(), func() string { return at() + ".attribute_indices" }); err != nil {
			return err
		}
		lines := loc.Lines()
		for l := 0; l < lines.Len(); l++ {
			if err := v.check(tableFunction, lines.At(l).FunctionIndex(), func() string {
				return fmt.Sprintf("%s.lines[%d].function_index", at(), l)
			}); err != nil {
				return err
			}
		}
	}
	funcs := dict.FunctionTable()
	for i := 0; i < funcs.Len(); i++ {
		fn := funcs.At(i)
		at := func() string { return fmt.Sprintf("dictionary.function_table[%d]", i) }
		for _, f := range []struct {
			name string
			idx  int32
		}{{"name_strindex", fn.NameStrindex()}, {"system_name_strindex", fn.SystemNameStrindex()}, {"filename_strindex", fn.FilenameStrindex()}} {
			if err := v.check(tableString, f.idx, func() string { return at() + "." + f.name }); err != nil {
				return err
			}
		}
	}
	mappings := dict.MappingTable()
	for i := 0; i < mappings.Len(); i++ {
		m := mappings.At(i)
		at := func() string { return fmt.Sprintf("dictionary.mapping_table[%d]", i) }
		if err := v.check(tableString, m.FilenameStrindex(), func() string { return at() + ".filename_strindex" }); err != nil {
			return err
		}
		if err := v.checkAll(tableAttribute, m.AttributeIndices(), func() string { return at() + ".attribute_indices" }); err != nil {
			return err
		}
	}
	attrs := dict.AttributeTable()
	for i := 0; i < attrs.Len(); i++ {
		a := attrs.At(i)
		at := func() string { return fmt.Sprintf("dictionary.attribute_table[%d]", i) }
		if err := v.check(tableString, a.KeyStrindex(), func() string { return at() + ".key_strindex" }); err != nil {
			return err
		}
		if err := v.check(tableString, a.UnitStrindex(), func() string { return at() + ".unit_strindex" }); err != nil {
			return err
		}
	}
	return nil
}
