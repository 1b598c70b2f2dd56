// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
)

// benchBatch is a realistic eBPF-like batch: 20 processes, 64-frame stacks
// over 200 distinct stacks and 1,000 functions (profilegen's defaults).
func benchBatch(samples int) pprofile.Profiles {
	return profilegen.Generate(profilegen.Config{Samples: samples, Seed: 7})
}

var benchSizes = []int{1000, 8192}

// upstreamGzipPool mirrors confighttp's compressor for gzip (config/confighttp
// compressor.go at v0.161.0): a pooled compress/gzip writer at the default
// level, writing into a fresh bytes.Buffer per request, fed with io.Copy.
var upstreamGzipPool = sync.Pool{New: func() any {
	w, _ := stdgzip.NewWriterLevel(nil, stdgzip.DefaultCompression)
	return w
}}

// upstreamEncode is what the otlp_http exporter does with a profiles
// request: pprofileotlp.ExportRequest.MarshalProto, then confighttp's gzip.
func upstreamEncode(pd pprofile.Profiles) ([]byte, error) {
	raw, err := pprofileotlp.NewExportRequestFromProfiles(pd).MarshalProto()
	if err != nil {
		return nil, err
	}
	buf := bytes.NewBuffer([]byte{})
	w := upstreamGzipPool.Get().(*stdgzip.Writer)
	defer upstreamGzipPool.Put(w)
	w.Reset(buf)
	if _, err := io.Copy(w, bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// BenchmarkEncode compares the exporter's encoding (marshal + pooled
// klauspost gzip) with upstream otlp_http's on the same batch. Each
// iteration encodes a fresh copy, as each request brings new data.
func BenchmarkEncode(b *testing.B) {
	for _, n := range benchSizes {
		src := benchBatch(n)
		encoders := []struct {
			name   string
			encode func(pprofile.Profiles) ([]byte, error)
		}{
			{"otlp_http", upstreamEncode},
		}
		for _, level := range []int{-1, 1} {
			enc, err := newEncoder(true, level)
			require.NoError(b, err)
			encoders = append(encoders, struct {
				name   string
				encode func(pprofile.Profiles) ([]byte, error)
			}{fmt.Sprintf("nexovue/level=%d", level), func(pd pprofile.Profiles) ([]byte, error) {
				body, _, err := enc.encode(pd)
				return body, err
			}})
		}
		for _, e := range encoders {
			b.Run(fmt.Sprintf("samples=%d/%s", n, e.name), func(b *testing.B) {
				b.ReportAllocs()
				var size int
				for b.Loop() {
					b.StopTimer()
					pd := pprofile.NewProfiles()
					src.CopyTo(pd)
					b.StartTimer()
					body, err := e.encode(pd)
					if err != nil {
						b.Fatal(err)
					}
					size = len(body)
				}
				reportPerSample(b, n, size)
			})
		}
	}
}

// BenchmarkExport pushes the same batch through the whole exporter, ours
// and upstream otlp_http, each created by its factory (no queue, no retry,
// gzip, pacing off) against a loopback server that reads and drops the body.
func BenchmarkExport(b *testing.B) {
	var received atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received.Store(n)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	type maker func() (xexporter.Profiles, error)
	makers := []struct {
		name string
		make maker
	}{
		{"otlp_http", func() (xexporter.Profiles, error) {
			f := otlphttpexporter.NewFactory().(xexporter.Factory)
			cfg := f.CreateDefaultConfig().(*otlphttpexporter.Config)
			cfg.ClientConfig.Endpoint = srv.URL
			cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
			cfg.RetryConfig.Enabled = false
			return f.CreateProfiles(context.Background(), exportertest.NewNopSettings(component.MustNewType("otlp_http")), cfg)
		}},
		{"nexovue", func() (xexporter.Profiles, error) {
			cfg := testConfig(srv.URL)
			cfg.RetryConfig.Enabled = false
			return NewFactory().(xexporter.Factory).CreateProfiles(context.Background(), exportertest.NewNopSettings(typ), cfg)
		}},
	}
	for _, n := range benchSizes {
		src := benchBatch(n)
		for _, m := range makers {
			b.Run(fmt.Sprintf("samples=%d/%s", n, m.name), func(b *testing.B) {
				exp, err := m.make()
				require.NoError(b, err)
				require.NoError(b, exp.Start(context.Background(), componenttest.NewNopHost()))
				defer func() { require.NoError(b, exp.Shutdown(context.Background())) }()
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					pd := pprofile.NewProfiles()
					src.CopyTo(pd)
					b.StartTimer()
					if err := exp.ConsumeProfiles(context.Background(), pd); err != nil {
						b.Fatal(err)
					}
				}
				reportPerSample(b, n, int(received.Load()))
			})
		}
	}
}

func reportPerSample(b *testing.B, samples, bodyBytes int) {
	b.ReportMetric(float64(samples)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(bodyBytes)/float64(samples), "bytes/sample")
}
