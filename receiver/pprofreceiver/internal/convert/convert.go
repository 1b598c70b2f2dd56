// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package convert turns parsed pprof profiles into OTLP profiles of the
// Collector 0.161 data model (go.opentelemetry.io/collector/pdata/pprofile).
//
// Every pprof sample type becomes its own OTLP Profile: a heap profile with
// four sample types yields four profiles, each carrying one value per sample,
// so that values of different types and units are never mixed. All profiles of
// one call share the request-wide ProfilesDictionary.
package convert // import "github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/convert"

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/nexovue/otelcol-nexovue/internal/profiledict"
)

// Attribute keys of the pprof fields that the OTLP model has no field for:
// the semantic conventions' names (semconv v1.43.0, the newest in the module
// graph, which is where the pprof.* attributes are defined).
const (
	// AttrComment holds the pprof comments, as an array of strings, on each profile.
	AttrComment = string(semconv.PprofProfileCommentKey)
	// AttrDocURL holds the pprof doc_url on each profile.
	AttrDocURL = string(semconv.PprofProfileDocURLKey)
	// AttrDropFrames holds the pprof drop_frames regular expression on each profile.
	AttrDropFrames = string(semconv.PprofProfileDropFramesKey)
	// AttrKeepFrames holds the pprof keep_frames regular expression on each profile.
	AttrKeepFrames = string(semconv.PprofProfileKeepFramesKey)
	// AttrDefaultSampleType holds the pprof default_sample_type; the
	// conventions put it on the scope (see SetScopeAttributes).
	AttrDefaultSampleType = string(semconv.PprofScopeDefaultSampleTypeKey)
	// AttrHasFunctions, AttrHasFilenames, AttrHasLineNumbers and
	// AttrHasInlineFrames hold a mapping's has_* flags (set only when true).
	AttrHasFunctions    = string(semconv.PprofMappingHasFunctionsKey)
	AttrHasFilenames    = string(semconv.PprofMappingHasFilenamesKey)
	AttrHasLineNumbers  = string(semconv.PprofMappingHasLineNumbersKey)
	AttrHasInlineFrames = string(semconv.PprofMappingHasInlineFramesKey)
	// AttrIsFolded holds a location's is_folded flag (set only when true).
	AttrIsFolded = string(semconv.PprofLocationIsFoldedKey)
	// AttrBuildID holds a mapping's build id.
	AttrBuildID = string(semconv.ProcessExecutableBuildIDGNUKey)
	// OriginalPayloadFormat is the format name used when the original payload is kept.
	OriginalPayloadFormat = "pprof"
)

var (
	// ErrTooLarge is returned by Decompress when the decompressed body exceeds the limit.
	ErrTooLarge = errors.New("profile exceeds max_body_size")
	// ErrNestedGzip is returned by Parse for gzip inside gzip. No pprof
	// writer does that, and the pprof parser would gunzip the inner layer
	// without any limit: a body of a few hundred bytes could expand to
	// gigabytes.
	ErrNestedGzip = errors.New("gzip inside gzip (nested compression is refused: it is how a small body expands without bound)")
)

func isGzip(data []byte) bool { return len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b }

