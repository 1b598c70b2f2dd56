// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilemetricsconnector // import "github.com/nexovue/otelcol-nexovue/connector/profilemetricsconnector"

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
)

// metricID names one of the metrics the connector sends.
type metricID uint8

const (
	metricCPUTime metricID = iota
	metricHeapUsed
	metricHeapAllocated
	metricFunctionSelf
	metricFunctionInclusive
	metricOffCPUTime
	metricFunctionOffCPU
	numMetrics
)

type metricKind uint8

const (
	sumSeconds metricKind = iota
	sumBytes
	gaugeBytes
)

var metricInfo = [numMetrics]struct {
	name, description, unit string
	kind                    metricKind
}{
	metricCPUTime:           {"profile.cpu.time", "CPU time of the group's processes, from CPU profiles.", "s", sumSeconds},
	metricHeapUsed:          {"profile.heap.memory.used", "Heap bytes in use at the last heap profile of each process of the group, summed over its processes.", "By", gaugeBytes},
	metricHeapAllocated:     {"profile.heap.memory.allocated", "Heap bytes allocated, from heap profiles' alloc_space.", "By", sumBytes},
	metricFunctionSelf:      {"profile.function.cpu.time", "Self CPU time of the service's top leaf functions; the rest is function \"other\".", "s", sumSeconds},
	metricFunctionInclusive: {"profile.function.cpu.inclusive.time", "CPU time of the samples whose stack holds the function, for the service's top functions by that time.", "s", sumSeconds},
	metricOffCPUTime:        {"profile.off_cpu.time", "Time the group's threads spent off the CPU (waiting: locks, I/O, sleep), from off-CPU profiles; never CPU time.", "s", sumSeconds},
	metricFunctionOffCPU:    {"profile.function.off_cpu.time", "Off-CPU time of the service's top leaf functions (where threads waited); the rest is function \"other\".", "s", sumSeconds},
}

const (
	// overflowMetric counts values of new series folded into an overflow
	// series because max_series series were tracked.
	overflowMetric     = "profile.metrics.overflow"
	overflowAttr       = "otel.metric.overflow"
	functionAttr       = "code.function.name"
	scopeName          = "github.com/nexovue/otelcol-nexovue/connector/profilemetricsconnector"
	overflowGroupKey   = "\x00overflow"
	fnEntriesPerSeries = 4
)

// serviceAttrs are the attributes of the function metrics' resource.
var serviceAttrs = []string{"service.name", "service.namespace"}

// group is a resource of the metrics sent: a distinct set of attribute values.
type group struct {
	key   string
	attrs pcommon.Map
}

type seriesKey struct {
	metric   metricID
	group    string
	function string
}

type series struct {
	group    *group
	function string
	start    pcommon.Timestamp
	total    float64 // since start (cumulative sums), or the gauge's value
	pending  float64 // this interval
	updated  bool    // got a value this interval
	lastSeen time.Time
}

type fnKey struct {
	inclusive bool
	offCPU    bool
	service   string
	function  string
}

type inUseKey struct {
	group  string
	source string
}

// aggregator holds the connector's state. It is not safe for concurrent use.
type aggregator struct {
	cfg      *Config
	groups   map[string]*group
	series   map[seriesKey]*series
	fn       map[fnKey]float64    // this interval's function times
	inUse    map[inUseKey]float64 // this interval's latest in-use heap per process
	overflow struct {
		total, pending int64
		start          pcommon.Timestamp
	}
	lastFlush time.Time
}

func newAggregator(cfg *Config, now time.Time) *aggregator {
	a := &aggregator{
		cfg:       cfg,
		groups:    map[string]*group{},
		series:    map[seriesKey]*series{},
		fn:        map[fnKey]float64{},
		inUse:     map[inUseKey]float64{},
		lastFlush: now,
	}
	a.overflow.start = pcommon.NewTimestampFromTime(now)
	og := &group{key: overflowGroupKey, attrs: pcommon.NewMap()}
	og.attrs.PutBool(overflowAttr, true)
	a.groups[overflowGroupKey] = og
	return a
}

