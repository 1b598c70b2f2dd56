// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
)

// literalBatch is an eBPF-shaped batch whose first resource and scope also
// carry every kind of attribute value, nested ones included.
func literalBatch(samples int) pprofile.Profiles {
	pd := profilegen.Generate(profilegen.Config{Samples: samples, Resources: 5, Seed: 3})
	rp := pd.ResourceProfiles().At(0)
	ra := rp.Resource().Attributes()
	ra.PutBool("process.traced", true)
	ra.PutBool("process.untraced", false)
	ra.PutInt("process.parent_pid", 0)
	ra.PutInt("negative", -42)
	ra.PutDouble("host.cpu.ghz", 2.45)
	ra.PutEmptyBytes("process.executable.build_id.raw").FromRaw([]byte{0xde, 0xad, 0xbe, 0xef})
	ra.PutEmpty("empty")
	ra.PutStr("empty.string", "")
	args := ra.PutEmptySlice("process.command_args")
	args.AppendEmpty().SetStr("/opt/app0/bin/app0")
	args.AppendEmpty().SetStr("--port=8080")
	args.AppendEmpty().SetInt(7)
	labels := ra.PutEmptyMap("k8s.pod.labels")
	labels.PutStr("app", "checkout")
	labels.PutEmptyMap("nested").PutStr("team", "payments")
	rp.Resource().SetDroppedAttributesCount(2)
	scope := rp.ScopeProfiles().At(0).Scope()
	scope.Attributes().PutStr("profiler.mode", "ebpf")
	scope.Attributes().PutInt("profiler.samples_per_second", 19)
	scope.SetDroppedAttributesCount(1)
	return pd
}

// pdataBytes is what pdata's own marshaler writes for a copy of pd.
func pdataBytes(t testing.TB, pd pprofile.Profiles) []byte {
	c := pprofile.NewProfiles()
	pd.CopyTo(c)
	b, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(c)
	require.NoError(t, err)
	return b
}

func decodeProto(t *testing.T, b []byte) *collectorpb.ExportProfilesServiceRequest {
	t.Helper()
	req := &collectorpb.ExportProfilesServiceRequest{}
	require.NoError(t, proto.Unmarshal(b, req))
	return req
}

// requireLiteral fails unless every resource and scope attribute of req,
// nested ones included, has a literal non-empty key and no string reference.
func requireLiteral(t *testing.T, req *collectorpb.ExportProfilesServiceRequest) {
	t.Helper()
	var check func(at string, kvs []*commonpb.KeyValue)
	var checkValue func(at string, v *commonpb.AnyValue)
	check = func(at string, kvs []*commonpb.KeyValue) {
		for k, kv := range kvs {
			require.NotEmpty(t, kv.GetKey(), "%s[%d] has no literal key", at, k)
			require.Zero(t, kv.GetKeyStrindex(), "%s[%d] (%s) has a key_strindex", at, k, kv.GetKey())
			checkValue(at+"."+kv.GetKey(), kv.GetValue())
		}
	}
	checkValue = func(at string, v *commonpb.AnyValue) {
		_, isRef := v.GetValue().(*commonpb.AnyValue_StringValueStrindex)
		require.False(t, isRef, "%s is a string_value_strindex", at)
		for i, e := range v.GetArrayValue().GetValues() {
			checkValue(fmt.Sprintf("%s[%d]", at, i), e)
		}
		check(at, v.GetKvlistValue().GetValues())
	}
	for i, rp := range req.GetResourceProfiles() {
		check(fmt.Sprintf("resource_profiles[%d].resource.attributes", i), rp.GetResource().GetAttributes())
		for j, sp := range rp.GetScopeProfiles() {
			check(fmt.Sprintf("resource_profiles[%d].scope_profiles[%d].scope.attributes", i, j), sp.GetScope().GetAttributes())
		}
	}
}

// rawValue turns a decoded AnyValue into the form of pcommon.Value.AsRaw.
func rawValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	case *commonpb.AnyValue_ArrayValue:
		out := []any{}
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, rawValue(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return rawMap(x.KvlistValue.GetValues())
	default:
		return nil
	}
}

func rawMap(kvs []*commonpb.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		out[kv.GetKey()] = rawValue(kv.GetValue())
	}
	return out
}

