// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/ebpf-profiler/libpf"
	"go.opentelemetry.io/ebpf-profiler/reporter"
	"go.opentelemetry.io/ebpf-profiler/reporter/samples"
)

// TestReporterKeepsSpansApart reports, within one interval, samples of one
// stack, thread and CPU under two label sets (span A, span B, A again) and
// one without labels: they must arrive as three samples, each with its own
// labels and its own timestamps. Upstream's reporter alone merges them into
// one sample carrying span A's labels.
func TestReporterKeepsSpansApart(t *testing.T) {
	sink := new(consumertest.ProfilesSink)
	rep, err := newReporter(&reporter.Config{ReportInterval: 50 * time.Millisecond, SamplesPerSecond: 20}, sink)
	require.NoError(t, err)

	frames := make(libpf.Frames, 0, 1)
	frames.Append(&libpf.Frame{Type: libpf.KernelFrame, AddressOrLineno: 0x42, FunctionName: libpf.Intern("main.hot")})
	labels := func(span string) map[libpf.String]libpf.String {
		if span == "" {
			return nil
		}
		return map[libpf.String]libpf.String{
			libpf.Intern("span_id"):  libpf.Intern(span),
			libpf.Intern("trace_id"): libpf.Intern("0af7651916cd43dd8448eb211c80319c"),
		}
	}
	typ := &samples.TypeMetadata{PeriodType: "cpu", PeriodUnit: "nanoseconds", SampleType: "samples", SampleUnit: "count"}
	const spanA, spanB = "b7ad6b7169203331", "00f067aa0ba902b7"
	for i, span := range []string{spanA, spanB, spanA, ""} {
		require.NoError(t, rep.ReportTraceEvent(
			&libpf.Trace{Frames: frames, CustomLabels: labels(span)},
			&samples.TraceEventMeta{
				Comm: libpf.NewCommFromString("burn"), PID: 7, TID: 7, CPU: 1,
				ProfileType: typ, Timestamp: libpf.UnixTime64(1_000 + i), Value: 1,
			}))
	}
	require.NoError(t, rep.Start(t.Context()))
	t.Cleanup(rep.Stop)
	require.Eventually(t, func() bool { return sink.SampleCount() > 0 }, 10*time.Second, 10*time.Millisecond)

	pd := sink.AllProfiles()[0]
	got := map[string][]uint64{} // span_id label (or "") -> timestamps
	prof := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0)
	for i := 0; i < prof.Samples().Len(); i++ {
		s := prof.Samples().At(i)
		got[spanLabel(pd.Dictionary(), s)] = append(got[spanLabel(pd.Dictionary(), s)], s.TimestampsUnixNano().AsRaw()...)
	}
	assert.Equal(t, map[string][]uint64{spanA: {1_000, 1_002}, spanB: {1_001}, "": {1_003}}, got)
}

func spanLabel(dict pprofile.ProfilesDictionary, s pprofile.Sample) string {
	for _, a := range s.AttributeIndices().AsRaw() {
		kv := dict.AttributeTable().At(int(a))
		if dict.StringTable().At(int(kv.KeyStrindex())) == "process.context.label.span_id" {
			return kv.Value().Str()
		}
	}
	return ""
}

func TestLabelKeyIsCanonical(t *testing.T) {
	k := labelKey{}
	a := k.CollectExtraSampleMeta(&libpf.Trace{CustomLabels: map[libpf.String]libpf.String{
		libpf.Intern("a"): libpf.Intern("b:1"), libpf.Intern("c"): libpf.Intern("d"),
	}}, nil)
	b := k.CollectExtraSampleMeta(&libpf.Trace{CustomLabels: map[libpf.String]libpf.String{
		libpf.Intern("c"): libpf.Intern("d"), libpf.Intern("a"): libpf.Intern("b:1"),
	}}, nil)
	c := k.CollectExtraSampleMeta(&libpf.Trace{CustomLabels: map[libpf.String]libpf.String{
		libpf.Intern("a"): libpf.Intern("b"), libpf.Intern("1c"): libpf.Intern("d"),
	}}, nil)
	assert.Equal(t, a, b, "the same labels in another order are one key")
	assert.NotEqual(t, a, c, "a value cannot run into the next key")
	assert.Nil(t, k.CollectExtraSampleMeta(&libpf.Trace{}, nil), "no labels, no key: such samples merge as upstream's")
}
