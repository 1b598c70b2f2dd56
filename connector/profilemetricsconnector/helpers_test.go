// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilemetricsconnector

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profiledict"
)

// builder writes hand-made profiles into one batch with a shared dictionary.
type builder struct {
	pd    pprofile.Profiles
	dict  pprofile.ProfilesDictionary
	strs  *profiledict.Strings
	funcs map[string]int32
}

func newBuilder() *builder {
	pd := pprofile.NewProfiles()
	b := &builder{pd: pd, dict: pd.Dictionary(), strs: profiledict.NewStrings(pd.Dictionary()), funcs: map[string]int32{}}
	b.str("")
	b.dict.FunctionTable().AppendEmpty()
	b.dict.LocationTable().AppendEmpty()
	b.dict.StackTable().AppendEmpty()
	b.dict.MappingTable().AppendEmpty()
	return b
}

func (b *builder) str(s string) int32 { return b.strs.Index(s) }

// stack adds a stack of one location per function, leaf first.
func (b *builder) stack(fns ...string) int32 {
	st := b.dict.StackTable().AppendEmpty()
	for _, fn := range fns {
		fi, ok := b.funcs[fn]
		if !ok {
			f := b.dict.FunctionTable().AppendEmpty()
			f.SetNameStrindex(b.str(fn))
			fi = int32(b.dict.FunctionTable().Len() - 1)
			b.funcs[fn] = fi
		}
		loc := b.dict.LocationTable().AppendEmpty()
		loc.Lines().AppendEmpty().SetFunctionIndex(fi)
		st.LocationIndices().Append(int32(b.dict.LocationTable().Len() - 1))
	}
	return int32(b.dict.StackTable().Len() - 1)
}

// resource adds a resource with string attributes (k, v, k, v...) and returns its scope.
func (b *builder) resource(kv ...string) pprofile.ScopeProfiles {
	rp := b.pd.ResourceProfiles().AppendEmpty()
	for i := 0; i+1 < len(kv); i += 2 {
		rp.Resource().Attributes().PutStr(kv[i], kv[i+1])
	}
	return rp.ScopeProfiles().AppendEmpty()
}

// profile adds a profile of sample type typ/unit; period type cpu/nanoseconds
// when period > 0.
func (b *builder) profile(sp pprofile.ScopeProfiles, typ, unit string, period int64) pprofile.Profile {
	p := sp.Profiles().AppendEmpty()
	p.SampleType().SetTypeStrindex(b.str(typ))
	p.SampleType().SetUnitStrindex(b.str(unit))
	if period > 0 {
		p.PeriodType().SetTypeStrindex(b.str("cpu"))
		p.PeriodType().SetUnitStrindex(b.str("nanoseconds"))
		p.SetPeriod(period)
	}
	return p
}

// ebpf adds an eBPF-like sample: no value, n timestamps.
func ebpf(p pprofile.Profile, stack int32, n int) {
	s := p.Samples().AppendEmpty()
	s.SetStackIndex(stack)
	for i := range n {
		s.TimestampsUnixNano().Append(uint64(1_700_000_000_000_000_000 + i*50_000_000))
	}
}

// offCPU adds an off-CPU sample as the eBPF profiler sends it: one
// timestamp per event and, for each, its duration in nanoseconds.
func offCPU(p pprofile.Profile, stack int32, durations ...int64) {
	s := p.Samples().AppendEmpty()
	s.SetStackIndex(stack)
	for i, d := range durations {
		s.TimestampsUnixNano().Append(uint64(1_700_000_000_000_000_000 + i*1_000_000))
		s.Values().Append(d)
	}
}

// valued adds a sample with one value (pprof).
func valued(p pprofile.Profile, stack int32, v int64) {
	s := p.Samples().AppendEmpty()
	s.SetStackIndex(stack)
	s.Values().Append(v)
}

// point is one data point written out for comparison.
type point struct {
	metric, resource, function string
	value                      float64
	gauge, delta               bool
}

// points lists md's data points, keyed "metric{resource}[function]".
func points(md pmetric.Metrics) map[string]point {
	out := map[string]point{}
	for _, rm := range md.ResourceMetrics().All() {
		res := attrString(rm.Resource().Attributes())
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				var dps pmetric.NumberDataPointSlice
				p := point{metric: m.Name(), resource: res}
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					dps, p.gauge = m.Gauge().DataPoints(), true
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
					p.delta = m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityDelta
				}
				for _, dp := range dps.All() {
					q := p
					if fn, ok := dp.Attributes().Get(functionAttr); ok {
						q.function = fn.Str()
					}
					if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
						q.value = float64(dp.IntValue())
					} else {
						q.value = dp.DoubleValue()
					}
					key := fmt.Sprintf("%s{%s}", q.metric, q.resource)
					if q.function != "" {
						key += "[" + q.function + "]"
					}
					if _, dup := out[key]; dup {
						panic("duplicate series " + key)
					}
					out[key] = q
				}
			}
		}
	}
	return out
}

func attrString(m pcommon.Map) string {
	var parts []string
	for k, v := range m.All() {
		parts = append(parts, k+"="+v.AsString())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// values maps each key of points to its value.
func values(md pmetric.Metrics) map[string]float64 {
	out := map[string]float64{}
	for k, p := range points(md) {
		out[k] = p.value
	}
	return out
}

func keys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func testConfig(mod func(*Config)) *Config {
	cfg := createDefaultConfig().(*Config)
	if mod != nil {
		mod(cfg)
	}
	return cfg
}
