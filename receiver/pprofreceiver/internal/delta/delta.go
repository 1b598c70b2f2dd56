// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package delta turns cumulative pprof sample types into differences between
// consecutive scrapes of one target.
//
// Go's heap (alloc_*), allocs, block and mutex profiles count from process
// start. A Tracker remembers, per cumulative sample type, the value of every
// sample keyed by its full stack (each location's address and the function
// name, file and line of each of its lines) and its labels. The next scrape is
// then reported as its difference from the remembered one: a time window shows
// what happened in it. The first scrape of a type only sets the baseline. A
// stack missing from a scrape adds nothing (a zero delta) and keeps its last
// value in the baseline. Only a counter that went down (the process
// restarted) resets the baseline, and the new values are reported as they
// are: they all accrued since the restart.
package delta // import "github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/delta"

import (
	"encoding/binary"
	"maps"
	"slices"

	"github.com/google/pprof/profile"
)

// cumulativeTypes are the sample types the Go runtime reports as counts since
// process start: alloc_objects/alloc_space (heap and allocs profiles) and
// contentions/delay (block and mutex profiles).
var cumulativeTypes = map[string]bool{
	"alloc_objects": true,
	"alloc_space":   true,
	"contentions":   true,
	"delay":         true,
}

// IsCumulative reports whether sample type st counts since process start.
func IsCumulative(st *profile.ValueType) bool {
	return st != nil && cumulativeTypes[st.Type]
}

type typeKey struct{ typ, unit string }

type baseline struct {
	timeNanos int64
	values    map[string]int64
}

// Tracker holds the baselines of one scrape target. It is not safe for
// concurrent use; a receiver scrapes one target from one goroutine.
type Tracker struct {
	base map[typeKey]*baseline
	buf  []byte
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{base: map[typeKey]*baseline{}}
}

// Result is the outcome of Next: profiles to send and the state to keep once
// they have been delivered.
type Result struct {
	// Snapshot holds the sample types sent as they are (nil if none).
	Snapshot *profile.Profile
	// Delta holds the cumulative sample types as differences from the
	// previous scrape (nil on the first scrape or if there are none).
	Delta *profile.Profile
	// Reset lists the cumulative sample types whose counters went down, so
	// that Delta carries them as they are.
	Reset []string

	pending map[typeKey]*baseline
}

// Next splits p into its snapshot and cumulative sample types and computes
// the latter's deltas against the baselines. The baselines only move once
// Commit is called with the result, so a scrape that could not be delivered
// is folded into the next one instead of being lost.
func (t *Tracker) Next(p *profile.Profile) Result {
	var snapIdx, cumIdx []int
	for i, st := range p.SampleType {
		if IsCumulative(st) {
			cumIdx = append(cumIdx, i)
		} else {
			snapIdx = append(snapIdx, i)
		}
	}
	var res Result
	if len(snapIdx) > 0 {
		res.Snapshot = project(p, snapIdx, nil)
	}
	if len(cumIdx) == 0 {
		return res
	}

	keys := make([]string, len(p.Sample))
	for i, s := range p.Sample {
		keys[i] = t.key(s)
	}
	res.pending = make(map[typeKey]*baseline, len(cumIdx))
	var outIdx []int
	var outVals [][]int64 // per emitted type, per sample
	var prevTime int64
	for _, ti := range cumIdx {
		st := p.SampleType[ti]
		tk := typeKey{st.Type, st.Unit}
		cur := make(map[string]int64, len(p.Sample))
		for i, s := range p.Sample {
			cur[keys[i]] += s.Value[ti]
		}
		res.pending[tk] = &baseline{timeNanos: p.TimeNanos, values: cur}
		prev, ok := t.base[tk]
		if !ok {
			continue // first scrape: baseline only
		}
		// Only a counter that went down means a restart. A stack missing
		// from this scrape is a zero delta: its last value stays in the
		// baseline, so that it is measured against it if it comes back.
		reset := false
		for k, v := range cur {
			if pv, ok := prev.values[k]; ok && v < pv {
				reset = true
				break
			}
		}
		if !reset {
			carryMissing(cur, prev.values)
		}
		vals := make([]int64, len(p.Sample))
		if reset {
			res.Reset = append(res.Reset, st.Type)
			for i, s := range p.Sample {
				vals[i] = s.Value[ti]
			}
		} else {
			// Samples sharing a key get the whole difference on the first
			// of them, so that the totals stay exact.
			seen := make(map[string]bool, len(p.Sample))
			for i := range p.Sample {
				if seen[keys[i]] {
					continue
				}
				seen[keys[i]] = true
				vals[i] = cur[keys[i]] - prev.values[keys[i]]
			}
		}
		if prev.timeNanos > prevTime {
			prevTime = prev.timeNanos
		}
		outIdx = append(outIdx, ti)
		outVals = append(outVals, vals)
	}
	if len(outIdx) > 0 {
		d := project(p, outIdx, outVals)
		if prevTime > 0 && p.TimeNanos > prevTime {
			d.TimeNanos = prevTime
			d.DurationNanos = p.TimeNanos - prevTime
		}
		res.Delta = d
	}
	return res
}

