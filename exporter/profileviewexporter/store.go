// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter // import "github.com/nexovue/otelcol-nexovue/exporter/profileviewexporter"

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The window is kept as time slots (window/30 each). A slot holds its own
// interned strings, locations and stacks and, per series (service, profile
// type, namespace, host), the sum of the values of each distinct (stack,
// trace, span). A slot goes as a whole: when the window moves past it, or
// when the estimated memory of all slots is over the cap (oldest first).
// Nothing outlives its slot, so memory stays bounded whatever the stacks.

// seriesKey names one aggregate: never mixes profile types.
type seriesKey struct {
	service, ptype, namespace, host string
	version                         string // service.version, "" when the profiles carry none
}

// typeMeta is what a profile type's values are.
type typeMeta struct {
	sampleType, sampleUnit string
	periodType, periodUnit string
	period                 int64
}

// key is the profile type's name in URLs: <type>_<unit>.
func (m typeMeta) key() string { return m.sampleType + "_" + m.sampleUnit }

// cpuSamples: the eBPF profiler's on-CPU profile (and a pprof CPU profile's
// count): samples of period nanoseconds of CPU each.
func (m typeMeta) cpuSamples() bool {
	return m.sampleType == "samples" && m.sampleUnit == "count" &&
		m.periodType == "cpu" && m.periodUnit == "nanoseconds" && m.period > 0
}

// cpuNanos is the CPU time a value of this type stands for, 0 when the type
// is not CPU time.
func (m typeMeta) cpuNanos(v int64) int64 {
	switch {
	case m.cpuSamples():
		return v * m.period
	case m.sampleType == "cpu" && m.sampleUnit == "nanoseconds":
		return v
	}
	return 0
}

// typeTitle is how the index names a profile type.
func typeTitle(m typeMeta) string {
	switch {
	case m.cpuSamples(), m.sampleType == "cpu":
		return "on-CPU"
	case m.sampleType == "off_cpu":
		return "off-CPU time"
	case m.sampleType == "inuse_space":
		return "heap in use (bytes)"
	case m.sampleType == "alloc_space":
		return "heap allocated (bytes)"
	}
	return m.sampleType + " (" + m.sampleUnit + ")"
}

type line struct {
	function, systemName, file int32 // into slot.strs
	startLine, line            int64
}

type location struct {
	mapping int32 // file name, into slot.strs
	address uint64
	lines   []line
}

type sampleKey struct {
	stack       int32
	trace, span string // hex, "" without a link
}

type series struct {
	meta    typeMeta
	samples map[sampleKey]int64
	values  int64 // sum of the values
	events  int64 // samples (timestamps) received
}

type slot struct {
	start   int64 // unix ns, a multiple of the slot width
	strIdx  map[string]int32
	strs    []string
	locIdx  map[string]int32
	locs    []location
	stkIdx  map[string]int32
	stacks  [][]int32
	series  map[seriesKey]*series
	bytes   int64
	samples int64 // events, for what eviction drops
}

func newSlot(start int64) *slot {
	s := &slot{start: start, strIdx: map[string]int32{}, locIdx: map[string]int32{}, stkIdx: map[string]int32{}, series: map[seriesKey]*series{}}
	s.str("")
	return s
}

// Estimated bytes of each kind of entry, map overhead included (measured by
// BenchmarkFullWindowMemory against the estimate; see the README).
const (
	costString   = 100
	costLocation = 180
	costLine     = 64
	costStack    = 150
	costFrame    = 8
	costSample   = 180
	costSeries   = 400
)

func (s *slot) str(v string) int32 {
	if i, ok := s.strIdx[v]; ok {
		return i
	}
	i := int32(len(s.strs))
	s.strs = append(s.strs, v)
	s.strIdx[v] = i
	s.bytes += costString + 2*int64(len(v))
	return i
}

func (s *slot) location(l location) int32 {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(int64(l.mapping), 36))
	b.WriteByte(':')
	b.WriteString(strconv.FormatUint(l.address, 36))
	for _, ln := range l.lines {
		b.WriteByte('|')
		b.WriteString(strconv.FormatInt(int64(ln.function), 36))
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(int64(ln.systemName), 36))
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(int64(ln.file), 36))
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(ln.line, 36))
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(ln.startLine, 36))
	}
	k := b.String()
	if i, ok := s.locIdx[k]; ok {
		return i
	}
	i := int32(len(s.locs))
	s.locs = append(s.locs, l)
	s.locIdx[k] = i
	s.bytes += costLocation + int64(len(k)) + costLine*int64(len(l.lines))
	return i
}

