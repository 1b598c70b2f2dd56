package ingest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// benchRequest is 2,000 samples over 20 services with 50-frame stacks
// (100,000 frames).
func benchRequest(b *testing.B) []byte {
	rb := NewRequestBuilder()
	for i := range 2000 {
		stack := make([]string, 50)
		for j := range stack {
			stack[j] = fmt.Sprintf("pkg.fn%d", (i+j)%300)
		}
		rb.SeqSample(fmt.Sprintf("svc%d", i%20), int64(i), stack...)
	}
	body, err := rb.MarshalProto()
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func BenchmarkServeProfiles(b *testing.B) {
	body := benchRequest(b)
	s := New(Config{Keys: []string{testKey}, SamplesPerSecond: 1 << 60})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, ProfilesPath, bytes.NewReader(body))
		req.Header.Set(KeyHeader, testKey)
		req.Header.Set("Content-Type", ContentTypeProto)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	body := benchRequest(b)
	req := pprofileotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		b.Fatal(err)
	}
	pd := req.Profiles()
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(pd); err != nil {
			b.Fatal(err)
		}
	}
}
