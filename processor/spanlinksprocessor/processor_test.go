// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package spanlinksprocessor

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor/xprocessor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/nexovue/otelcol-nexovue/internal/profiledict"
	"github.com/nexovue/otelcol-nexovue/processor/spanlinksprocessor/internal/metadatatest"
)

const (
	traceHex = "0af7651916cd43dd8448eb211c80319c"
	spanHex  = "b7ad6b7169203331"
	ebpf     = ebpfLabelPrefix
)

// sampleSpec is one sample of a test batch: its attributes and, when
// linkTo is set, the link it already has (trace hex + span hex).
type sampleSpec struct {
	attrs  map[string]any
	linkTo [2]string
}

// buildBatch builds a one-profile batch with the given samples, in order.
func buildBatch(t testing.TB, specs ...sampleSpec) pprofile.Profiles {
	pd := pprofile.NewProfiles()
	dict := pd.Dictionary()
	profiledict.AppendZeroEntries(dict)
	prof := pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
	for i, spec := range specs {
		s := prof.Samples().AppendEmpty()
		s.TimestampsUnixNano().Append(uint64(i + 1))
		s.Values().Append(1)
		keys := make([]string, 0, len(spec.attrs))
		for k := range spec.attrs {
			keys = append(keys, k)
		}
		for _, k := range sorted(keys) {
			kv := dict.AttributeTable().AppendEmpty()
			kv.SetKeyStrindex(int32(dict.StringTable().Len()))
			dict.StringTable().Append(k)
			require.NoError(t, kv.Value().FromRaw(spec.attrs[k]))
			s.AttributeIndices().Append(int32(dict.AttributeTable().Len() - 1))
		}
		if spec.linkTo != [2]string{} {
			l := dict.LinkTable().AppendEmpty()
			l.SetTraceID(pcommon.TraceID(mustHex(t, spec.linkTo[0])))
			l.SetSpanID(pcommon.SpanID(mustHex(t, spec.linkTo[1])))
			s.SetLinkIndex(int32(dict.LinkTable().Len() - 1))
		}
	}
	return pd
}

func sorted(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func mustHex(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// links returns, per sample, its link as "trace/span" ("" for none).
func links(pd pprofile.Profiles) []string {
	var out []string
	dict := pd.Dictionary()
	forEachSample(pd, func(s pprofile.Sample) {
		if s.LinkIndex() == 0 {
			out = append(out, "")
			return
		}
		l := dict.LinkTable().At(int(s.LinkIndex()))
		out = append(out, l.TraceID().String()+"/"+l.SpanID().String())
	})
	return out
}

// attrKeys returns the attribute keys of sample i of the first profile.
func attrKeys(pd pprofile.Profiles, i int) []string {
	dict := pd.Dictionary()
	s := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0).Samples().At(i)
	var out []string
	for _, a := range s.AttributeIndices().All() {
		out = append(out, dict.StringTable().At(int(dict.AttributeTable().At(int(a)).KeyStrindex())))
	}
	return out
}

type env struct {
	tel  *componenttest.Telemetry
	proc xprocessor.Profiles
	sink *consumertest.ProfilesSink
}

func newEnv(t testing.TB, cfg *Config) *env {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	sink := new(consumertest.ProfilesSink)
	p, err := NewFactory().(xprocessor.Factory).CreateProfiles(context.Background(), metadatatest.NewSettings(tel), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })
	return &env{tel: tel, proc: p, sink: sink}
}

func (e *env) run(t testing.TB, pd pprofile.Profiles) pprofile.Profiles {
	require.NoError(t, e.proc.ConsumeProfiles(context.Background(), pd))
	all := e.sink.AllProfiles()
	require.NotEmpty(t, all)
	return all[len(all)-1]
}

func defaultConfig() *Config { return createDefaultConfig().(*Config) }

func labels(prefix, trace, span string) map[string]any {
	return map[string]any{prefix + "trace_id": trace, prefix + "span_id": span, prefix + "span_name": "work", "thread.id": int64(7)}
}

