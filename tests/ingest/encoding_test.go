// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package ingest

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// literalize rewrites the resource and scope attributes of a request
// marshaled by pdata (string_table references) into literal keys and string
// values, with the OTLP protos; only the first `limit` resources (all when
// limit < 0), to make a mixed request.
func literalize(t *testing.T, body []byte, limit int) []byte {
	t.Helper()
	req := &collectorpb.ExportProfilesServiceRequest{}
	require.NoError(t, proto.Unmarshal(body, req))
	st := req.GetDictionary().GetStringTable()
	fix := func(kvs []*commonpb.KeyValue) {
		for _, kv := range kvs {
			if kv.KeyStrindex != 0 {
				kv.Key, kv.KeyStrindex = st[kv.KeyStrindex], 0
			}
			if ref, ok := kv.GetValue().GetValue().(*commonpb.AnyValue_StringValueStrindex); ok {
				kv.Value.Value = &commonpb.AnyValue_StringValue{StringValue: st[ref.StringValueStrindex]}
			}
		}
	}
	for i, rp := range req.GetResourceProfiles() {
		if limit >= 0 && i >= limit {
			break
		}
		fix(rp.GetResource().GetAttributes())
		for _, sp := range rp.GetScopeProfiles() {
			fix(sp.GetScope().GetAttributes())
		}
	}
	out, err := proto.Marshal(req)
	require.NoError(t, err)
	return out
}

// literalKeys counts the resource attributes of body with a literal key.
func literalKeys(t *testing.T, body []byte) (literal, refs int) {
	t.Helper()
	req := &collectorpb.ExportProfilesServiceRequest{}
	require.NoError(t, proto.Unmarshal(body, req))
	for _, rp := range req.GetResourceProfiles() {
		for _, kv := range rp.GetResource().GetAttributes() {
			if kv.GetKey() != "" {
				literal++
			}
			if kv.GetKeyStrindex() != 0 {
				refs++
			}
		}
	}
	return literal, refs
}

// Both encodings of resource and scope attributes, and a mix of them, are
// accepted and read the same: the services are named by service.name.
func TestBothAttributeEncodingsAccepted(t *testing.T) {
	b := NewRequestBuilder().Samples("checkout", 3, "leaf", "root").Samples("billing", 2, "leaf", "root")
	refs, err := b.MarshalProto()
	require.NoError(t, err)
	for _, tc := range []struct {
		name          string
		body          []byte
		literal, refs int
	}{
		{"string_table references (pdata)", refs, 0, 2},
		{"literal", literalize(t, refs, -1), 2, 0},
		{"mixed", literalize(t, refs, 1), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lit, ref := literalKeys(t, tc.body)
			require.Equal(t, []int{tc.literal, tc.refs}, []int{lit, ref}, "the request is encoded as the case says")
			s := startServer(t, Config{KeepBodies: 10})
			a := send(t, s, testKey, ContentTypeProto, "gzip", mustCompress(tc.body, "gzip"))
			require.Equal(t, http.StatusOK, a.status, a.body)
			assert.Equal(t, map[string]int64{"checkout": 3, "billing": 2}, s.ServiceSamples())
			assert.Equal(t, [][]byte{tc.body}, s.AcceptedBodies(), "the decompressed body is kept as sent")
		})
	}
}

// A literal attribute without a key (no key, no key_strindex) is refused
// like an unresolvable reference.
func TestLiteralAttributeWithoutKeyRefused(t *testing.T) {
	refs, err := NewRequestBuilder().Samples("checkout", 1, "leaf").MarshalProto()
	require.NoError(t, err)
	req := &collectorpb.ExportProfilesServiceRequest{}
	require.NoError(t, proto.Unmarshal(literalize(t, refs, -1), req))
	attrs := &req.GetResourceProfiles()[0].GetResource().Attributes
	*attrs = append(*attrs, &commonpb.KeyValue{Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 43193}}})
	body, err := proto.Marshal(req)
	require.NoError(t, err)
	s := startServer(t, Config{KeepBodies: 10})
	a := send(t, s, testKey, ContentTypeProto, "", body)
	require.Equal(t, http.StatusBadRequest, a.status)
	assert.Contains(t, a.message(t), "empty attribute key")
	assert.Contains(t, a.message(t), "resource_profiles[0].resource.attributes")
	assert.Empty(t, s.AcceptedBodies(), "only accepted bodies are kept")
}

func TestKeepBodiesBounded(t *testing.T) {
	s := startServer(t, Config{KeepBodies: 2})
	for i := 0; i < 3; i++ {
		require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("checkout", i+1)).status)
	}
	bodies := s.AcceptedBodies()
	require.Len(t, bodies, 2)
	for i, b := range bodies {
		req := pprofileotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(b))
		assert.Equal(t, i+1, req.Profiles().SampleCount(), "the first requests are kept, in order")
	}
	s.Reset()
	assert.Empty(t, s.AcceptedBodies())

	none := startServer(t, Config{})
	require.Equal(t, http.StatusOK, sendBuilder(t, none, nSamples("checkout", 1)).status)
	assert.Empty(t, none.AcceptedBodies(), "nothing is kept by default")
}
