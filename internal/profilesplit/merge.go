package profilesplit // import "github.com/nexovue/otelcol-nexovue/internal/profilesplit"

import (
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profiledict"
)

// Merge returns one request holding the resources of every part, in order
// (nothing is merged across resources), over one dictionary made of the
// entries the parts use; equal strings are stored once, other entries once
// per part that uses them. It is the inverse of Split up to the repetition of
// resources, scopes and profiles cut by a part boundary, and serves to hand
// back the parts that failed downstream as one request.
//
// Parts that are not read-only are consumed: their content is moved, and they
// must not be used afterwards. A part whose resource or scope attributes were
// rewritten as string-table references by an encoder (pprofile.ProtoMarshaler
// does so in place) is first decoded back. The error names the field of a part
// holding an index outside the part's dictionary.
func Merge(parts ...pprofile.Profiles) (pprofile.Profiles, error) {
	out := pprofile.NewProfiles()
	var c compactor
	c.dst = out.Dictionary()
	c.strIndex = map[string]int32{"": 0}
	profiledict.AppendZeroEntries(c.dst)
	for n, part := range parts {
		part, err := resolveAttributeRefs(part)
		if err != nil {
			return pprofile.Profiles{}, fmt.Errorf("part %d: %w", n, err)
		}
		owned := !part.IsReadOnly()
		c.init(part.Dictionary(), math.MaxInt)
		rps := part.ResourceProfiles()
		for ri := 0; ri < rps.Len(); ri++ {
			if err := c.takeResource(out, rps.At(ri), owned, ri); err != nil {
				return pprofile.Profiles{}, fmt.Errorf("part %d: %w", n, err)
			}
		}
	}
	return out, nil
}

// resolveAttributeRefs returns pd, or a decoded copy of it when its resource
// or scope attributes hold string-table references instead of strings (an
// encoder rewrote them in place: pdata shows such an attribute with an empty
// key). pdata offers no other way to read those references.
func resolveAttributeRefs(pd pprofile.Profiles) (pprofile.Profiles, error) {
	if !hasAttributeRefs(pd) {
		return pd, nil
	}
	var m pprofile.ProtoMarshaler
	buf, err := m.MarshalProfiles(pd)
	if err != nil {
		return pd, err
	}
	var u pprofile.ProtoUnmarshaler
	return u.UnmarshalProfiles(buf)
}

func hasAttributeRefs(pd pprofile.Profiles) bool {
	refs := func(m pcommon.Map) bool {
		_, ok := m.Get("")
		return ok
	}
	for _, rp := range pd.ResourceProfiles().All() {
		if refs(rp.Resource().Attributes()) {
			return true
		}
		for _, sp := range rp.ScopeProfiles().All() {
			if refs(sp.Scope().Attributes()) {
				return true
			}
		}
	}
	return false
}