// Decompress returns data gunzipped if it starts with the gzip magic bytes,
// refusing output larger than maxSize bytes (a guard against decompression
// bombs). Plain data is returned unchanged if it fits in maxSize.
func Decompress(data []byte, maxSize int64) ([]byte, error) {
	if !isGzip(data) {
		if int64(len(data)) > maxSize {
			return nil, fmt.Errorf("%w: %d bytes > %d", ErrTooLarge, len(data), maxSize)
		}
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if int64(len(out)) > maxSize {
		return nil, fmt.Errorf("%w: decompressed size > %d bytes", ErrTooLarge, maxSize)
	}
	return out, nil
}

// Parse decompresses data (see Decompress) and parses it as a pprof profile.
// Every layer is bounded: data is at most one gzip layer (a transport's
// Content-Encoding is removed, under the same limit, before Parse), and
// gzip inside it is refused with ErrNestedGzip.
func Parse(data []byte, maxSize int64) (*profile.Profile, error) {
	raw, err := Decompress(data, maxSize)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, errors.New("empty profile")
	}
	if isGzip(raw) {
		return nil, ErrNestedGzip
	}
	p, err := profile.ParseData(raw)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// IsGo reports whether the profile was written by the Go runtime, judged by
// the presence of functions of the Go runtime package in Go source files.
func IsGo(p *profile.Profile) bool {
	for _, f := range p.Function {
		if strings.HasPrefix(f.Name, "runtime.") && strings.HasSuffix(f.Filename, ".go") {
			return true
		}
	}
	return false
}

// Builder converts pprof profiles into OTLP profiles that share one
// ProfilesDictionary, deduplicating strings, mappings, functions, locations,
// stacks and attributes across all profiles it converts.
type Builder struct {
	dict pprofile.ProfilesDictionary

	strs      map[string]int32
	mappings  map[*profile.Mapping]int32
	functions map[*profile.Function]int32
	locations map[*profile.Location]int32
	stacks    map[string]int32
	attrs     map[attrKey]int32

	keyBuf  []byte
	idxBuf  []int32
	keysBuf []string
}

type attrKey struct {
	key  int32
	unit int32
	kind uint8
	num  int64
	str  string
}

const (
	kindStr uint8 = iota + 1
	kindInt
	kindStrs
	kindInts
	kindTrue
)

// NewBuilder returns a Builder writing into dict, whose tables must be empty.
// It puts the mandatory zero entries at index 0 of every table.
func NewBuilder(dict pprofile.ProfilesDictionary) *Builder {
	b := &Builder{
		dict:      dict,
		strs:      map[string]int32{},
		mappings:  map[*profile.Mapping]int32{},
		functions: map[*profile.Function]int32{},
		locations: map[*profile.Location]int32{},
		stacks:    map[string]int32{},
		attrs:     map[attrKey]int32{},
	}
	profiledict.AppendZeroEntries(dict)
	b.strs[""] = 0
	b.stacks[""] = 0
	return b
}

// Options tune a conversion.
type Options struct {
	// KeepOriginal stores the given original payload (the raw pprof) on the
	// first profile of the conversion.
	OriginalPayload []byte
}

// SetScopeAttributes puts the attributes the semantic conventions define at
// the scope level for p (its default_sample_type) on scope.
func SetScopeAttributes(scope pcommon.InstrumentationScope, p *profile.Profile) {
	if p.DefaultSampleType != "" {
		scope.Attributes().PutStr(AttrDefaultSampleType, p.DefaultSampleType)
	}
}

// Convert converts the pprof profiles ps into a new pprofile.Profiles with a
// single ResourceProfiles and ScopeProfiles holding one Profile per sample
// type of each input profile, the scope attributes taken from the first.
// The resource, scope name and version are left for the caller.
func Convert(ps ...*profile.Profile) (pprofile.Profiles, error) {
	out := pprofile.NewProfiles()
	b := NewBuilder(out.Dictionary())
	sp := out.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty()
	if len(ps) > 0 && ps[0] != nil {
		SetScopeAttributes(sp.Scope(), ps[0])
	}
	for _, p := range ps {
		if err := b.Append(p, sp.Profiles(), Options{}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Append converts p into one OTLP profile per sample type, appended to dst.
func (b *Builder) Append(p *profile.Profile, dst pprofile.ProfilesSlice, opts Options) error {
	if p == nil {
		return errors.New("nil profile")
	}
	for _, s := range p.Sample {
		if len(s.Value) != len(p.SampleType) {
			return fmt.Errorf("sample has %d values, want %d (one per sample type)", len(s.Value), len(p.SampleType))
		}
	}
	// Stacks and attributes are shared by all sample types: compute them once.
	// attrs holds the attribute indices of all samples, sample i's at
	// attrs[attrEnd[i-1]:attrEnd[i]].
	stackIdx := make([]int32, len(p.Sample))
	attrEnd := make([]int, len(p.Sample))
	var attrs []int32
	for i, s := range p.Sample {
		stackIdx[i] = b.stack(s.Location)
		attrs = b.sampleAttributes(attrs, s)
		attrEnd[i] = len(attrs)
	}
	if err := checkExpansion(p, attrEnd); err != nil {
		return err
	}
	profAttrs := b.profileAttributes(p)

	for ti, st := range p.SampleType {
		op := dst.AppendEmpty()
		op.SampleType().SetTypeStrindex(b.str(st.Type))
		op.SampleType().SetUnitStrindex(b.str(st.Unit))
		if p.PeriodType != nil {
			op.PeriodType().SetTypeStrindex(b.str(p.PeriodType.Type))
			op.PeriodType().SetUnitStrindex(b.str(p.PeriodType.Unit))
		}
		op.SetPeriod(p.Period)
		if p.TimeNanos > 0 {
			op.SetTime(pcommon.Timestamp(p.TimeNanos))
		}
		if p.DurationNanos > 0 {
			op.SetDurationNano(uint64(p.DurationNanos))
		}
		op.SetProfileID(newProfileID())
		op.AttributeIndices().Append(profAttrs...)
		if ti == 0 && len(opts.OriginalPayload) > 0 {
			op.SetOriginalPayloadFormat(OriginalPayloadFormat)
			op.OriginalPayload().FromRaw(opts.OriginalPayload)
		}

		n := 0
		for _, s := range p.Sample {
			if s.Value[ti] != 0 {
				n++
			}
		}
		samples := op.Samples()
		samples.EnsureCapacity(n)
		for i, s := range p.Sample {
			v := s.Value[ti]
			if v == 0 {
				continue // a zero value adds nothing to this sample type
			}
			os := samples.AppendEmpty()
			os.SetStackIndex(stackIdx[i])
			os.Values().Append(v)
			start := 0
			if i > 0 {
				start = attrEnd[i-1]
			}
			if start < attrEnd[i] {
				os.AttributeIndices().Append(attrs[start:attrEnd[i]]...)
			}
		}
	}
	return nil
}

// maxExpansion bounds how many output entries (a sample of one type, or
// one of its attribute indices) a conversion may write per input entry (a
// sample value, or a label). Real profiles stay under 2 (a Go heap profile:
// 4 types, 1 label); without a bound, one sample with thousands of labels
// and thousands of non-zero sample types, a few KiB of pprof, would write
// types × labels entries: gigabytes.
const maxExpansion = 16

// ErrExpansion is returned by Append for a profile whose conversion would
// write more than maxExpansion times its entries.
var ErrExpansion = errors.New("profile refused: its conversion would expand beyond the memory bound")

// checkExpansion refuses p if its conversion would exceed maxExpansion;
// attrEnd is as in Append.
func checkExpansion(p *profile.Profile, attrEnd []int) error {
	var in, out int64
	start := 0
	for i, s := range p.Sample {
		nAttrs := int64(attrEnd[i] - start)
		start = attrEnd[i]
		nonZero := int64(0)
		for _, v := range s.Value {
			if v != 0 {
				nonZero++
			}
		}
		in += int64(len(s.Value)) + nAttrs
		out += nonZero * (1 + nAttrs)
	}
	if out > maxExpansion*in+1<<16 {
		return fmt.Errorf("%w: %d input entries, %d output entries", ErrExpansion, in, out)
	}
	return nil
}

func newProfileID() pprofile.ProfileID {
	var id [16]byte
	_, _ = rand.Read(id[:])
	if id == [16]byte{} {
		id[15] = 1
	}
	return pprofile.ProfileID(id)
}

func (b *Builder) str(s string) int32 {
	if i, ok := b.strs[s]; ok {
		return i
	}
	t := b.dict.StringTable()
	i := int32(t.Len())
	t.Append(s)
	b.strs[s] = i
	return i
}

func (b *Builder) mapping(m *profile.Mapping) int32 {
	if m == nil {
		return 0
	}
	if i, ok := b.mappings[m]; ok {
		return i
	}
	t := b.dict.MappingTable()
	i := int32(t.Len())
	om := t.AppendEmpty()
	om.SetMemoryStart(m.Start)
	om.SetMemoryLimit(m.Limit)
	om.SetFileOffset(m.Offset)
	om.SetFilenameStrindex(b.str(m.File))
	if m.BuildID != "" {
		om.AttributeIndices().Append(b.attr(attrKey{key: b.str(AttrBuildID), kind: kindStr, str: m.BuildID}))
	}
	for _, f := range [...]struct {
		key string
		set bool
	}{
		{AttrHasFunctions, m.HasFunctions},
		{AttrHasFilenames, m.HasFilenames},
		{AttrHasLineNumbers, m.HasLineNumbers},
		{AttrHasInlineFrames, m.HasInlineFrames},
	} {
		if f.set {
			om.AttributeIndices().Append(b.boolAttr(f.key))
		}
	}
	b.mappings[m] = i
	return i
}

func (b *Builder) function(f *profile.Function) int32 {
	if f == nil {
		return 0
	}
	if i, ok := b.functions[f]; ok {
		return i
	}
	t := b.dict.FunctionTable()
	i := int32(t.Len())
	of := t.AppendEmpty()
	of.SetNameStrindex(b.str(f.Name))
	of.SetSystemNameStrindex(b.str(f.SystemName))
	of.SetFilenameStrindex(b.str(f.Filename))
	of.SetStartLine(f.StartLine)
	b.functions[f] = i
	return i
}

func (b *Builder) location(l *profile.Location) int32 {
	if i, ok := b.locations[l]; ok {
		return i
	}
	mi := b.mapping(l.Mapping)
	fis := make([]int32, len(l.Line))
	for j, ln := range l.Line {
		fis[j] = b.function(ln.Function)
	}
	t := b.dict.LocationTable()
	i := int32(t.Len())
	ol := t.AppendEmpty()
	ol.SetMappingIndex(mi)
	ol.SetAddress(l.Address)
	if l.IsFolded {
		ol.AttributeIndices().Append(b.boolAttr(AttrIsFolded))
	}
	lines := ol.Lines()
	lines.EnsureCapacity(len(l.Line))
	for j, ln := range l.Line {
		oln := lines.AppendEmpty()
		oln.SetFunctionIndex(fis[j])
		oln.SetLine(ln.Line)
		oln.SetColumn(ln.Column)
	}
	b.locations[l] = i
	return i
}

// stack returns the stack table index of a pprof location list (leaf first,
// as in both pprof and OTLP).
func (b *Builder) stack(locs []*profile.Location) int32 {
	if len(locs) == 0 {
		return 0
	}
	idx := b.idxBuf[:0]
	key := b.keyBuf[:0]
	for _, l := range locs {
		li := b.location(l)
		idx = append(idx, li)
		v := uint32(li)
		key = append(key, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	b.keyBuf, b.idxBuf = key, idx
	if i, ok := b.stacks[string(key)]; ok {
		return i
	}
	t := b.dict.StackTable()
	i := int32(t.Len())
	t.AppendEmpty().LocationIndices().FromRaw(idx) // FromRaw copies
	b.stacks[string(key)] = i
	return i
}

// attr returns the attribute table index of a key/value/unit. Array values
// (multi-valued labels, comments) carry their elements joined in k.str.
func (b *Builder) attr(k attrKey, elems ...any) int32 {
	if i, ok := b.attrs[k]; ok {
		return i
	}
	t := b.dict.AttributeTable()
	i := int32(t.Len())
	kv := t.AppendEmpty()
	kv.SetKeyStrindex(k.key)
	kv.SetUnitStrindex(k.unit)
	switch k.kind {
	case kindStr:
		kv.Value().SetStr(k.str)
	case kindInt:
		kv.Value().SetInt(k.num)
	case kindTrue:
		kv.Value().SetBool(true)
	case kindStrs, kindInts:
		s := kv.Value().SetEmptySlice()
		s.EnsureCapacity(len(elems))
		for _, e := range elems {
			switch e := e.(type) {
			case string:
				s.AppendEmpty().SetStr(e)
			case int64:
				s.AppendEmpty().SetInt(e)
			}
		}
	}
	b.attrs[k] = i
	return i
}

// boolAttr returns the attribute index of key: true (flags are only set when true).
func (b *Builder) boolAttr(key string) int32 {
	return b.attr(attrKey{key: b.str(key), kind: kindTrue})
}

func (b *Builder) strAttr(key string, vals []string) int32 {
	if len(vals) == 1 {
		return b.attr(attrKey{key: b.str(key), kind: kindStr, str: vals[0]})
	}
	elems := make([]any, len(vals))
	for i, v := range vals {
		elems[i] = v
	}
	return b.attr(attrKey{key: b.str(key), kind: kindStrs, str: joinKey(vals)}, elems...)
}

// labelUnit returns the unit of numeric label key: the one recorded in the
// profile, else the one pprof's own tools infer for well-known byte keys.
func labelUnit(key string, units []string) string {
	for _, u := range units {
		if u != "" {
			return u
		}
	}
	switch key {
	case "bytes", "alignment", "request":
		return "bytes"
	}
	return ""
}

// taken reports whether key, considered for numeric label k, is already used
// by a string label or by another numeric label.
func taken(s *profile.Sample, key, k string) bool {
	if _, ok := s.Label[key]; ok {
		return true
	}
	_, ok := s.NumLabel[key]
	return ok && key != k
}

// sortedKeys returns the keys of m in order, in a buffer reused by the next call.
func sortedKeys[V any](b *Builder, m map[string]V) []string {
	keys := b.keysBuf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.keysBuf = keys
	return keys
}

// sampleAttributes appends the attribute indices of a sample's labels to out.
func (b *Builder) sampleAttributes(out []int32, s *profile.Sample) []int32 {
	for _, k := range sortedKeys(b, s.Label) {
		if len(s.Label[k]) == 0 {
			continue
		}
		out = append(out, b.strAttr(k, s.Label[k]))
	}
	for _, k := range sortedKeys(b, s.NumLabel) {
		vals := s.NumLabel[k]
		if len(vals) == 0 {
			continue
		}
		unit := b.str(labelUnit(k, s.NumUnit[k]))
		key := k
		for taken(s, key, k) {
			// Attribute keys must be unique per sample: a numeric label that
			// shares its name with a string label gets a distinct key.
			key += ".num"
		}
		if len(vals) == 1 {
			out = append(out, b.attr(attrKey{key: b.str(key), unit: unit, kind: kindInt, num: vals[0]}))
			continue
		}
		elems := make([]any, len(vals))
		strs := make([]string, len(vals))
		for i, v := range vals {
			elems[i] = v
			strs[i] = strconv.FormatInt(v, 10)
		}
		out = append(out, b.attr(attrKey{key: b.str(key), unit: unit, kind: kindInts, str: joinKey(strs)}, elems...))
	}
	return out
}

func (b *Builder) profileAttributes(p *profile.Profile) []int32 {
	var out []int32
	if len(p.Comments) > 0 {
		elems := make([]any, len(p.Comments))
		for i, c := range p.Comments {
			elems[i] = c
		}
		out = append(out, b.attr(attrKey{key: b.str(AttrComment), kind: kindStrs, str: joinKey(p.Comments)}, elems...))
	}
	for _, kv := range [...]struct{ k, v string }{
		{AttrDocURL, p.DocURL},
		{AttrDropFrames, p.DropFrames},
		{AttrKeepFrames, p.KeepFrames},
	} {
		if kv.v != "" {
			out = append(out, b.attr(attrKey{key: b.str(kv.k), kind: kindStr, str: kv.v}))
		}
	}
	return out
}

// joinKey encodes a list of strings unambiguously (length-prefixed).
func joinKey(vals []string) string {
	var sb strings.Builder
	for _, v := range vals {
		sb.WriteString(strconv.Itoa(len(v)))
		sb.WriteByte(':')
		sb.WriteString(v)
	}
	return sb.String()
}
