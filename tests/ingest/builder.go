package ingest

import (
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"github.com/nexovue/otelcol-nexovue/internal/profiledict"
)

// RequestBuilder builds well-formed profiles requests for tests: one
// resource per service (with service.name), one profile per sample type, a
// dictionary whose every table starts with its zero entry, and one location
// with one line per function name. Not safe for concurrent use.
//
//	b := ingest.NewRequestBuilder()
//	b.SeqRange("checkout", 0, 100, "runtime.mallocgc", "main.handle", "main.main")
//	body, err := b.MarshalProto()
type RequestBuilder struct {
	pd         pprofile.Profiles
	sampleType SampleType
	time       pcommon.Timestamp
	strs       map[string]int32
	funcs      map[string]int32
	locs       map[string]int32
	stacks     map[string]int32
	seqAttrs   map[int64]int32
	resources  map[string]pprofile.ScopeProfiles
	profiles   map[string]map[SampleType]pprofile.Profile
	samples    int64
	frames     int64
}

// NewRequestBuilder returns an empty builder; samples added are CPU samples
// ({"cpu", "nanoseconds"}) until SetSampleType.
func NewRequestBuilder() *RequestBuilder {
	b := &RequestBuilder{
		pd:         pprofile.NewProfiles(),
		sampleType: SampleType{Type: "cpu", Unit: "nanoseconds"},
		time:       pcommon.NewTimestampFromTime(time.Now()),
		strs:       map[string]int32{},
		funcs:      map[string]int32{},
		locs:       map[string]int32{},
		stacks:     map[string]int32{},
		seqAttrs:   map[int64]int32{},
		resources:  map[string]pprofile.ScopeProfiles{},
		profiles:   map[string]map[SampleType]pprofile.Profile{},
	}
	profiledict.AppendZeroEntries(b.pd.Dictionary())
	b.strs[""] = 0
	return b
}

// SetSampleType sets the sample type (e.g. "alloc_space", "bytes") of the
// samples added from now on.
func (b *RequestBuilder) SetSampleType(typ, unit string) *RequestBuilder {
	b.sampleType = SampleType{Type: typ, Unit: unit}
	return b
}

// Sample adds one sample without seq for service; stack lists function
// names leaf (top of stack) first.
func (b *RequestBuilder) Sample(service string, stack ...string) *RequestBuilder {
	b.add(service, false, 0, stack)
	return b
}

// Samples adds n samples without seq.
func (b *RequestBuilder) Samples(service string, n int, stack ...string) *RequestBuilder {
	for range n {
		b.add(service, false, 0, stack)
	}
	return b
}

// SeqSample adds one sample carrying the integer attribute seq.
func (b *RequestBuilder) SeqSample(service string, seq int64, stack ...string) *RequestBuilder {
	b.add(service, true, seq, stack)
	return b
}

// SeqRange adds one sample for each seq in [from, to).
func (b *RequestBuilder) SeqRange(service string, from, to int64, stack ...string) *RequestBuilder {
	for q := from; q < to; q++ {
		b.add(service, true, q, stack)
	}
	return b
}

// SampleCount is the number of samples added.
func (b *RequestBuilder) SampleCount() int64 { return b.samples }

// FrameCount is the number of frames the added samples' stacks write out to.
func (b *RequestBuilder) FrameCount() int64 { return b.frames }

// Profiles returns a copy of the profiles built so far.
func (b *RequestBuilder) Profiles() pprofile.Profiles {
	out := pprofile.NewProfiles()
	b.pd.CopyTo(out)
	return out
}

// MarshalProto encodes the request as protobuf (Content-Type
// application/x-protobuf).
func (b *RequestBuilder) MarshalProto() ([]byte, error) {
	return pprofileotlp.NewExportRequestFromProfiles(b.Profiles()).MarshalProto()
}

// MarshalJSON encodes the request as OTLP JSON (Content-Type
// application/json).
func (b *RequestBuilder) MarshalJSON() ([]byte, error) {
	return pprofileotlp.NewExportRequestFromProfiles(b.Profiles()).MarshalJSON()
}

func (b *RequestBuilder) str(s string) int32 {
	if i, ok := b.strs[s]; ok {
		return i
	}
	t := b.pd.Dictionary().StringTable()
	i := int32(t.Len())
	t.Append(s)
	b.strs[s] = i
	return i
}

func (b *RequestBuilder) location(name string) int32 {
	if i, ok := b.locs[name]; ok {
		return i
	}
	d := b.pd.Dictionary()
	fi, ok := b.funcs[name]
	if !ok {
		fi = int32(d.FunctionTable().Len())
		fn := d.FunctionTable().AppendEmpty()
		fn.SetNameStrindex(b.str(name))
		fn.SetSystemNameStrindex(b.str(name))
		b.funcs[name] = fi
	}
	li := int32(d.LocationTable().Len())
	d.LocationTable().AppendEmpty().Lines().AppendEmpty().SetFunctionIndex(fi)
	b.locs[name] = li
	return li
}

func (b *RequestBuilder) stack(names []string) int32 {
	key := strings.Join(names, "\x00")
	if i, ok := b.stacks[key]; ok {
		return i
	}
	d := b.pd.Dictionary()
	locs := make([]int32, len(names))
	for i, n := range names {
		locs[i] = b.location(n)
	}
	si := int32(d.StackTable().Len())
	d.StackTable().AppendEmpty().LocationIndices().FromRaw(locs)
	b.stacks[key] = si
	return si
}

func (b *RequestBuilder) seqAttr(seq int64) int32 {
	if i, ok := b.seqAttrs[seq]; ok {
		return i
	}
	t := b.pd.Dictionary().AttributeTable()
	i := int32(t.Len())
	a := t.AppendEmpty()
	a.SetKeyStrindex(b.str(SeqAttribute))
	a.Value().SetInt(seq)
	b.seqAttrs[seq] = i
	return i
}

func (b *RequestBuilder) profile(service string) pprofile.Profile {
	byType := b.profiles[service]
	if p, ok := byType[b.sampleType]; ok {
		return p
	}
	sp, ok := b.resources[service]
	if !ok {
		rp := b.pd.ResourceProfiles().AppendEmpty()
		if service != "" {
			rp.Resource().Attributes().PutStr(ServiceNameAttribute, service)
		}
		sp = rp.ScopeProfiles().AppendEmpty()
		sp.Scope().SetName("github.com/nexovue/otelcol-nexovue/tests/ingest")
		b.resources[service] = sp
		byType = map[SampleType]pprofile.Profile{}
		b.profiles[service] = byType
	}
	p := sp.Profiles().AppendEmpty()
	p.SampleType().SetTypeStrindex(b.str(b.sampleType.Type))
	p.SampleType().SetUnitStrindex(b.str(b.sampleType.Unit))
	p.PeriodType().SetTypeStrindex(b.str(b.sampleType.Type))
	p.PeriodType().SetUnitStrindex(b.str(b.sampleType.Unit))
	p.SetPeriod(1)
	p.SetTime(b.time)
	byType[b.sampleType] = p
	return p
}

func (b *RequestBuilder) add(service string, hasSeq bool, seq int64, stack []string) {
	p := b.profile(service)
	s := p.Samples().AppendEmpty()
	s.SetStackIndex(b.stack(stack))
	s.Values().Append(1)
	s.TimestampsUnixNano().Append(uint64(b.time))
	if hasSeq {
		s.AttributeIndices().Append(b.seqAttr(seq))
	}
	b.samples++
	b.frames += int64(len(stack))
}
