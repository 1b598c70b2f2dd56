package profilesplit // import "github.com/nexovue/otelcol-nexovue/internal/profilesplit"

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profiledict"
)

// remap maps the indices of one source dictionary table to the indices of
// the table being built for the open part. Index 0 of a source table always
// maps to index 0 of the part's table, so 0 also marks "not copied yet" for
// every other source index.
type remap struct {
	to   []int32 // source index -> part index (0: not copied yet)
	from []int32 // part index -> source index, to reset "to" in O(used)
}

// reset sizes the map for a source table of n entries.
func (r *remap) reset(n int) {
	if cap(r.to) < n {
		r.to = make([]int32, n)
	} else {
		r.to = r.to[:n]
		clear(r.to)
	}
	r.from = r.from[:0]
}

// clearUsed forgets the entries copied into the closed part.
func (r *remap) clearUsed() {
	for _, i := range r.from {
		r.to[i] = 0
	}
	r.from = r.from[:0]
}

// add records that source index i is index d of the table being built and
// returns d.
func (r *remap) add(i int, d int32) int32 {
	r.from = append(r.from, int32(i))
	r.to[i] = d
	return d
}

// compactor copies the dictionary entries a part uses from the source
// dictionary into the part's own dictionary, each entry once.
type compactor struct {
	src, dst pprofile.ProfilesDictionary

	// Source tables, kept to avoid re-deriving them per lookup.
	srcStrings   pcommon.StringSlice
	srcAttrs     pprofile.KeyValueAndUnitSlice
	srcFuncs     pprofile.FunctionSlice
	srcMappings  pprofile.MappingSlice
	srcLocations pprofile.LocationSlice
	srcStacks    pprofile.StackSlice
	srcLinks     pprofile.LinkSlice

	strings, attrs, funcs, mappings, locations, stacks, truncStacks, links remap

	maxFrames int
	// Owned mode: the last part using each source stack and location (-1:
	// none), and the number of the open part.
	stackLast, locLast []int32
	part               int32
	// stackLen holds the depth of every source stack, read before any stack
	// is taken by a part.
	stackLen []int32

	strIndex map[string]int32 // merging only: index of each string in dst
	buf      []int32          // scratch for a stack's location indices
	err      error            // first index error met; sticky
}

func (c *compactor) init(src pprofile.ProfilesDictionary, maxFrames int) {
	c.src = src
	c.srcStrings = src.StringTable()
	c.srcAttrs = src.AttributeTable()
	c.srcFuncs = src.FunctionTable()
	c.srcMappings = src.MappingTable()
	c.srcLocations = src.LocationTable()
	c.srcStacks = src.StackTable()
	c.srcLinks = src.LinkTable()
	c.strings.reset(c.srcStrings.Len())
	c.attrs.reset(c.srcAttrs.Len())
	c.funcs.reset(c.srcFuncs.Len())
	c.mappings.reset(c.srcMappings.Len())
	c.locations.reset(c.srcLocations.Len())
	c.stacks.reset(c.srcStacks.Len())
	c.truncStacks.reset(c.srcStacks.Len())
	c.links.reset(c.srcLinks.Len())
	c.maxFrames = maxFrames
	c.stackLast, c.locLast = c.stackLast[:0], c.locLast[:0]
	c.stackLen = c.stackLen[:0]
	for i := 0; i < c.srcStacks.Len(); i++ {
		c.stackLen = append(c.stackLen, int32(c.srcStacks.At(i).LocationIndices().Len()))
	}
	c.err = nil
}

