package ingest

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// TestLinkIDOfWrongLengthAnswers400: a link whose trace or span ID has the
// wrong length, as sent on the wire (protobuf bytes, OTLP/JSON hex), or is
// missing in a link other than the zero link, is a 400 naming the index.
func TestLinkIDOfWrongLengthAnswers400(t *testing.T) {
	s := startServer(t, Config{})
	traceHex := hex.EncodeToString([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	spanHex := hex.EncodeToString([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	protoWith := func(edit func(l *collectorpb.ExportProfilesServiceRequest)) []byte {
		var req collectorpb.ExportProfilesServiceRequest
		require.NoError(t, proto.Unmarshal(marshalProto(t, validProfiles()), &req))
		edit(&req)
		b, err := proto.Marshal(&req)
		require.NoError(t, err)
		return b
	}
	jsonWith := func(old, repl string) []byte {
		b := marshalJSON(t, validProfiles())
		require.Contains(t, string(b), old)
		return bytes.Replace(b, []byte(old), []byte(repl), 1)
	}
	cases := []struct {
		name, ct string
		body     []byte
		want     string
	}{
		{"proto trace_id of 12 bytes", ContentTypeProto, protoWith(func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.LinkTable[1].TraceId = r.Dictionary.LinkTable[1].TraceId[:12]
		}), "invalid link_table index 1: trace_id has 12 bytes, want 16 (at dictionary.link_table[1].trace_id)"},
		{"proto span_id of 9 bytes", ContentTypeProto, protoWith(func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.LinkTable[1].SpanId = append(r.Dictionary.LinkTable[1].SpanId, 9)
		}), "invalid link_table index 1: span_id has 9 bytes, want 8"},
		{"proto empty span_id", ContentTypeProto, protoWith(func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.LinkTable[1].SpanId = nil
		}), "invalid link_table index 1: span_id has 0 bytes, want 8"},
		{"json short trace_id", ContentTypeJSON, jsonWith(`"traceId":"`+traceHex+`"`, `"traceId":"`+traceHex[:20]+`"`),
			"invalid link_table index 1: trace_id has 10 bytes, want 16"},
		{"json long span_id", ContentTypeJSON, jsonWith(`"spanId":"`+spanHex+`"`, `"spanId":"`+spanHex+`0a"`),
			"invalid link_table index 1: span_id has 9 bytes, want 8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := send(t, s, testKey, tc.ct, "", tc.body)
			require.Equal(t, http.StatusBadRequest, a.status)
			assert.Contains(t, a.message(t), tc.want)
		})
	}
	assert.Zero(t, s.Stats().SamplesAccepted)

	pd := validProfiles()
	pd.Dictionary().LinkTable().At(1).SetSpanID(pcommon.SpanID{})
	var le *LinkError
	require.ErrorAs(t, Validate(pd), &le)
	assert.Equal(t, LinkError{Index: 1, Field: "span_id", Bytes: 0, Want: 8}, *le)
}

// TestStatsCountLinkedSamples: /stats, the per-service stats and the window
// count the accepted samples that carry a link.
func TestStatsCountLinkedSamples(t *testing.T) {
	s := startServer(t, Config{})
	b := NewRequestBuilder().Samples("checkout", 5, "leaf", "root").Samples("cart", 2, "leaf")
	pd := b.Profiles()
	l := pd.Dictionary().LinkTable().AppendEmpty()
	l.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	l.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
	n := 0
	for _, rp := range pd.ResourceProfiles().All() {
		svc, _ := rp.Resource().Attributes().Get("service.name")
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for i, smp := range p.Samples().All() {
					if svc.Str() == "checkout" && i%2 == 0 || svc.Str() == "cart" && i == 0 {
						smp.SetLinkIndex(int32(pd.Dictionary().LinkTable().Len() - 1))
						n++
					}
				}
			}
		}
	}
	require.Equal(t, 4, n)
	require.Equal(t, http.StatusOK, send(t, s, testKey, ContentTypeProto, "", marshalProto(t, pd)).status)
	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("checkout", 3)).status)
	st := s.Stats()
	assert.Equal(t, int64(10), st.SamplesAccepted)
	assert.Equal(t, int64(4), st.SamplesLinked)
	assert.Equal(t, int64(3), st.Services["checkout"].Linked)
	assert.Equal(t, int64(1), st.Services["cart"].Linked)
	w := s.TakeWindow()
	assert.Equal(t, int64(4), w.Linked)
}