// groupOf returns the group of a resource for the given attribute keys,
// creating it if new, or the overflow group past 2×max_series groups.
func (a *aggregator) groupOf(attrs pcommon.Map, keys []string) *group {
	var b strings.Builder
	for _, k := range keys {
		if v, ok := attrs.Get(k); ok {
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(v.AsString())
			b.WriteByte(0)
		}
	}
	key := b.String()
	if g, ok := a.groups[key]; ok {
		return g
	}
	if len(a.groups) > 2*a.cfg.MaxSeries {
		// Memory stays bounded however many resources one interval brings.
		a.overflow.pending++
		a.overflow.total++
		return a.groups[overflowGroupKey]
	}
	g := &group{key: key, attrs: pcommon.NewMap()}
	for _, k := range keys {
		if v, ok := attrs.Get(k); ok {
			g.attrs.PutStr(k, v.AsString())
		}
	}
	a.groups[key] = g
	return g
}

// add adds v to the series (metric, g, function), or to the metric's
// overflow series if the series is new and max_series series are tracked.
// For gauges it sets the value.
func (a *aggregator) add(m metricID, g *group, function string, v float64, now time.Time) {
	k := seriesKey{metric: m, group: g.key, function: function}
	s, ok := a.series[k]
	if !ok {
		if g.key != overflowGroupKey && a.countSeries() >= a.cfg.MaxSeries {
			a.overflow.pending++
			a.overflow.total++
			a.add(m, a.groups[overflowGroupKey], "", v, now)
			return
		}
		s = &series{group: g, function: strings.Clone(function), start: pcommon.NewTimestampFromTime(now)}
		a.series[k] = s
	}
	s.lastSeen = now
	if metricInfo[m].kind == gaugeBytes {
		if !s.updated {
			s.pending = 0
		}
		s.pending += v
		s.total = s.pending
	} else {
		s.pending += v
		s.total += v
	}
	s.updated = true
}

// countSeries is the number of series counted against max_series: all but
// the overflow series.
func (a *aggregator) countSeries() int {
	n := len(a.series)
	for m := range numMetrics {
		if _, ok := a.series[seriesKey{metric: m, group: overflowGroupKey}]; ok {
			n--
		}
	}
	return n
}

// consume adds what pd says to this interval.
func (a *aggregator) consume(pd pprofile.Profiles, now time.Time) {
	dict := pd.Dictionary()
	strs := dict.StringTable()
	var fr *frames
	topN := a.cfg.TopFunctions > 0
	maxFn := fnEntriesPerSeries * a.cfg.MaxSeries
	byStack := map[int32]float64{}
	rps := pd.ResourceProfiles()
	for i := range rps.Len() {
		rp := rps.At(i)
		res := rp.Resource().Attributes()
		var g *group
		var svc string
		var svcSet bool
		for j := range rp.ScopeProfiles().Len() {
			profs := rp.ScopeProfiles().At(j).Profiles()
			// A pprof CPU scrape sends samples/count and cpu/nanoseconds
			// of the same samples: count the time once.
			hasCPUTime := false
			for p := range profs.Len() {
				if classify(strs, profs.At(p)) == kindCPUTime {
					hasCPUTime = true
					break
				}
			}
			for p := range profs.Len() {
				prof := profs.At(p)
				kind := classify(strs, prof)
				var scale float64
				switch kind {
				case kindCPUTime:
					scale = 1e-9
				case kindCPUSamples:
					if hasCPUTime {
						continue
					}
					scale = float64(prof.Period()) * 1e-9
				case kindOffCPU:
					scale = 1e-9
				case kindHeapInUse, kindHeapAlloc:
					scale = 1
				default:
					continue
				}
				if g == nil {
					g = a.groupOf(res, a.cfg.GroupBy)
				}
				offCPU := kind == kindOffCPU
				// Functions of time profiles: CPU, or off-CPU on its own.
				cpu := kind == kindCPUTime || kind == kindCPUSamples || offCPU
				if cpu && topN && !svcSet {
					svc = a.groupOf(res, serviceAttrs).key
					svcSet = true
				}
				if cpu && topN && fr == nil {
					fr = newFrames(dict)
				}
				var total float64
				samples := prof.Samples()
				for s := range samples.Len() {
					sample := samples.At(s)
					n := sampleValue(kind, sample)
					if n <= 0 {
						continue
					}
					v := float64(n) * scale
					total += v
					if cpu && topN {
						byStack[sample.StackIndex()] += v
					}
				}
				// Functions once per stack rather than once per sample.
				for stack, v := range byStack {
					a.addFunction(fnKey{offCPU: offCPU, service: svc, function: fr.leafFunction(stack)}, v, maxFn)
					if a.cfg.InclusiveTime && !offCPU {
						for _, fn := range fr.stackFunctions(stack) {
							a.addFunction(fnKey{inclusive: true, service: svc, function: fn}, v, maxFn)
						}
					}
				}
				clear(byStack)
				switch kind {
				case kindCPUTime, kindCPUSamples:
					if total > 0 {
						a.add(metricCPUTime, g, "", total, now)
					}
				case kindOffCPU:
					if total > 0 {
						a.add(metricOffCPUTime, g, "", total, now)
					}
				case kindHeapAlloc:
					if total > 0 {
						a.add(metricHeapAllocated, g, "", total, now)
					}
				case kindHeapInUse:
					k := inUseKey{group: g.key, source: profilesplit.MapString(res)}
					if _, ok := a.inUse[k]; !ok && len(a.inUse) >= a.cfg.MaxSeries {
						a.overflow.pending++
						a.overflow.total++
						k = inUseKey{group: overflowGroupKey}
						total += a.inUse[k]
					}
					// The latest heap profile of a process replaces its earlier ones.
					a.inUse[k] = total
				}
			}
		}
	}
}