func TestMarshalLiteral(t *testing.T) {
	pd := literalBatch(500)
	before := pdataBytes(t, pd)
	stringsBefore := pd.Dictionary().StringTable().Len()

	b, err := marshalLiteral(pd)
	require.NoError(t, err)

	// pd is left as it was: same attributes, same string table.
	assert.Equal(t, before, pdataBytes(t, pd), "marshalLiteral changed its input")
	assert.Equal(t, stringsBefore, pd.Dictionary().StringTable().Len())

	// Decoded with the OTLP protos: every attribute literal, with pd's values.
	req := decodeProto(t, b)
	requireLiteral(t, req)
	require.Len(t, req.GetResourceProfiles(), pd.ResourceProfiles().Len())
	for i, rp := range req.GetResourceProfiles() {
		want := pd.ResourceProfiles().At(i)
		assert.Equal(t, want.Resource().Attributes().AsRaw(), rawMap(rp.GetResource().GetAttributes()), "resource %d", i)
		assert.Equal(t, want.Resource().DroppedAttributesCount(), rp.GetResource().GetDroppedAttributesCount(), "resource %d", i)
		require.Len(t, rp.GetScopeProfiles(), want.ScopeProfiles().Len())
		for j, sp := range rp.GetScopeProfiles() {
			ws := want.ScopeProfiles().At(j).Scope()
			assert.Equal(t, ws.Attributes().AsRaw(), rawMap(sp.GetScope().GetAttributes()), "scope %d/%d", i, j)
			assert.Equal(t, ws.Name(), sp.GetScope().GetName())
			assert.Equal(t, ws.Version(), sp.GetScope().GetVersion())
			assert.Equal(t, ws.DroppedAttributesCount(), sp.GetScope().GetDroppedAttributesCount())
		}
	}
	// The attributes' strings are not in the string table.
	assert.Len(t, req.GetDictionary().GetStringTable(), stringsBefore)

	// Everything but those attributes is what pdata writes.
	bare := pprofile.NewProfiles()
	pd.CopyTo(bare)
	for _, rp := range bare.ResourceProfiles().All() {
		rp.Resource().Attributes().Clear()
		for _, sp := range rp.ScopeProfiles().All() {
			sp.Scope().Attributes().Clear()
		}
	}
	for _, rp := range req.GetResourceProfiles() {
		rp.GetResource().Attributes = nil
		for _, sp := range rp.GetScopeProfiles() {
			sp.GetScope().Attributes = nil
		}
	}
	assert.True(t, proto.Equal(decodeProto(t, pdataBytes(t, bare)), req), "the rest of the request differs from pdata's encoding")

	// pdata (the ingest double, the Collector's OTLP receiver) reads it back.
	back := pprofileotlp.NewExportRequest()
	require.NoError(t, back.UnmarshalProto(b))
	assert.Equal(t, before, pdataBytes(t, back.Profiles()), "pdata decodes the literal request to other profiles")
}

// The default encoding is pdata's: keys and string values as references.
func TestPdataWritesReferences(t *testing.T) {
	req := decodeProto(t, pdataBytes(t, literalBatch(100)))
	kv := req.GetResourceProfiles()[0].GetResource().GetAttributes()[0]
	assert.Empty(t, kv.GetKey())
	assert.NotZero(t, kv.GetKeyStrindex())
}

