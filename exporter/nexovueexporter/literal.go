// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"google.golang.org/protobuf/encoding/protowire"
)

// How resource and scope attributes are written (attribute_encoding).
const (
	// AttributeEncodingStringTable is what pdata's marshaler writes at
	// Collector 0.161.0: every key as key_strindex and every string value
	// as string_value_strindex, references into the request's string_table.
	AttributeEncodingStringTable = "string_table"
	// AttributeEncodingLiteral writes keys in KeyValue.key and string values
	// in AnyValue.string_value, as in the other OTLP signals. Backends that
	// read only those fields (Grafana Pyroscope 2.2.1) need it.
	AttributeEncodingLiteral = "literal"

	// DefaultAttributeEncoding: see BenchmarkAttributeEncoding and the README.
	DefaultAttributeEncoding = AttributeEncodingStringTable
)

// Field numbers of the messages marshalLiteral writes or rewrites
// (opentelemetry-proto as compiled in go.opentelemetry.io/proto/otlp v1.10.0).
const (
	fieldRequestResourceProfiles  protowire.Number = 1 // ExportProfilesServiceRequest.resource_profiles
	fieldResourceProfilesResource protowire.Number = 1 // ResourceProfiles.resource
	fieldResourceProfilesScopes   protowire.Number = 2 // ResourceProfiles.scope_profiles
	fieldResourceAttributes       protowire.Number = 1 // Resource.attributes
	fieldScopeProfilesScope       protowire.Number = 1 // ScopeProfiles.scope
	fieldScopeAttributes          protowire.Number = 3 // InstrumentationScope.attributes

	fieldKeyValueKey   protowire.Number = 1 // KeyValue.key
	fieldKeyValueValue protowire.Number = 2 // KeyValue.value
	fieldListValues    protowire.Number = 1 // ArrayValue.values, KeyValueList.values

	fieldAnyString protowire.Number = 1 // AnyValue.string_value
	fieldAnyBool   protowire.Number = 2
	fieldAnyInt    protowire.Number = 3
	fieldAnyDouble protowire.Number = 4
	fieldAnyArray  protowire.Number = 5
	fieldAnyKVList protowire.Number = 6
	fieldAnyBytes  protowire.Number = 7
)

// marshalLiteral returns pd as an ExportProfilesServiceRequest in protobuf
// with the resource and scope attributes written literally (key, string_value),
// everything else exactly as pdata's marshaler writes it.
//
// The attributes are taken out of pd while pdata marshals it, so that the
// marshaler neither turns them into references nor adds their strings to the
// string table, and are put back before it returns: pd is left as it was.
// Their literal encoding is then inserted into the marshaled Resource and
// InstrumentationScope messages.
func marshalLiteral(pd pprofile.Profiles) ([]byte, error) {
	if pd.IsReadOnly() {
		c := pprofile.NewProfiles()
		pd.CopyTo(c)
		pd = c
	}
	rps := pd.ResourceProfiles()
	resAttrs := make([][]byte, rps.Len())
	scopeAttrs := make([][][]byte, rps.Len())
	var held []heldAttributes
	hold := func(m pcommon.Map, field protowire.Number) []byte {
		if m.Len() == 0 {
			return nil
		}
		b := appendAttributes(nil, field, m)
		aside := pcommon.NewMap()
		m.MoveTo(aside)
		held = append(held, heldAttributes{from: m, aside: aside})
		return b
	}
	for i := 0; i < rps.Len(); i++ {
		rp := rps.At(i)
		resAttrs[i] = hold(rp.Resource().Attributes(), fieldResourceAttributes)
		sps := rp.ScopeProfiles()
		scopeAttrs[i] = make([][]byte, sps.Len())
		for j := 0; j < sps.Len(); j++ {
			scopeAttrs[i][j] = hold(sps.At(j).Scope().Attributes(), fieldScopeAttributes)
		}
	}
	raw, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(pd)
	for _, h := range held {
		h.aside.MoveTo(h.from)
	}
	if err != nil {
		return nil, err
	}
	if len(held) == 0 {
		return raw, nil
	}
	return insertAttributes(raw, resAttrs, scopeAttrs)
}

// heldAttributes are the attributes of one map, moved aside.
type heldAttributes struct {
	from, aside pcommon.Map
}

