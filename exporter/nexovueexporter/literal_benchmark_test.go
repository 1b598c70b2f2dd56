// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
)

// attributeEncodingBatches are eBPF-shaped batches: profilegen's defaults
// (20 processes, 64-frame stacks), a larger batch, and a host with many
// processes that each ran a little (as most processes of a real host do).
var attributeEncodingBatches = []profilegen.Config{
	{Samples: 1000, Resources: 20, Seed: 7},
	{Samples: 8192, Resources: 20, Seed: 7},
	{Samples: 1000, Resources: 200, Stacks: 400, Seed: 7},
}

// BenchmarkAttributeEncoding compares the two attribute_encoding settings on
// the same batches: the time to encode (marshal + gzip at the default
// level) and the bytes per sample after gzip (bytes/sample), and before it
// (raw_bytes/sample).
//
//	go test -bench AttributeEncoding -benchmem -run '^$' ./exporter/nexovueexporter/
func BenchmarkAttributeEncoding(b *testing.B) {
	enc, err := newEncoder(true, -1)
	require.NoError(b, err)
	for _, bc := range attributeEncodingBatches {
		src := profilegen.Generate(bc)
		for _, encoding := range []string{AttributeEncodingStringTable, AttributeEncodingLiteral} {
			name := fmt.Sprintf("samples=%d/processes=%d/%s", bc.Samples, bc.Resources, encoding)
			b.Run(name, func(b *testing.B) {
				e := *enc
				e.literal = encoding == AttributeEncodingLiteral
				var body []byte
				var raw int
				for b.Loop() {
					b.StopTimer()
					pd := pprofile.NewProfiles()
					src.CopyTo(pd)
					b.StartTimer()
					body, raw, err = e.encode(pd)
					require.NoError(b, err)
				}
				n := float64(src.SampleCount())
				b.ReportMetric(float64(len(body))/n, "bytes/sample")
				b.ReportMetric(float64(raw)/n, "raw_bytes/sample")
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(n*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
			})
		}
	}
}