func TestLinksBothLabelForms(t *testing.T) {
	for _, prefix := range []string{"", ebpf} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			e := newEnv(t, defaultConfig())
			other := "00f067aa0ba902b7"
			out := e.run(t, buildBatch(t,
				sampleSpec{attrs: labels(prefix, traceHex, spanHex)},
				sampleSpec{attrs: map[string]any{"thread.id": int64(7)}},
				sampleSpec{attrs: labels(prefix, traceHex, other)},
				sampleSpec{attrs: labels(prefix, strings.ToUpper(traceHex), spanHex)},
				sampleSpec{},
			))
			assert.Equal(t, []string{traceHex + "/" + spanHex, "", traceHex + "/" + other, traceHex + "/" + spanHex, ""}, links(out))
			assert.Equal(t, 3, out.Dictionary().LinkTable().Len(), "the zero link and two distinct links: identical links share an entry")
			assert.Contains(t, attrKeys(out, 0), prefix+"span_id", "keep_labels defaults to true")
			metadatatest.AssertEqualProcessorSpanLinksSamplesLinked(t, e.tel, []metricdata.DataPoint[int64]{{Value: 3}}, metricdatatest.IgnoreTimestamp())
		})
	}
}

func TestBadValuesGiveNoLink(t *testing.T) {
	cases := []struct {
		name, trace, span, reason string
	}{
		{"span too short", traceHex, spanHex[:15], "wrong_length"},
		{"span too long", traceHex, spanHex + "0", "wrong_length"},
		{"trace too short", traceHex[:31], spanHex, "wrong_length"},
		{"trace empty", "", spanHex, "wrong_length"},
		{"span not hex", traceHex, "b7ad6b716920333g", "not_hex"},
		{"trace not hex", "0af7651916cd43dd8448eb211c80319-", spanHex, "not_hex"},
		{"trace with 0x", "0x" + traceHex[2:], spanHex, "not_hex"},
		{"span all zeros", traceHex, "0000000000000000", "all_zeros"},
		{"trace all zeros", strings.Repeat("0", 32), spanHex, "all_zeros"},
		{"truncated by the profiler", traceHex + strings.Repeat("f", 47-32), spanHex, "truncated"},
	}
	for _, c := range cases {
		for _, prefix := range []string{"", ebpf} {
			t.Run(c.name+"/prefix="+prefix, func(t *testing.T) {
				want := c.reason
				if want == "truncated" && prefix == "" {
					want = "wrong_length" // only the eBPF profiler cuts at 47 bytes
				}
				e := newEnv(t, defaultConfig())
				in := buildBatch(t, sampleSpec{attrs: labels(prefix, c.trace, c.span)}, sampleSpec{attrs: labels(prefix, traceHex, spanHex)})
				out := e.run(t, in)
				assert.Equal(t, []string{"", traceHex + "/" + spanHex}, links(out), "the bad sample is kept, unlinked; the good one linked")
				assertInvalid(t, e, want, 1)
			})
		}
	}
}

func assertInvalid(t *testing.T, e *env, reason string, n int64) {
	t.Helper()
	metadatatest.AssertEqualProcessorSpanLinksInvalidLabels(t, e.tel, []metricdata.DataPoint[int64]{{
		Value: n, Attributes: attribute.NewSet(attribute.String("reason", reason)),
	}}, metricdatatest.IgnoreTimestamp())
}

func TestIncompleteAndNonStringLabels(t *testing.T) {
	e := newEnv(t, defaultConfig())
	out := e.run(t, buildBatch(t,
		sampleSpec{attrs: map[string]any{"span_id": spanHex}},
		sampleSpec{attrs: map[string]any{ebpf + "trace_id": traceHex}},
	))
	assert.Equal(t, []string{"", ""}, links(out))
	assertInvalid(t, e, "incomplete", 2)

	e = newEnv(t, defaultConfig())
	out = e.run(t, buildBatch(t, sampleSpec{attrs: map[string]any{"span_id": int64(12), "trace_id": traceHex}}))
	assert.Equal(t, []string{""}, links(out))
	assertInvalid(t, e, "not_a_string", 1)
}