func (s *slot) stack(locs []int32) int32 {
	var b strings.Builder
	for _, l := range locs {
		b.WriteString(strconv.FormatInt(int64(l), 36))
		b.WriteByte(',')
	}
	k := b.String()
	if i, ok := s.stkIdx[k]; ok {
		return i
	}
	i := int32(len(s.stacks))
	s.stacks = append(s.stacks, append([]int32(nil), locs...))
	s.stkIdx[k] = i
	s.bytes += costStack + int64(len(k)) + costFrame*int64(len(locs))
	return i
}

// store is the window.
type store struct {
	mu       sync.Mutex
	window   int64 // ns
	width    int64 // ns per slot
	maxBytes int64
	now      func() time.Time
	slots    []*slot // oldest first
	bytes    int64
	// capDroppedBefore is the end of the newest slot dropped to stay under
	// the memory cap (unix ns): a comparison whose side starts before it
	// would compare a partial range, and is refused.
	capDroppedBefore int64
}

func newStore(window time.Duration, maxBytes int64, now func() time.Time) *store {
	return &store{window: int64(window), width: int64(window) / slotsPerWindow, maxBytes: maxBytes, now: now}
}

// dropCounts are the samples a call dropped, by reason.
type dropCounts struct {
	memoryCap, outsideWindow int64
}

// expire drops the slots the window has moved past; s.mu is held.
func (st *store) expire(now int64, d *dropCounts) {
	oldest := now - st.window
	for len(st.slots) > 0 && st.slots[0].start+st.width <= oldest {
		st.drop(d)
	}
}

func (st *store) drop(d *dropCounts) {
	old := st.slots[0]
	st.slots[0] = nil
	st.slots = st.slots[1:]
	st.bytes -= old.bytes
	if d != nil {
		d.memoryCap += old.samples
	}
}

// slotFor returns the slot of time t (unix ns), creating it; nil when t is
// before the window. s.mu is held.
func (st *store) slotFor(t, now int64) *slot {
	if t > now {
		t = now // a clock ahead of ours: counted as now
	}
	if t < now-st.window {
		return nil
	}
	start := t - t%st.width
	i := sort.Search(len(st.slots), func(i int) bool { return st.slots[i].start >= start })
	if i < len(st.slots) && st.slots[i].start == start {
		return st.slots[i]
	}
	s := newSlot(start)
	st.slots = append(st.slots, nil)
	copy(st.slots[i+1:], st.slots[i:])
	st.slots[i] = s
	return s
}

// add records events samples of value v at time t; s.mu is held.
func (st *store) add(sl *slot, key seriesKey, meta typeMeta, sk sampleKey, v, events int64) {
	se := sl.series[key]
	if se == nil {
		se = &series{meta: meta, samples: map[sampleKey]int64{}}
		sl.series[key] = se
		sl.bytes += costSeries
		st.bytes += costSeries
	}
	if _, ok := se.samples[sk]; !ok {
		sl.bytes += costSample
		st.bytes += costSample
	}
	se.samples[sk] += v
	se.values += v
	se.events += events
	sl.samples += events
}

// selection is what a page shows: a time range and resource filters.
type selection struct {
	from, to        int64 // unix ns; 0: open
	namespace, host string
	version         string // service.version
	// midpoint: a slot counts when its middle is in [from, to), so the two
	// adjacent sides of a comparison never share a slot.
	midpoint bool
}

// inRange: a slot that overlaps the range counts in full (slots are
// window/30 wide); in a comparison, a slot whose middle is in the range.
func (st *store) inRange(sel selection, sl *slot) bool {
	if sel.midpoint {
		mid := sl.start + st.width/2
		return (sel.from == 0 || mid >= sel.from) && (sel.to == 0 || mid < sel.to)
	}
	if sel.from != 0 && sl.start+st.width <= sel.from {
		return false
	}
	return sel.to == 0 || sl.start <= sel.to
}

func (sel selection) matches(k seriesKey) bool {
	if sel.namespace != "" && k.namespace != sel.namespace {
		return false
	}
	if sel.version != "" && k.version != sel.version {
		return false
	}
	return sel.host == "" || k.host == sel.host
}