// begin starts the dictionary of a new part: every table gets its index 0
// entry (a copy of the source's index 0 entry, the zero value in a valid
// request), as the data model requires.
func (c *compactor) begin(dst pprofile.ProfilesDictionary) error {
	c.dst = dst
	for _, r := range []*remap{&c.strings, &c.attrs, &c.funcs, &c.mappings, &c.locations, &c.stacks, &c.truncStacks, &c.links} {
		r.clearUsed()
	}
	// Place all index 0 entries first: copying a (non-zero, invalid) source
	// entry 0 may pull in other entries, which must land after index 0.
	profiledict.AppendZeroEntries(dst)
	for _, r := range []*remap{&c.strings, &c.attrs, &c.funcs, &c.mappings, &c.locations, &c.stacks, &c.links} {
		r.from = append(r.from, 0)
	}
	c.truncStacks.from = append(c.truncStacks.from, 0)
	if c.srcStrings.Len() > 0 {
		dst.StringTable().SetAt(0, c.srcStrings.At(0))
	}
	if c.srcAttrs.Len() > 0 {
		c.fillAttr(0, dst.AttributeTable().At(0))
	}
	if c.srcFuncs.Len() > 0 {
		c.fillFunc(0, dst.FunctionTable().At(0))
	}
	if c.srcMappings.Len() > 0 {
		c.fillMapping(0, dst.MappingTable().At(0))
	}
	if c.srcLocations.Len() > 0 {
		c.fillLocation(0, dst.LocationTable().At(0))
	}
	if c.srcStacks.Len() > 0 {
		c.fillStack(0, dst.StackTable().At(0), true)
	}
	if c.srcLinks.Len() > 0 {
		c.srcLinks.At(0).CopyTo(dst.LinkTable().At(0))
	}
	return c.err
}

// finish returns the first index error met in the open part.
func (c *compactor) finish() error { return c.err }

func (c *compactor) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
}

// addString appends s to the string table being built and returns its index;
// with strIndex set (merging), an equal string already there is reused.
func (c *compactor) addString(s string) int32 {
	st := c.dst.StringTable()
	if c.strIndex != nil {
		if d, ok := c.strIndex[s]; ok {
			return d
		}
		c.strIndex[s] = int32(st.Len())
	}
	st.Append(s)
	return int32(st.Len() - 1)
}

// lookup returns the part index of source index i of the table r maps, or
// missing=true when the entry is not in the part yet (the caller then appends
// it and records it with r.add). field names the referring field for errors.
func (c *compactor) lookup(r *remap, i int32, field func() string, table string) (d int32, missing bool) {
	if i == 0 {
		return 0, false
	}
	if uint(i) >= uint(len(r.to)) {
		c.fail("%s", indexError(field(), int(i), table, len(r.to)))
		return 0, false
	}
	if d := r.to[i]; d != 0 {
		return d, false
	}
	return 0, true
}

// str maps a string index.
func (c *compactor) str(i int32, field func() string) int32 {
	d, missing := c.lookup(&c.strings, i, field, "string_table")
	if missing {
		d = c.addString(c.srcStrings.At(int(i)))
		c.strings.add(int(i), d)
	}
	return d
}

func (c *compactor) attr(i int32, field func() string) int32 {
	d, missing := c.lookup(&c.attrs, i, field, "attribute_table")
	if missing {
		c.fillAttr(int(i), c.dst.AttributeTable().AppendEmpty())
		d = c.attrs.add(int(i), int32(c.dst.AttributeTable().Len()-1))
	}
	return d
}

func (c *compactor) fillAttr(i int, d pprofile.KeyValueAndUnit) {
	s := c.srcAttrs.At(i)
	d.SetKeyStrindex(c.str(s.KeyStrindex(), func() string { return fmt.Sprintf("dictionary.attribute_table[%d].key_strindex", i) }))
	d.SetUnitStrindex(c.str(s.UnitStrindex(), func() string { return fmt.Sprintf("dictionary.attribute_table[%d].unit_strindex", i) }))
	s.Value().CopyTo(d.Value())
}

// attrIndices maps the attribute indices of src into dst (same length).
func (c *compactor) attrIndices(src, dst pcommon.Int32Slice, field func() string) {
	n := src.Len()
	if n == 0 {
		return
	}
	dst.EnsureCapacity(n)
	for k := 0; k < n; k++ {
		dst.Append(c.attr(src.At(k), func() string { return fmt.Sprintf("%s[%d]", field(), k) }))
	}
}

func (c *compactor) fn(i int32, field func() string) int32 {
	d, missing := c.lookup(&c.funcs, i, field, "function_table")
	if missing {
		c.fillFunc(int(i), c.dst.FunctionTable().AppendEmpty())
		d = c.funcs.add(int(i), int32(c.dst.FunctionTable().Len()-1))
	}
	return d
}

func (c *compactor) fillFunc(i int, d pprofile.Function) {
	s := c.srcFuncs.At(i)
	d.SetNameStrindex(c.str(s.NameStrindex(), func() string { return fmt.Sprintf("dictionary.function_table[%d].name_strindex", i) }))
	d.SetSystemNameStrindex(c.str(s.SystemNameStrindex(), func() string { return fmt.Sprintf("dictionary.function_table[%d].system_name_strindex", i) }))
	d.SetFilenameStrindex(c.str(s.FilenameStrindex(), func() string { return fmt.Sprintf("dictionary.function_table[%d].filename_strindex", i) }))
	d.SetStartLine(s.StartLine())
}

