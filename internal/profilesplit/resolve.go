package profilesplit // import "github.com/nexovue/otelcol-nexovue/internal/profilesplit"

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// ResolveSamples returns one line per sample of pd, in order, holding
// everything the sample means with every dictionary reference resolved: its
// resource (attributes, schema URL), scope, profile fields (time, duration,
// period and period type, sample type, profile id, attributes, dropped count,
// original payload and its format), values, timestamps, attributes, link, and
// its full stack as locations (address, mapping, lines with function names,
// files and line numbers, attributes). Two requests hold the same samples
// exactly when their sorted lines are equal, whatever their dictionaries.
//
// A stack deeper than maxDepth is written as its maxDepth leaf-most frames,
// so the input of Split(pd, n) resolves with maxDepth n to what the parts
// resolve to; maxDepth <= 0 means no limit. It is meant for tests: it panics
// on an index outside the dictionary (call Validate first).
func ResolveSamples(pd pprofile.Profiles, maxDepth int) []string {
	r := resolver{dict: pd.Dictionary()}
	var out []string
	rps := pd.ResourceProfiles()
	for i := 0; i < rps.Len(); i++ {
		rp := rps.At(i)
		res := "resource{" + MapString(rp.Resource().Attributes()) +
			" dropped=" + strconv.FormatUint(uint64(rp.Resource().DroppedAttributesCount()), 10) +
			" schema=" + rp.SchemaUrl() + "}"
		sps := rp.ScopeProfiles()
		for j := 0; j < sps.Len(); j++ {
			sp := sps.At(j)
			sc := sp.Scope()
			scope := fmt.Sprintf("scope{%s %s %s dropped=%d schema=%s}", sc.Name(), sc.Version(),
				MapString(sc.Attributes()), sc.DroppedAttributesCount(), sp.SchemaUrl())
			profs := sp.Profiles()
			for k := 0; k < profs.Len(); k++ {
				p := profs.At(k)
				prof := fmt.Sprintf("profile{sample_type=%s period_type=%s period=%d time=%d duration=%d id=%s attrs=%s dropped=%d format=%q payload=%s}",
					r.valueType(p.SampleType()), r.valueType(p.PeriodType()), p.Period(), p.Time(), p.DurationNano(),
					p.ProfileID().String(), r.attrs(p.AttributeIndices()), p.DroppedAttributesCount(),
					p.OriginalPayloadFormat(), hex.EncodeToString(p.OriginalPayload().AsRaw()))
				samples := p.Samples()
				for l := 0; l < samples.Len(); l++ {
					s := samples.At(l)
					var b strings.Builder
					b.WriteString(res)
					b.WriteString(scope)
					b.WriteString(prof)
					fmt.Fprintf(&b, "sample{values=%v timestamps=%v attrs=%s link=%s stack=[",
						s.Values().AsRaw(), s.TimestampsUnixNano().AsRaw(), r.attrs(s.AttributeIndices()), r.link(s.LinkIndex()))
					locs := r.dict.StackTable().At(int(s.StackIndex())).LocationIndices()
					n := locs.Len()
					if maxDepth > 0 {
						n = min(n, maxDepth)
					}
					for f := 0; f < n; f++ {
						b.WriteString(r.location(locs.At(f)))
					}
					b.WriteString("]}")
					out = append(out, b.String())
				}
			}
		}
	}
	return out
}

// SortedSamples is ResolveSamples, sorted: the multiset of pd's samples.
func SortedSamples(pd pprofile.Profiles, maxDepth int) []string {
	s := ResolveSamples(pd, maxDepth)
	sort.Strings(s)
	return s
}

type resolver struct {
	dict pprofile.ProfilesDictionary
	locs map[int32]string
}

func (r *resolver) str(i int32) string { return strconv.Quote(r.dict.StringTable().At(int(i))) }

func (r *resolver) valueType(v pprofile.ValueType) string {
	return r.str(v.TypeStrindex()) + "/" + r.str(v.UnitStrindex())
}

func (r *resolver) attrs(idx pcommon.Int32Slice) string {
	var b strings.Builder
	b.WriteByte('{')
	for k := 0; k < idx.Len(); k++ {
		a := r.dict.AttributeTable().At(int(idx.At(k)))
		fmt.Fprintf(&b, "%s=%s(%s)[%s];", r.str(a.KeyStrindex()), a.Value().Type(), a.Value().AsString(), r.str(a.UnitStrindex()))
	}
	b.WriteByte('}')
	return b.String()
}

func (r *resolver) link(i int32) string {
	l := r.dict.LinkTable().At(int(i))
	return l.TraceID().String() + "/" + l.SpanID().String()
}

func (r *resolver) location(i int32) string {
	if s, ok := r.locs[i]; ok {
		return s
	}
	l := r.dict.LocationTable().At(int(i))
	m := r.dict.MappingTable().At(int(l.MappingIndex()))
	var b strings.Builder
	fmt.Fprintf(&b, "loc{addr=%#x mapping={%#x-%#x off=%#x file=%s attrs=%s} lines=[",
		l.Address(), m.MemoryStart(), m.MemoryLimit(), m.FileOffset(), r.str(m.FilenameStrindex()), r.attrs(m.AttributeIndices()))
	for k := 0; k < l.Lines().Len(); k++ {
		ln := l.Lines().At(k)
		f := r.dict.FunctionTable().At(int(ln.FunctionIndex()))
		fmt.Fprintf(&b, "{fn=%s sys=%s file=%s start=%d line=%d col=%d}",
			r.str(f.NameStrindex()), r.str(f.SystemNameStrindex()), r.str(f.FilenameStrindex()), f.StartLine(), ln.Line(), ln.Column())
	}
	fmt.Fprintf(&b, "] attrs=%s}", r.attrs(l.AttributeIndices()))
	if r.locs == nil {
		r.locs = make(map[int32]string)
	}
	r.locs[i] = b.String()
	return r.locs[i]
}

// MapString writes a pcommon.Map in key order, types included: equal
// strings for equal maps.
func MapString(m pcommon.Map) string {
	keys := make([]string, 0, m.Len())
	for k := range m.All() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for _, k := range keys {
		v, _ := m.Get(k)
		fmt.Fprintf(&b, "%q=%s(%s);", k, v.Type(), v.AsString())
	}
	b.WriteByte('}')
	return b.String()
}
