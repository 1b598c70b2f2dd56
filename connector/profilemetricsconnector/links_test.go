// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilemetricsconnector

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// withLinks links every other sample of pd to one of two spans, as the
// span_links processor (or the profiler) does before this connector.
func withLinks(pd pprofile.Profiles) pprofile.Profiles {
	lt := pd.Dictionary().LinkTable()
	if lt.Len() == 0 {
		lt.AppendEmpty()
	}
	first := int32(lt.Len())
	for i := range 2 {
		l := lt.AppendEmpty()
		l.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, byte(i + 1)})
		l.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, byte(i + 1)})
	}
	n := 0
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, s := range p.Samples().All() {
					if n%2 == 0 {
						s.SetLinkIndex(first + int32(n/2%2))
					}
					n++
				}
			}
		}
	}
	return pd
}

// TestLinksDoNotChangeMetrics: the same samples give the same metrics with
// or without links (eBPF and pprof shapes, inclusive time on).
func TestLinksDoNotChangeMetrics(t *testing.T) {
	for name, batch := range map[string]func() pprofile.Profiles{
		"ebpf":  ebpfBatch,
		"pprof": func() pprofile.Profiles { return pprofCPUBatch("api") },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(func(c *Config) { c.InclusiveTime = true })
			plain, linked := newAggregator(cfg, t0), newAggregator(cfg, t0)
			plain.consume(batch(), t0.Add(time.Second))
			linked.consume(withLinks(batch()), t0.Add(time.Second))
			want := values(plain.flush(t0.Add(time.Minute)))
			if len(want) == 0 {
				t.Fatal("the batch gave no metrics")
			}
			assertValues(t, want, values(linked.flush(t0.Add(time.Minute))))
		})
	}
}