// insertAttributes rewrites the resource_profiles of a marshaled request,
// giving the i-th the encoded attributes res[i] in its Resource and
// scopes[i][j] in the InstrumentationScope of its j-th scope_profiles.
func insertAttributes(raw []byte, res [][]byte, scopes [][][]byte) ([]byte, error) {
	extra := 0
	for i := range res {
		extra += len(res[i]) + 16
		for _, s := range scopes[i] {
			extra += len(s) + 16
		}
	}
	out := make([]byte, 0, len(raw)+extra)
	i := 0
	err := eachField(raw, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
		if num != fieldRequestResourceProfiles || typ != protowire.BytesType {
			out = append(out, field...)
			return nil
		}
		if i >= len(res) {
			return fmt.Errorf("the marshaled request has more than %d resource_profiles", len(res))
		}
		rp, err := rewriteResourceProfiles(value, res[i], scopes[i])
		if err != nil {
			return fmt.Errorf("resource_profiles[%d]: %w", i, err)
		}
		out = protowire.AppendTag(out, num, protowire.BytesType)
		out = protowire.AppendBytes(out, rp)
		i++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if i != len(res) {
		return nil, fmt.Errorf("the marshaled request has %d resource_profiles, want %d", i, len(res))
	}
	return out, nil
}

func rewriteResourceProfiles(rp, res []byte, scopes [][]byte) ([]byte, error) {
	if len(res) == 0 && !anyNonEmpty(scopes) {
		return rp, nil
	}
	out := make([]byte, 0, len(rp)+len(res)+8)
	sawResource := false
	j := 0
	err := eachField(rp, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
		switch {
		case num == fieldResourceProfilesResource && typ == protowire.BytesType && !sawResource:
			sawResource = true
			out = appendMessage(out, num, insertBefore(value, fieldResourceAttributes, res))
		case num == fieldResourceProfilesScopes && typ == protowire.BytesType:
			if j >= len(scopes) {
				return fmt.Errorf("more than %d scope_profiles", len(scopes))
			}
			sp, err := rewriteScopeProfiles(value, scopes[j])
			if err != nil {
				return fmt.Errorf("scope_profiles[%d]: %w", j, err)
			}
			out = appendMessage(out, num, sp)
			j++
		default:
			out = append(out, field...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if j != len(scopes) {
		return nil, fmt.Errorf("%d scope_profiles, want %d", j, len(scopes))
	}
	if !sawResource && len(res) > 0 {
		out = appendMessage(out, fieldResourceProfilesResource, res)
	}
	return out, nil
}

func rewriteScopeProfiles(sp, attrs []byte) ([]byte, error) {
	if len(attrs) == 0 {
		return sp, nil
	}
	out := make([]byte, 0, len(sp)+len(attrs)+8)
	sawScope := false
	err := eachField(sp, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
		if num == fieldScopeProfilesScope && typ == protowire.BytesType && !sawScope {
			sawScope = true
			out = appendMessage(out, num, insertBefore(value, fieldScopeAttributes, attrs))
			return nil
		}
		out = append(out, field...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !sawScope {
		out = appendMessage(out, fieldScopeProfilesScope, attrs)
	}
	return out, nil
}

// insertBefore returns msg with ins inserted before its first field
// numbered above after, keeping the fields in ascending order as pdata
// writes them. msg was written by pdata and is well formed.
func insertBefore(msg []byte, after protowire.Number, ins []byte) []byte {
	if len(ins) == 0 {
		return msg
	}
	at := len(msg)
	for pos := 0; pos < len(msg); {
		num, typ, n := protowire.ConsumeTag(msg[pos:])
		if n < 0 {
			break
		}
		if num > after {
			at = pos
			break
		}
		m := protowire.ConsumeFieldValue(num, typ, msg[pos+n:])
		if m < 0 {
			break
		}
		pos += n + m
	}
	out := make([]byte, 0, len(msg)+len(ins))
	out = append(out, msg[:at]...)
	out = append(out, ins...)
	return append(out, msg[at:]...)
}

// eachField calls f with every field of msg: its number, wire type, the
// whole field (tag and value) and, for length-delimited fields, the value.
func eachField(msg []byte, f func(num protowire.Number, typ protowire.Type, field, value []byte) error) error {
	for pos := 0; pos < len(msg); {
		num, typ, n := protowire.ConsumeTag(msg[pos:])
		if n < 0 {
			return protowire.ParseError(n)
		}
		var value []byte
		m := 0
		if typ == protowire.BytesType {
			value, m = protowire.ConsumeBytes(msg[pos+n:])
		} else {
			m = protowire.ConsumeFieldValue(num, typ, msg[pos+n:])
		}
		if m < 0 {
			return protowire.ParseError(m)
		}
		if err := f(num, typ, msg[pos:pos+n+m], value); err != nil {
			return err
		}
		pos += n + m
	}
	return nil
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func anyNonEmpty(bs [][]byte) bool {
	for _, b := range bs {
		if len(b) > 0 {
			return true
		}
	}
	return false
}

// appendAttributes appends every entry of m as a KeyValue field numbered field.
func appendAttributes(b []byte, field protowire.Number, m pcommon.Map) []byte {
	for k, v := range m.All() {
		b = protowire.AppendTag(b, field, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeKeyValue(k, v)))
		b = appendKeyValue(b, k, v)
	}
	return b
}

// appendKeyValue appends the fields of a KeyValue; an empty key is left out
// and the value always written, as pdata does.
func appendKeyValue(b []byte, k string, v pcommon.Value) []byte {
	if k != "" {
		b = protowire.AppendTag(b, fieldKeyValueKey, protowire.BytesType)
		b = protowire.AppendString(b, k)
	}
	b = protowire.AppendTag(b, fieldKeyValueValue, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(sizeAnyValue(v)))
	return appendAnyValue(b, v)
}

func sizeKeyValue(k string, v pcommon.Value) int {
	n := 0
	if k != "" {
		n += protowire.SizeTag(fieldKeyValueKey) + protowire.SizeBytes(len(k))
	}
	return n + protowire.SizeTag(fieldKeyValueValue) + protowire.SizeBytes(sizeAnyValue(v))
}

// appendAnyValue appends the fields of an AnyValue; an empty value has none.
func appendAnyValue(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		b = protowire.AppendTag(b, fieldAnyString, protowire.BytesType)
		return protowire.AppendString(b, v.Str())
	case pcommon.ValueTypeBool:
		b = protowire.AppendTag(b, fieldAnyBool, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeBool(v.Bool()))
	case pcommon.ValueTypeInt:
		b = protowire.AppendTag(b, fieldAnyInt, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(v.Int()))
	case pcommon.ValueTypeDouble:
		b = protowire.AppendTag(b, fieldAnyDouble, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(v.Double()))
	case pcommon.ValueTypeBytes:
		b = protowire.AppendTag(b, fieldAnyBytes, protowire.BytesType)
		return protowire.AppendBytes(b, v.Bytes().AsRaw())
	case pcommon.ValueTypeSlice:
		b = protowire.AppendTag(b, fieldAnyArray, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeArray(v.Slice())))
		for _, e := range v.Slice().All() {
			b = protowire.AppendTag(b, fieldListValues, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(sizeAnyValue(e)))
			b = appendAnyValue(b, e)
		}
		return b
	case pcommon.ValueTypeMap:
		b = protowire.AppendTag(b, fieldAnyKVList, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeKVList(v.Map())))
		return appendAttributes(b, fieldListValues, v.Map())
	default: // empty
		return b
	}
}

func sizeAnyValue(v pcommon.Value) int {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return protowire.SizeTag(fieldAnyString) + protowire.SizeBytes(len(v.Str()))
	case pcommon.ValueTypeBool:
		return protowire.SizeTag(fieldAnyBool) + 1
	case pcommon.ValueTypeInt:
		return protowire.SizeTag(fieldAnyInt) + protowire.SizeVarint(uint64(v.Int()))
	case pcommon.ValueTypeDouble:
		return protowire.SizeTag(fieldAnyDouble) + protowire.SizeFixed64()
	case pcommon.ValueTypeBytes:
		return protowire.SizeTag(fieldAnyBytes) + protowire.SizeBytes(v.Bytes().Len())
	case pcommon.ValueTypeSlice:
		return protowire.SizeTag(fieldAnyArray) + protowire.SizeBytes(sizeArray(v.Slice()))
	case pcommon.ValueTypeMap:
		return protowire.SizeTag(fieldAnyKVList) + protowire.SizeBytes(sizeKVList(v.Map()))
	default:
		return 0
	}
}

func sizeArray(s pcommon.Slice) int {
	n := 0
	for _, e := range s.All() {
		n += protowire.SizeTag(fieldListValues) + protowire.SizeBytes(sizeAnyValue(e))
	}
	return n
}

func sizeKVList(m pcommon.Map) int {
	n := 0
	for k, v := range m.All() {
		n += protowire.SizeTag(fieldListValues) + protowire.SizeBytes(sizeKeyValue(k, v))
	}
	return n
}