// carryMissing copies into cur the values of the stacks of prev that cur
// lacks. To keep the baseline bounded, nothing is carried once the missing
// stacks outnumber the present ones: the target then most likely restarted
// with new stacks (other addresses), and the old ones will not come back.
func carryMissing(cur, prev map[string]int64) {
	missing := 0
	for k := range prev {
		if _, ok := cur[k]; !ok {
			missing++
		}
	}
	if missing == 0 || missing > len(cur) {
		return
	}
	for k, v := range prev {
		if _, ok := cur[k]; !ok {
			cur[k] = v
		}
	}
}

// Commit makes the scrape that produced r the new baseline.
func (t *Tracker) Commit(r Result) {
	for k, b := range r.pending {
		t.base[k] = b
	}
}

// key encodes a sample's stack and labels.
func (t *Tracker) key(s *profile.Sample) string {
	b := t.buf[:0]
	b = binary.AppendUvarint(b, uint64(len(s.Location)))
	for _, l := range s.Location {
		b = binary.AppendUvarint(b, l.Address)
		b = binary.AppendUvarint(b, uint64(len(l.Line)))
		for _, ln := range l.Line {
			if ln.Function != nil {
				b = appendString(b, ln.Function.Name)
				b = appendString(b, ln.Function.Filename)
			} else {
				b = appendString(b, "")
				b = appendString(b, "")
			}
			b = binary.AppendVarint(b, ln.Line)
		}
	}
	b = appendLabels(b, s.Label, appendString)
	b = append(b, 0xff) // separates string from numeric labels
	b = appendLabels(b, s.NumLabel, binary.AppendVarint)
	t.buf = b
	return string(b)
}

func appendString(b []byte, v string) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// appendLabels encodes labels in key order, each value with enc.
func appendLabels[V any](b []byte, m map[string][]V, enc func([]byte, V) []byte) []byte {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = appendString(b, k)
		b = binary.AppendUvarint(b, uint64(len(m[k])))
		for _, v := range m[k] {
			b = enc(b, v)
		}
	}
	return b
}

// project returns a shallow copy of p holding only the sample types idx, with
// the values vals[j][i] for sample i and type idx[j] if vals is not nil.
// Samples whose projected values are all zero are left out.
func project(p *profile.Profile, idx []int, vals [][]int64) *profile.Profile {
	q := &profile.Profile{
		DefaultSampleType: p.DefaultSampleType,
		Mapping:           p.Mapping,
		Location:          p.Location,
		Function:          p.Function,
		Comments:          p.Comments,
		DocURL:            p.DocURL,
		DropFrames:        p.DropFrames,
		KeepFrames:        p.KeepFrames,
		TimeNanos:         p.TimeNanos,
		DurationNanos:     p.DurationNanos,
		PeriodType:        p.PeriodType,
		Period:            p.Period,
	}
	for _, i := range idx {
		q.SampleType = append(q.SampleType, p.SampleType[i])
	}
	q.Sample = make([]*profile.Sample, 0, len(p.Sample))
	for si, s := range p.Sample {
		v := make([]int64, len(idx))
		nonZero := false
		for j, i := range idx {
			if vals != nil {
				v[j] = vals[j][si]
			} else {
				v[j] = s.Value[i]
			}
			nonZero = nonZero || v[j] != 0
		}
		if !nonZero {
			continue
		}
		q.Sample = append(q.Sample, &profile.Sample{
			Location: s.Location,
			Value:    v,
			Label:    s.Label,
			NumLabel: s.NumLabel,
			NumUnit:  s.NumUnit,
		})
	}
	return q
}