func (c *compactor) mapping(i int32, field func() string) int32 {
	d, missing := c.lookup(&c.mappings, i, field, "mapping_table")
	if missing {
		c.fillMapping(int(i), c.dst.MappingTable().AppendEmpty())
		d = c.mappings.add(int(i), int32(c.dst.MappingTable().Len()-1))
	}
	return d
}

func (c *compactor) fillMapping(i int, d pprofile.Mapping) {
	s := c.srcMappings.At(i)
	d.SetMemoryStart(s.MemoryStart())
	d.SetMemoryLimit(s.MemoryLimit())
	d.SetFileOffset(s.FileOffset())
	d.SetFilenameStrindex(c.str(s.FilenameStrindex(), func() string { return fmt.Sprintf("dictionary.mapping_table[%d].filename_strindex", i) }))
	c.attrIndices(s.AttributeIndices(), d.AttributeIndices(), func() string { return fmt.Sprintf("dictionary.mapping_table[%d].attribute_indices", i) })
}

func (c *compactor) location(i int32, field func() string) int32 {
	d, missing := c.lookup(&c.locations, i, field, "location_table")
	if missing {
		c.fillLocation(int(i), c.dst.LocationTable().AppendEmpty())
		d = c.locations.add(int(i), int32(c.dst.LocationTable().Len()-1))
	}
	return d
}

func (c *compactor) fillLocation(i int, d pprofile.Location) {
	if s := c.srcLocations.At(i); c.lastUse(c.locLast, i) {
		s.MoveTo(d)
	} else {
		s.CopyTo(d)
	}
	d.SetMappingIndex(c.mapping(d.MappingIndex(), func() string { return fmt.Sprintf("dictionary.location_table[%d].mapping_index", i) }))
	lines := d.Lines()
	for k := 0; k < lines.Len(); k++ {
		l := lines.At(k)
		l.SetFunctionIndex(c.fn(l.FunctionIndex(), func() string {
			return fmt.Sprintf("dictionary.location_table[%d].lines[%d].function_index", i, k)
		}))
	}
	c.mapAttrIndices(d.AttributeIndices(), func() string { return fmt.Sprintf("dictionary.location_table[%d].attribute_indices", i) })
}

// lastUse says whether the open part is the last to use entry i of a source
// table whose last users were planned (owned mode only): that part may take
// the entry rather than a copy. Index 0 is used by every part.
func (c *compactor) lastUse(last []int32, i int) bool {
	return i > 0 && i < len(last) && last[i] == c.part
}

// stack maps a stack index. When the stack is deeper than maxFrames, the
// part gets a stack of its maxFrames leaf-most locations instead, and
// truncated is true.
func (c *compactor) stack(i int32, field func() string) (d int32, truncated bool) {
	if i == 0 {
		return 0, len(c.stackLen) > 0 && int(c.stackLen[0]) > c.maxFrames
	}
	if uint(i) >= uint(len(c.stacks.to)) {
		c.fail("%s", indexError(field(), int(i), "stack_table", len(c.stacks.to)))
		return 0, false
	}
	if int(c.stackLen[i]) > c.maxFrames {
		if d := c.truncStacks.to[i]; d != 0 {
			return d, true
		}
		c.fillStack(int(i), c.dst.StackTable().AppendEmpty(), true)
		// Truncated stacks share the part's stack table with whole ones.
		d = int32(c.dst.StackTable().Len() - 1)
		c.truncStacks.to[i] = d
		c.truncStacks.from = append(c.truncStacks.from, i)
		return d, true
	}
	if d := c.stacks.to[i]; d != 0 {
		return d, false
	}
	c.fillStack(int(i), c.dst.StackTable().AppendEmpty(), false)
	d = int32(c.dst.StackTable().Len() - 1)
	c.stacks.to[i] = d
	c.stacks.from = append(c.stacks.from, i)
	return d, false
}

