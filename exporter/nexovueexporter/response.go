// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

const (
	maxResponseBytes = 64 * 1024
	maxLoggedMessage = 1024
	protobufType     = "application/x-protobuf"
	jsonType         = "application/json"
)

// readResponse reads at most maxResponseBytes of the body and closes it. It
// returns the ingest's message (from a google.rpc.Status, JSON or text body),
// with the key redacted, and for 2xx answers the partial success, if any.
func (e *nexovueExporter) readResponse(resp *http.Response) (string, *pprofileotlp.ExportPartialSuccess) {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	_, _ = io.CopyN(io.Discard, resp.Body, maxResponseBytes) // let the connection be reused
	ctype := resp.Header.Get("Content-Type")
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if len(body) == 0 {
			return "", nil
		}
		r := pprofileotlp.NewExportResponse()
		var err error
		switch {
		case strings.HasPrefix(ctype, protobufType):
			err = r.UnmarshalProto(body)
		case strings.HasPrefix(ctype, jsonType):
			err = r.UnmarshalJSON(body)
		default:
			return "", nil
		}
		if err != nil {
			return "", nil
		}
		ps := r.PartialSuccess()
		if ps.RejectedProfiles() == 0 && ps.ErrorMessage() == "" {
			return "", nil
		}
		return "", &ps
	}
	return truncate(e.redact(responseMessage(ctype, body))), nil
}

func responseMessage(ctype string, body []byte) string {
	switch {
	case strings.HasPrefix(ctype, protobufType):
		st := &status.Status{}
		if err := proto.Unmarshal(body, st); err == nil && st.GetMessage() != "" {
			return st.GetMessage()
		}
	case strings.HasPrefix(ctype, jsonType):
		var st struct {
			Message string `json:"message"`
			Error   string `json:"error"`
		}
		if err := json.Unmarshal(body, &st); err == nil && (st.Message != "" || st.Error != "") {
			return strings.TrimSpace(st.Message + " " + st.Error)
		}
	}
	msg := strings.TrimSpace(string(body))
	if msg == "" {
		return "(no message)"
	}
	return msg
}

// truncate keeps a logged message short and valid UTF-8.
func truncate(msg string) string {
	if len(msg) > maxLoggedMessage {
		msg = msg[:maxLoggedMessage] + "…"
	}
	return strings.ToValidUTF8(msg, "?")
}
