// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package framelimitprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/collector/processor/xprocessor"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
	"github.com/nexovue/otelcol-nexovue/processor/framelimitprocessor/internal/metadata"
)

// benchmarkConsume sends copies of batch through a frame_limit processor
// with the given limit into a no-op consumer, and reports samples/s.
func benchmarkConsume(b *testing.B, batch pprofile.Profiles, maxFrames int) {
	cfg := createDefaultConfig().(*Config)
	cfg.MaxFrames = maxFrames
	p, err := NewFactory().(xprocessor.Factory).CreateProfiles(context.Background(),
		processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(b, err)
	require.NoError(b, p.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(b, p.Shutdown(context.Background())) }()

	samples := batch.SampleCount()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		in := pprofile.NewProfiles() // the processor consumes its input
		batch.CopyTo(in)
		b.StartTimer()
		if err := p.ConsumeProfiles(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(samples)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkConsumeSplit: a 5,000,000-frame batch (50,000 samples of depth
// 100, 2,000 stacks, 5,000 functions, 50 processes) split at 1,000,000.
func BenchmarkConsumeSplit(b *testing.B) {
	benchmarkConsume(b, profilegen.Generate(profilegen.Config{
		Samples: 50_000, Depth: 100, Stacks: 2_000, Functions: 5_000, Resources: 50, LinkEvery: 10, Seed: 1,
	}), 1_000_000)
}

// BenchmarkConsumePassThrough: a 1,000,000-frame batch within the limit.
func BenchmarkConsumePassThrough(b *testing.B) {
	benchmarkConsume(b, profilegen.Generate(profilegen.Config{
		Samples: 10_000, Depth: 100, Stacks: 400, Functions: 1_000, Resources: 10, Seed: 1,
	}), 1_000_000)
}