// TestExistingLinksPassUnchanged: a link the profiler made (Elastic/EDOT
// Java, OBI) is kept, even when the sample's labels name another span, and
// identical new links do not disturb the existing table entries.
func TestExistingLinksPassUnchanged(t *testing.T) {
	const otherTrace, otherSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	e := newEnv(t, defaultConfig())
	in := buildBatch(t,
		sampleSpec{linkTo: [2]string{otherTrace, otherSpan}},
		sampleSpec{attrs: labels(ebpf, traceHex, spanHex), linkTo: [2]string{otherTrace, otherSpan}},
		sampleSpec{attrs: labels(ebpf, otherTrace, otherSpan)},
		sampleSpec{attrs: labels("", traceHex, spanHex)},
	)
	before := pprofile.NewLinkSlice()
	in.Dictionary().LinkTable().CopyTo(before)
	out := e.run(t, in)
	assert.Equal(t, []string{
		otherTrace + "/" + otherSpan,
		otherTrace + "/" + otherSpan, // its labels never override the link
		otherTrace + "/" + otherSpan, // reuses the identical existing entry
		traceHex + "/" + spanHex,
	}, links(out))
	for i := 0; i < before.Len(); i++ {
		assert.Equal(t, before.At(i).TraceID(), out.Dictionary().LinkTable().At(i).TraceID())
		assert.Equal(t, before.At(i).SpanID(), out.Dictionary().LinkTable().At(i).SpanID())
	}
	assert.Equal(t, before.Len()+1, out.Dictionary().LinkTable().Len())
	metadatatest.AssertEqualProcessorSpanLinksSamplesAlreadyLinked(t, e.tel, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorSpanLinksSamplesLinked(t, e.tel, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())

	// A batch without any label attribute: links counted, nothing changed.
	e = newEnv(t, defaultConfig())
	in = buildBatch(t, sampleSpec{linkTo: [2]string{otherTrace, otherSpan}}, sampleSpec{})
	want := pprofile.NewProfiles()
	in.CopyTo(want)
	out = e.run(t, in)
	assert.Equal(t, want, out)
	metadatatest.AssertEqualProcessorSpanLinksSamplesAlreadyLinked(t, e.tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
}

// TestEmptyLinkTable: a batch whose dictionary has no link table at all
// gets the zero link at index 0 before the first link.
func TestEmptyLinkTable(t *testing.T) {
	e := newEnv(t, defaultConfig())
	in := buildBatch(t, sampleSpec{attrs: labels("", traceHex, spanHex)})
	in.Dictionary().LinkTable().RemoveIf(func(pprofile.Link) bool { return true })
	out := e.run(t, in)
	assert.Equal(t, []string{traceHex + "/" + spanHex}, links(out))
	require.Equal(t, 2, out.Dictionary().LinkTable().Len())
	assert.True(t, out.Dictionary().LinkTable().At(0).TraceID().IsEmpty())
}

func TestCustomKeysAndDropLabels(t *testing.T) {
	cfg := defaultConfig()
	cfg.SpanIDLabel, cfg.TraceIDLabel, cfg.KeepLabels = "dd.span_id", "dd.trace_id", false
	e := newEnv(t, cfg)
	out := e.run(t, buildBatch(t,
		sampleSpec{attrs: map[string]any{ebpf + "dd.span_id": spanHex, ebpf + "dd.trace_id": traceHex, "thread.id": int64(1)}},
		sampleSpec{attrs: map[string]any{"dd.span_id": spanHex, "dd.trace_id": traceHex, "span_name": "x"}},
		sampleSpec{attrs: labels("", traceHex, spanHex)},                                             // the default keys are not read
		sampleSpec{attrs: map[string]any{"dd.span_id": "nothex!!nothex!!", "dd.trace_id": traceHex}}, // unlinked: labels kept
	))
	assert.Equal(t, []string{traceHex + "/" + spanHex, traceHex + "/" + spanHex, "", ""}, links(out))
	assert.Equal(t, []string{"thread.id"}, attrKeys(out, 0), "keep_labels: false drops the labels that became the link")
	assert.Equal(t, []string{"span_name"}, attrKeys(out, 1))
	assert.Len(t, attrKeys(out, 2), 4)
	assert.Equal(t, []string{"dd.span_id", "dd.trace_id"}, attrKeys(out, 3))
}