func (c *compactor) fillStack(i int, d pprofile.Stack, truncate bool) {
	src := c.srcStacks.At(i).LocationIndices()
	n := src.Len()
	to := c.locations.to
	if !truncate || n <= c.maxFrames {
		// The whole stack: take or copy it, then map it in place.
		if c.lastUse(c.stackLast, i) {
			c.srcStacks.At(i).MoveTo(d)
		} else {
			c.srcStacks.At(i).CopyTo(d)
		}
		li := d.LocationIndices()
		for k := 0; k < n; k++ {
			v := li.At(k)
			if uint(v) < uint(len(to)) && (v == 0 || to[v] != 0) {
				li.SetAt(k, to[v])
				continue
			}
			li.SetAt(k, c.location(v, func() string {
				return fmt.Sprintf("dictionary.stack_table[%d].location_indices[%d]", i, k)
			}))
		}
		return
	}
	n = c.maxFrames
	buf := c.buf[:0]
	for k := 0; k < n; k++ {
		// Fast path: a location the part already holds.
		v := src.At(k)
		if uint(v) < uint(len(to)) && (v == 0 || to[v] != 0) {
			buf = append(buf, to[v])
			continue
		}
		buf = append(buf, c.location(v, func() string {
			return fmt.Sprintf("dictionary.stack_table[%d].location_indices[%d]", i, k)
		}))
	}
	d.LocationIndices().FromRaw(buf)
	c.buf = buf
}

func (c *compactor) link(i int32, field func() string) int32 {
	d, missing := c.lookup(&c.links, i, field, "link_table")
	if missing {
		c.srcLinks.At(int(i)).CopyTo(c.dst.LinkTable().AppendEmpty())
		d = c.links.add(int(i), int32(c.dst.LinkTable().Len()-1))
	}
	return d
}

// copyProfileFields copies every field of src but its samples into dst,
// mapping its dictionary references.
func (c *compactor) copyProfileFields(src, dst pprofile.Profile, path samplePath) error {
	src.SampleType().CopyTo(dst.SampleType())
	src.PeriodType().CopyTo(dst.PeriodType())
	src.AttributeIndices().CopyTo(dst.AttributeIndices())
	dst.SetTime(src.Time())
	dst.SetDurationNano(src.DurationNano())
	dst.SetPeriod(src.Period())
	dst.SetProfileID(src.ProfileID())
	dst.SetDroppedAttributesCount(src.DroppedAttributesCount())
	dst.SetOriginalPayloadFormat(src.OriginalPayloadFormat())
	src.OriginalPayload().CopyTo(dst.OriginalPayload())
	return c.mapProfileFields(dst, path)
}

// mapProfileFields rewrites the dictionary references of p's own fields (not
// its samples), a profile of the source now placed in the part.
func (c *compactor) mapProfileFields(p pprofile.Profile, path samplePath) error {
	field := func(name string) func() string {
		return func() string { return path.profilePath() + "." + name }
	}
	c.valueType(p.SampleType(), field("sample_type"))
	c.valueType(p.PeriodType(), field("period_type"))
	c.mapAttrIndices(p.AttributeIndices(), field("attribute_indices"))
	return c.err
}

func (c *compactor) valueType(t pprofile.ValueType, field func() string) {
	t.SetTypeStrindex(c.str(t.TypeStrindex(), func() string { return field() + ".type_strindex" }))
	t.SetUnitStrindex(c.str(t.UnitStrindex(), func() string { return field() + ".unit_strindex" }))
}

// mapAttrIndices rewrites attribute indices in place.
func (c *compactor) mapAttrIndices(ai pcommon.Int32Slice, field func() string) {
	for j := 0; j < ai.Len(); j++ {
		ai.SetAt(j, c.attr(ai.At(j), func() string { return fmt.Sprintf("%s[%d]", field(), j) }))
	}
}

// mapSample rewrites the dictionary references of s, a sample of the
// source now placed in the part, to the part's dictionary, and reports
// whether its stack was truncated.
func (c *compactor) mapSample(s pprofile.Sample, path samplePath) (truncated bool, err error) {
	field := func(name string) func() string {
		return func() string { return path.String() + "." + name }
	}
	st, truncated := c.stack(s.StackIndex(), field("stack_index"))
	s.SetStackIndex(st)
	if li := s.LinkIndex(); li != 0 {
		s.SetLinkIndex(c.link(li, field("link_index")))
	}
	c.mapAttrIndices(s.AttributeIndices(), field("attribute_indices"))
	return truncated, c.err
}
