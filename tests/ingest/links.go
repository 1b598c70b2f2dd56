package ingest

import (
	"encoding/hex"
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pprofile"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// Sizes of the IDs of a link.
const (
	traceIDBytes = 16
	spanIDBytes  = 8
)

// LinkError is the reason for a 400 answer to a request whose link table
// holds an ID of the wrong length, e.g. "invalid link_table index 3:
// trace_id has 12 bytes, want 16 (at dictionary.link_table[3].trace_id)".
// Index 0, the zero link, may hold empty IDs; every other link must hold a
// full trace and span ID.
type LinkError struct {
	Index int    // the offending entry of link_table
	Field string // trace_id or span_id
	Bytes int    // the length the ID has
	Want  int    // the length it must have
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("invalid %s index %d: %s has %d bytes, want %d (at dictionary.%s[%d].%s)",
		tableLink, e.Index, e.Field, e.Bytes, e.Want, tableLink, e.Index, e.Field)
}

// checkLinkID returns a *LinkError when an ID of n bytes is not valid at
// index i of the link table.
func checkLinkID(i int, field string, n, want int) error {
	if n == want || (i == 0 && n == 0) {
		return nil
	}
	return &LinkError{Index: i, Field: field, Bytes: n, Want: want}
}

// links checks a decoded link table. Decoding refuses IDs of a length other
// than 0 and the right one (linkIDError names those); an empty ID decodes to
// zeros, which only the zero link may hold.
func (v *validator) links(dict pprofile.ProfilesDictionary) error {
	for i, l := range dict.LinkTable().All() {
		if i == 0 {
			continue
		}
		if l.TraceID().IsEmpty() {
			return checkLinkID(i, "trace_id", 0, traceIDBytes)
		}
		if l.SpanID().IsEmpty() {
			return checkLinkID(i, "span_id", 0, spanIDBytes)
		}
	}
	return nil
}

// linkIDError looks, in a request the pdata decoder refused, for a link ID
// of the wrong length, and returns a *LinkError naming the first, or nil.
func linkIDError(mt string, body []byte) error {
	type id struct{ trace, span int }
	var ids []id
	if mt == ContentTypeProto {
		var req collectorpb.ExportProfilesServiceRequest
		if proto.Unmarshal(body, &req) != nil {
			return nil
		}
		for _, l := range req.GetDictionary().GetLinkTable() {
			ids = append(ids, id{len(l.GetTraceId()), len(l.GetSpanId())})
		}
	} else {
		var req struct {
			Dictionary struct {
				LinkTable []struct {
					TraceID string `json:"traceId"`
					SpanID  string `json:"spanId"`
				} `json:"linkTable"`
			} `json:"dictionary"`
		}
		if json.Unmarshal(body, &req) != nil {
			return nil
		}
		for _, l := range req.Dictionary.LinkTable {
			// OTLP/JSON writes IDs as hex; a string that is not hex has
			// no byte length, so report its length in hex digits / 2.
			n, m := len(l.TraceID)/2, len(l.SpanID)/2
			if _, err := hex.DecodeString(l.TraceID); err != nil {
				n = -1
			}
			if _, err := hex.DecodeString(l.SpanID); err != nil {
				m = -1
			}
			ids = append(ids, id{n, m})
		}
	}
	for i, l := range ids {
		if err := checkLinkID(i, "trace_id", l.trace, traceIDBytes); err != nil {
			return err
		}
		if err := checkLinkID(i, "span_id", l.span, spanIDBytes); err != nil {
			return err
		}
	}
	return nil
}

// linkedSample reports whether a sample of a validated request has a link.
func linkedSample(s pprofile.Sample) bool { return s.LinkIndex() > 0 }
