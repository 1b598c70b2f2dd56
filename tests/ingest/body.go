package ingest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/klauspost/compress/zstd"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

// Content types the ingest speaks.
const (
	ContentTypeProto = "application/x-protobuf"
	ContentTypeJSON  = "application/json"
)

// errTooLarge marks a body larger than Config.MaxBodyBytes.
var errTooLarge = errors.New("request body too large")

// mediaType returns the media type of a Content-Type header without
// parameters, lower case; "" if it cannot be parsed.
func mediaType(header string) string {
	mt, _, err := mime.ParseMediaType(header)
	if err != nil {
		return ""
	}
	return strings.ToLower(mt)
}

// readBody reads the request body, undoing its Content-Encoding (none,
// identity, gzip or zstd), bounded by limit bytes before and after.
func readBody(r *http.Request, limit int64) ([]byte, int, error) {
	raw, err := readLimited(r.Body, limit)
	if err != nil {
		return nil, len(raw), err
	}
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	var dec io.Reader
	switch enc {
	case "", "identity":
		return raw, len(raw), nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, len(raw), fmt.Errorf("cannot read gzip body: %w", err)
		}
		defer zr.Close()
		dec = zr
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(raw), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)))
		if err != nil {
			return nil, len(raw), fmt.Errorf("cannot read zstd body: %w", err)
		}
		defer zr.Close()
		dec = zr
	default:
		return nil, len(raw), fmt.Errorf("unsupported Content-Encoding %q (want gzip, zstd or none)", enc)
	}
	body, err := readLimited(dec, limit)
	if err != nil && !errors.Is(err, errTooLarge) {
		err = fmt.Errorf("cannot decompress %s body: %w", enc, err)
	}
	return body, len(raw), err
}

func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return b, err
	}
	if int64(len(b)) > limit {
		return b, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
	}
	return b, nil
}

// Compress encodes body with a Content-Encoding the ingest accepts: "gzip",
// "zstd", or "" / "identity" (unchanged). For tests that send requests.
func Compress(body []byte, encoding string) ([]byte, error) {
	switch encoding {
	case "", "identity":
		return body, nil
	case "gzip":
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(body); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case "zstd":
		zw, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer zw.Close()
		return zw.EncodeAll(body, nil), nil
	default:
		return nil, fmt.Errorf("unsupported encoding %q", encoding)
	}
}

// grpcCode maps an HTTP status to the google.rpc.Code put in error bodies.
func grpcCode(status int) int32 {
	switch status {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType:
		return 3 // INVALID_ARGUMENT
	case http.StatusUnauthorized:
		return 16 // UNAUTHENTICATED
	case http.StatusNotFound:
		return 5 // NOT_FOUND
	case http.StatusMethodNotAllowed:
		return 12 // UNIMPLEMENTED
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return 8 // RESOURCE_EXHAUSTED
	case http.StatusServiceUnavailable:
		return 14 // UNAVAILABLE
	default:
		return 2 // UNKNOWN
	}
}

// WriteStatus answers status with msg the way OTLP/HTTP says failures are
// answered: a google.rpc.Status message, protobuf-encoded when the request
// was protobuf (as the Collector's otlphttp exporter decodes and logs it),
// JSON when it was JSON, and plain text otherwise.
func WriteStatus(w http.ResponseWriter, requestContentType string, status int, msg string) {
	var body []byte
	switch mediaType(requestContentType) {
	case ContentTypeProto:
		body, _ = proto.Marshal(&spb.Status{Code: grpcCode(status), Message: msg})
		w.Header().Set("Content-Type", ContentTypeProto)
	case ContentTypeJSON:
		body, _ = json.Marshal(struct {
			Code    int32  `json:"code"`
			Message string `json:"message"`
		}{grpcCode(status), msg})
		w.Header().Set("Content-Type", ContentTypeJSON)
	default:
		body = []byte(msg + "\n")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// StatusMessage extracts the message of an error body written by the server
// (protobuf or JSON google.rpc.Status, or plain text), for tests.
func StatusMessage(contentType string, body []byte) (string, error) {
	switch mediaType(contentType) {
	case ContentTypeProto:
		var st spb.Status
		if err := proto.Unmarshal(body, &st); err != nil {
			return "", fmt.Errorf("error body is not a protobuf google.rpc.Status: %w", err)
		}
		return st.GetMessage(), nil
	case ContentTypeJSON:
		var st struct {
			Message string `json:"message"`
		}
		if err := json.Unmarshal(body, &st); err != nil {
			return "", fmt.Errorf("error body is not a JSON status: %w", err)
		}
		return st.Message, nil
	default:
		return strings.TrimSuffix(string(body), "\n"), nil
	}
}