// addFunction adds v to a function's time this interval; past the bound on
// entries, new functions are counted as "other".
func (a *aggregator) addFunction(k fnKey, v float64, maxEntries int) {
	if _, ok := a.fn[k]; !ok && len(a.fn) >= maxEntries {
		if k.inclusive {
			return // inclusive time has no "other"
		}
		k.function = otherFunction
	}
	a.fn[k] += v
}

// flush ranks this interval's functions, drops expired series and returns
// the metrics to send.
func (a *aggregator) flush(now time.Time) pmetric.Metrics {
	// In-use heap: the sum of each process's latest value per group.
	inUse := map[string]float64{}
	for k, v := range a.inUse {
		inUse[k.group] += v
	}
	for gk, v := range inUse {
		a.add(metricHeapUsed, a.groups[gk], "", v, now)
	}
	clear(a.inUse)
	a.flushFunctions(now)

	// Forget series not seen for series_expiry, and groups without series.
	live := map[string]bool{overflowGroupKey: true}
	for k, s := range a.series {
		if !s.updated && now.Sub(s.lastSeen) > a.cfg.SeriesExpiry {
			delete(a.series, k)
			continue
		}
		live[k.group] = true
	}
	for k := range a.groups {
		if !live[k] {
			delete(a.groups, k)
		}
	}

	md := a.build(now)
	for _, s := range a.series {
		s.pending, s.updated = 0, false
	}
	a.overflow.pending = 0
	a.lastFlush = now
	return md
}

