// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package spanlinksprocessor

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/collector/processor/xprocessor"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
	"github.com/nexovue/otelcol-nexovue/processor/framelimitprocessor"
)

// labelledBatch is an eBPF-like batch of n samples (profilegen, with seq)
// where every other sample carries the eBPF profiler's label attributes of
// one of 50 spans of 10 traces, plus a span_name label.
func labelledBatch(n int) pprofile.Profiles {
	pd := profilegen.Generate(profilegen.Config{Samples: n, Depth: 32, Stacks: 400, Functions: 1500, Resources: 20, Seq: true, Seed: 7})
	dict := pd.Dictionary()
	attr := func(k, v string) int32 {
		kv := dict.AttributeTable().AppendEmpty()
		kv.SetKeyStrindex(int32(dict.StringTable().Len()))
		dict.StringTable().Append(k)
		kv.Value().SetStr(v)
		return int32(dict.AttributeTable().Len() - 1)
	}
	var spanAttrs, traceAttrs [50]int32
	for i := range spanAttrs {
		spanAttrs[i] = attr(ebpf+"span_id", fmt.Sprintf("%016x", 0x1000+i))
		traceAttrs[i] = attr(ebpf+"trace_id", fmt.Sprintf("%032x", 0xabc0+i%10))
	}
	name := attr(ebpf+"span_name", "GET /checkout")
	i := 0
	forEachSample(pd, func(s pprofile.Sample) {
		if i%2 == 0 {
			s.AttributeIndices().Append(spanAttrs[i/2%50], traceAttrs[i/2%50], name)
		}
		i++
	})
	return pd
}

// wantLinks is, per sample of labelledBatch in order, the link its labels name.
func wantLinks(n int) []string {
	out := make([]string, n)
	for i := 0; i < n; i += 2 {
		out[i] = fmt.Sprintf("%032x/%016x", 0xabc0+i/2%50%10, 0x1000+i/2%50)
	}
	return out
}

// pipeline is span_links (when link is set) then frame_limit with maxFrames,
// into next: the order of the shipped configs.
func pipeline(t testing.TB, link bool, maxFrames int, next xconsumer.Profiles) xconsumer.Profiles {
	ctx := context.Background()
	flf := framelimitprocessor.NewFactory().(xprocessor.Factory)
	flCfg := flf.CreateDefaultConfig()
	require.NoError(t, setMaxFrames(flCfg, maxFrames))
	fl, err := flf.CreateProfiles(ctx, processortest.NewNopSettings(flf.Type()), flCfg, next)
	require.NoError(t, err)
	require.NoError(t, fl.Start(ctx, nil))
	t.Cleanup(func() { require.NoError(t, fl.Shutdown(ctx)) })
	if !link {
		return fl
	}
	f := NewFactory().(xprocessor.Factory)
	sl, err := f.CreateProfiles(ctx, processortest.NewNopSettings(f.Type()), f.CreateDefaultConfig(), fl)
	require.NoError(t, err)
	require.NoError(t, sl.Start(ctx, nil))
	t.Cleanup(func() { require.NoError(t, sl.Shutdown(ctx)) })
	return sl
}

// setMaxFrames sets frame_limit's max_frames through its configuration map,
// as a user would.
func setMaxFrames(cfg any, n int) error {
	return unmarshalInto(cfg, map[string]any{"max_frames": n})
}

// TestFrameLimitSplitKeepsLinks: when frame_limit splits a batch that
// span_links linked, every sample of every part keeps its link.
func TestFrameLimitSplitKeepsLinks(t *testing.T) {
	const n = 2000
	sink := new(consumertest.ProfilesSink)
	require.NoError(t, pipeline(t, true, 5000, sink).ConsumeProfiles(context.Background(), labelledBatch(n)))
	require.Greater(t, len(sink.AllProfiles()), 5, "the batch was split")
	got := make([]string, n)
	seen := 0
	for _, part := range sink.AllProfiles() {
		seqs := sampleSeqs(part)
		for i, l := range links(part) {
			got[seqs[i]] = l
			seen++
		}
	}
	require.Equal(t, n, seen)
	assert.Equal(t, wantLinks(n), got)
}

// sampleSeqs returns the seq attribute of every sample of pd, in order.
func sampleSeqs(pd pprofile.Profiles) []int64 {
	dict := pd.Dictionary()
	var out []int64
	forEachSample(pd, func(s pprofile.Sample) {
		for _, a := range s.AttributeIndices().All() {
			kv := dict.AttributeTable().At(int(a))
			if dict.StringTable().At(int(kv.KeyStrindex())) == profilegen.SeqKey {
				out = append(out, kv.Value().Int())
			}
		}
	})
	return out
}

// BenchmarkPipeline10kSamples: a batch of 10,000 eBPF-like samples, half of
// them with span labels, through frame_limit with and without span_links in
// front (the batch is copied in both, so the difference is span_links).
func BenchmarkPipeline10kSamples(b *testing.B) {
	in := labelledBatch(10_000)
	for _, link := range []bool{false, true} {
		name := "without_span_links"
		if link {
			name = "with_span_links"
		}
		b.Run(name, func(b *testing.B) {
			p := pipeline(b, link, 1_000_000, consumertest.NewNop())
			b.ReportAllocs()
			for b.Loop() {
				pd := pprofile.NewProfiles()
				in.CopyTo(pd)
				if err := p.ConsumeProfiles(context.Background(), pd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func unmarshalInto(cfg any, m map[string]any) error {
	return confmap.NewFromStringMap(m).Unmarshal(cfg)
}
