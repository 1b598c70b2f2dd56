// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter // import "github.com/nexovue/otelcol-nexovue/exporter/profileviewexporter"

import (
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// Labels that carry a sample's link to a span in the pprof file, as
// otel-profiling-go names them.
const (
	traceIDLabel = "trace_id"
	spanIDLabel  = "span_id"
)

// build returns the profile of one service and profile type over the
// selection and the samples (events) it rests on, or nil when the window has
// none. An on-CPU samples profile gets a second value, cpu/nanoseconds
// (samples times period), as Go's CPU profiles have.
func (st *store) build(service, ptype string, sel selection) (*profile.Profile, int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	b := newBuilder()
	var meta *typeMeta
	var minT, maxT, events int64
	for _, sl := range st.slots {
		if !st.inRange(sel, sl) {
			continue
		}
		for k, se := range sl.series {
			if k.service != service || k.ptype != ptype || !sel.matches(k) {
				continue
			}
			if meta == nil {
				m := se.meta
				meta = &m
			}
			if minT == 0 || sl.start < minT {
				minT = sl.start
			}
			if end := sl.start + st.width; end > maxT {
				maxT = end
			}
			events += se.events
			for sk, v := range se.samples {
				b.add(sl, sk, v)
			}
		}
	}
	if meta == nil {
		return nil, 0
	}
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: meta.sampleType, Unit: meta.sampleUnit}},
		TimeNanos:     minT,
		DurationNanos: maxT - minT,
		Function:      b.functions,
		Location:      b.locations,
		Mapping:       b.mappings,
	}
	if meta.periodType != "" {
		p.PeriodType = &profile.ValueType{Type: meta.periodType, Unit: meta.periodUnit}
		p.Period = meta.period
	}
	cpu := meta.cpuSamples()
	if cpu {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: "cpu", Unit: "nanoseconds"})
	}
	keys := make([]string, 0, len(b.samples))
	for k := range b.samples {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a stable file for a stable window
	for _, k := range keys {
		s := b.samples[k]
		if cpu {
			s.Value = append(s.Value, s.Value[0]*meta.period)
		}
		p.Sample = append(p.Sample, s)
	}
	return p, events
}

type builder struct {
	functions []*profile.Function
	locations []*profile.Location
	mappings  []*profile.Mapping
	fnIdx     map[[4]string]*profile.Function
	locIdx    map[*slot]map[int32]*profile.Location
	mapIdx    map[string]*profile.Mapping
	locKey    map[string]*profile.Location
	samples   map[string]*profile.Sample
}

func newBuilder() *builder {
	return &builder{fnIdx: map[[4]string]*profile.Function{}, locIdx: map[*slot]map[int32]*profile.Location{},
		mapIdx: map[string]*profile.Mapping{}, locKey: map[string]*profile.Location{}, samples: map[string]*profile.Sample{}}
}

func (b *builder) add(sl *slot, sk sampleKey, v int64) {
	stack := sl.stacks[sk.stack]
	locs := make([]*profile.Location, len(stack))
	var key strings.Builder
	for i, li := range stack {
		locs[i] = b.location(sl, li)
		key.WriteString(itoa(locs[i].ID))
		key.WriteByte(',')
	}
	key.WriteString("|" + sk.trace + "|" + sk.span)
	k := key.String()
	if s := b.samples[k]; s != nil {
		s.Value[0] += v
		return
	}
	s := &profile.Sample{Location: locs, Value: []int64{v}}
	if sk.trace != "" || sk.span != "" {
		s.Label = map[string][]string{}
		if sk.trace != "" {
			s.Label[traceIDLabel] = []string{sk.trace}
		}
		if sk.span != "" {
			s.Label[spanIDLabel] = []string{sk.span}
		}
	}
	b.samples[k] = s
}

func itoa(v uint64) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(buf[i:])
		}
	}
}

func (b *builder) location(sl *slot, li int32) *profile.Location {
	m := b.locIdx[sl]
	if m == nil {
		m = map[int32]*profile.Location{}
		b.locIdx[sl] = m
	}
	if l := m[li]; l != nil {
		return l
	}
	src := sl.locs[li]
	l := &profile.Location{Address: src.address}
	if file := sl.strs[src.mapping]; file != "" || src.address != 0 {
		mp := b.mapIdx[file]
		if mp == nil {
			mp = &profile.Mapping{ID: uint64(len(b.mappings) + 1), File: file, HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true}
			b.mappings = append(b.mappings, mp)
			b.mapIdx[file] = mp
		}
		l.Mapping = mp
	}
	for _, ln := range src.lines {
		name, sys, file := sl.strs[ln.function], sl.strs[ln.systemName], sl.strs[ln.file]
		if name == "" {
			name = sys
		}
		fk := [4]string{name, sys, file, itoa(uint64(ln.startLine))}
		f := b.fnIdx[fk]
		if f == nil {
			f = &profile.Function{ID: uint64(len(b.functions) + 1), Name: name, SystemName: sys, Filename: file, StartLine: ln.startLine}
			b.functions = append(b.functions, f)
			b.fnIdx[fk] = f
		}
		l.Line = append(l.Line, profile.Line{Function: f, Line: ln.line})
	}
	// Identical locations of different slots are one location of the file.
	var key strings.Builder
	if l.Mapping != nil {
		key.WriteString(itoa(l.Mapping.ID))
	}
	key.WriteString(":" + itoa(l.Address))
	for _, ln := range l.Line {
		key.WriteString("|" + itoa(ln.Function.ID) + "," + itoa(uint64(ln.Line)))
	}
	if existing := b.locKey[key.String()]; existing != nil {
		m[li] = existing
		return existing
	}
	l.ID = uint64(len(b.locations) + 1)
	b.locations = append(b.locations, l)
	b.locKey[key.String()] = l
	m[li] = l
	return l
}