// flushFunctions turns the interval's function times into series: per
// service, the top_functions functions by time, and "other" for the rest of
// the self time.
func (a *aggregator) flushFunctions(now time.Time) {
	if len(a.fn) == 0 {
		return
	}
	type entry struct {
		function string
		v        float64
	}
	type svcKey struct {
		inclusive bool
		offCPU    bool
		service   string
	}
	by := map[svcKey][]entry{}
	for k, v := range a.fn {
		sk := svcKey{k.inclusive, k.offCPU, k.service}
		by[sk] = append(by[sk], entry{k.function, v})
	}
	clear(a.fn)
	keys := make([]svcKey, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	// A stable order, so that which series overflow does not depend on map order.
	slices.SortFunc(keys, func(x, y svcKey) int {
		if c := strings.Compare(x.service, y.service); c != 0 {
			return c
		}
		if c := cmp.Compare(rank(x.inclusive, x.offCPU), rank(y.inclusive, y.offCPU)); c != 0 {
			return c
		}
		return 0
	})
	for _, sk := range keys {
		entries := by[sk]
		g := a.groups[sk.service]
		m := metricFunctionSelf
		if sk.inclusive {
			m = metricFunctionInclusive
		} else if sk.offCPU {
			m = metricFunctionOffCPU
		}
		var other float64
		// "other" collected past the entry bound is part of the rest.
		entries = slices.DeleteFunc(entries, func(e entry) bool {
			if e.function == otherFunction && !sk.inclusive {
				other += e.v
				return true
			}
			return false
		})
		slices.SortFunc(entries, func(x, y entry) int {
			if c := cmp.Compare(y.v, x.v); c != 0 {
				return c
			}
			return strings.Compare(x.function, y.function)
		})
		for i, e := range entries {
			if i < a.cfg.TopFunctions {
				a.add(m, g, e.function, e.v, now)
			} else {
				other += e.v
			}
		}
		if other > 0 && !sk.inclusive {
			a.add(m, g, otherFunction, other, now)
		}
	}
}

// build writes the series out: one resource per group, sums per the
// configured temporality, gauges only when they got a value.
func (a *aggregator) build(now time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	delta := a.cfg.Temporality == TemporalityDelta
	ts := pcommon.NewTimestampFromTime(now)
	intervalStart := pcommon.NewTimestampFromTime(a.lastFlush)

	type out struct {
		sm      pmetric.ScopeMetrics
		metrics [numMetrics]pmetric.Metric
		has     [numMetrics]bool
	}
	byGroup := map[string]*out{}
	resourceOf := func(g *group) *out {
		if o, ok := byGroup[g.key]; ok {
			return o
		}
		rm := md.ResourceMetrics().AppendEmpty()
		g.attrs.CopyTo(rm.Resource().Attributes())
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(scopeName)
		o := &out{sm: sm}
		byGroup[g.key] = o
		return o
	}
	// Groups in a stable order: sorted keys.
	keys := make([]seriesKey, 0, len(a.series))
	for k := range a.series {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y seriesKey) int {
		if c := strings.Compare(x.group, y.group); c != 0 {
			return c
		}
		if c := cmp.Compare(x.metric, y.metric); c != 0 {
			return c
		}
		return strings.Compare(x.function, y.function)
	})
	for _, k := range keys {
		s := a.series[k]
		info := metricInfo[k.metric]
		if (info.kind == gaugeBytes || delta) && !s.updated {
			continue
		}
		o := resourceOf(s.group)
		if !o.has[k.metric] {
			m := o.sm.Metrics().AppendEmpty()
			m.SetName(info.name)
			m.SetDescription(info.description)
			m.SetUnit(info.unit)
			if info.kind == gaugeBytes {
				m.SetEmptyGauge()
			} else {
				sum := m.SetEmptySum()
				sum.SetIsMonotonic(true)
				sum.SetAggregationTemporality(temporality(delta))
			}
			o.metrics[k.metric], o.has[k.metric] = m, true
		}
		m := o.metrics[k.metric]
		var dp pmetric.NumberDataPoint
		if info.kind == gaugeBytes {
			dp = m.Gauge().DataPoints().AppendEmpty()
			dp.SetIntValue(int64(s.total))
		} else {
			dp = m.Sum().DataPoints().AppendEmpty()
			v := s.total
			dp.SetStartTimestamp(s.start)
			if delta {
				v = s.pending
				dp.SetStartTimestamp(intervalStart)
			}
			if info.kind == sumBytes {
				dp.SetIntValue(int64(v))
			} else {
				dp.SetDoubleValue(v)
			}
		}
		dp.SetTimestamp(ts)
		if s.function != "" {
			dp.Attributes().PutStr(functionAttr, s.function)
		}
	}
	if a.overflow.total > 0 && (!delta || a.overflow.pending > 0) {
		o := resourceOf(a.groups[overflowGroupKey])
		m := o.sm.Metrics().AppendEmpty()
		m.SetName(overflowMetric)
		m.SetDescription("Values of new series folded into the overflow series because max_series series were tracked.")
		m.SetUnit("{value}")
		sum := m.SetEmptySum()
		sum.SetIsMonotonic(true)
		sum.SetAggregationTemporality(temporality(delta))
		dp := sum.DataPoints().AppendEmpty()
		dp.SetTimestamp(ts)
		if delta {
			dp.SetStartTimestamp(intervalStart)
			dp.SetIntValue(a.overflow.pending)
		} else {
			dp.SetStartTimestamp(a.overflow.start)
			dp.SetIntValue(a.overflow.total)
		}
	}
	return md
}

// rank orders a service's function metrics: CPU self, CPU inclusive,
// off-CPU.
func rank(inclusive, offCPU bool) int {
	switch {
	case offCPU:
		return 2
	case inclusive:
		return 1
	}
	return 0
}

func temporality(delta bool) pmetric.AggregationTemporality {
	if delta {
		return pmetric.AggregationTemporalityDelta
	}
	return pmetric.AggregationTemporalityCumulative
}