func TestMarshalLiteralEdges(t *testing.T) {
	t.Run("no attributes", func(t *testing.T) {
		pd := profilegen.Generate(profilegen.Config{Samples: 50, Resources: 2, Seed: 1})
		for _, rp := range pd.ResourceProfiles().All() {
			rp.Resource().Attributes().Clear()
		}
		b, err := marshalLiteral(pd)
		require.NoError(t, err)
		assert.Equal(t, pdataBytes(t, pd), b)
	})
	t.Run("scope attributes only, empty resource", func(t *testing.T) {
		pd := pprofile.NewProfiles()
		pd.Dictionary().StringTable().Append("")
		rp := pd.ResourceProfiles().AppendEmpty()
		rp.ScopeProfiles().AppendEmpty()
		sp := rp.ScopeProfiles().AppendEmpty()
		sp.Scope().Attributes().PutStr("a", "b")
		b, err := marshalLiteral(pd)
		require.NoError(t, err)
		req := decodeProto(t, b)
		requireLiteral(t, req)
		assert.Empty(t, req.GetResourceProfiles()[0].GetScopeProfiles()[0].GetScope().GetAttributes())
		assert.Equal(t, map[string]any{"a": "b"}, rawMap(req.GetResourceProfiles()[0].GetScopeProfiles()[1].GetScope().GetAttributes()))
	})
	t.Run("read-only input", func(t *testing.T) {
		pd := literalBatch(20)
		want, err := marshalLiteral(pd)
		require.NoError(t, err)
		pd.MarkReadOnly()
		got, err := marshalLiteral(pd)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("empty request", func(t *testing.T) {
		b, err := marshalLiteral(pprofile.NewProfiles())
		require.NoError(t, err)
		assert.Equal(t, pdataBytes(t, pprofile.NewProfiles()), b)
	})
}

func TestInsertAttributesRefusesMismatch(t *testing.T) {
	pd := profilegen.Generate(profilegen.Config{Samples: 10, Resources: 2, Seed: 1})
	raw := pdataBytes(t, pd)
	_, err := insertAttributes(raw, [][]byte{{0x0a, 0x00}}, [][][]byte{{nil}})
	assert.ErrorContains(t, err, "more than 1 resource_profiles")
	_, err = insertAttributes(raw, [][]byte{nil, nil, nil}, [][][]byte{{nil}, {nil}, {nil}})
	assert.ErrorContains(t, err, "has 2 resource_profiles, want 3")
	_, err = insertAttributes([]byte{0x0a, 0x05}, [][]byte{nil}, [][][]byte{{nil}})
	assert.Error(t, err)
}

// FuzzMarshalLiteral: whatever attributes a batch carries, the literal
// request decodes to the same attributes and passes requireLiteral.
func FuzzMarshalLiteral(f *testing.F) {
	f.Add("service.name", "checkout", int64(4242), "k8s.pod.name", "web-1", true)
	f.Add("", "", int64(0), "x", "", false)
	f.Add("ключ", "значение\x00", int64(-1), "nested.key", "v", true)
	f.Fuzz(func(t *testing.T, k1, v1 string, n int64, k2, v2 string, nested bool) {
		pd := profilegen.Generate(profilegen.Config{Samples: 10, Resources: 2, Seed: 1})
		ra := pd.ResourceProfiles().At(1).Resource().Attributes()
		ra.Clear()
		ra.PutStr(k1, v1)
		ra.PutInt(k2+".n", n)
		if nested {
			ra.PutEmptyMap(k2).PutStr(k1, v2)
		} else {
			ra.PutEmptySlice(k2).AppendEmpty().SetStr(v2)
		}
		pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Scope().Attributes().PutStr(k2, v1)
		b, err := marshalLiteral(pd)
		require.NoError(t, err)
		req := &collectorpb.ExportProfilesServiceRequest{}
		require.NoError(t, proto.Unmarshal(b, req))
		for i, rp := range req.GetResourceProfiles() {
			require.Equal(t, pd.ResourceProfiles().At(i).Resource().Attributes().AsRaw(), rawMap(rp.GetResource().GetAttributes()))
		}
		back := pprofileotlp.NewExportRequest()
		require.NoError(t, back.UnmarshalProto(b))
		require.Equal(t, ra.AsRaw(), back.Profiles().ResourceProfiles().At(1).Resource().Attributes().AsRaw())
	})
}

// rawRequest is one request as sent: path, headers and the gunzipped body.
type rawRequest struct {
	path   string
	header http.Header
	body   []byte
}

// TestExporterToAnotherEndpoint sends through the exporter, configured as
// for Grafana Pyroscope (no key, literal attributes, a tenant header, its
// own path), to a server that refuses the first request as too large: both
// halves arrive literal, with every resource's attributes.
func TestExporterToAnotherEndpoint(t *testing.T) {
	var mu sync.Mutex
	var got []rawRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		mu.Lock()
		got = append(got, rawRequest{path: r.URL.Path, header: r.Header.Clone(), body: gunzip(t, b)})
		n := len(got)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)

	cfg := testConfig(srv.URL)
	cfg.Key = ""
	cfg.ProfilesPath = "/pyroscope/v1development/profiles"
	cfg.AttributeEncoding = AttributeEncodingLiteral
	cfg.ClientConfig.Headers.Set("X-Scope-OrgID", "team-a")
	require.NoError(t, cfg.Validate())
	h := newHarness(t, cfg)

	pd := literalBatch(200)
	want := map[string]map[string]any{}
	for _, rp := range pd.ResourceProfiles().All() {
		name, _ := rp.Resource().Attributes().Get("service.name")
		want[name.Str()] = rp.Resource().Attributes().AsRaw()
	}
	require.NoError(t, h.exp.ConsumeProfiles(context.Background(), pd))

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 3, "the refused request and its two halves")
	seen := map[string]map[string]any{}
	for _, r := range got {
		assert.Equal(t, "/pyroscope/v1development/profiles", r.path)
		assert.Equal(t, "team-a", r.header.Get("X-Scope-OrgID"))
		assert.Empty(t, r.header.Values(keyHeader))
		req := decodeProto(t, r.body)
		requireLiteral(t, req)
		for _, rp := range req.GetResourceProfiles() {
			attrs := rawMap(rp.GetResource().GetAttributes())
			seen[attrs["service.name"].(string)] = attrs
		}
	}
	assert.Equal(t, want, seen)
}
