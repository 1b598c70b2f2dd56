// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter // import "github.com/nexovue/otelcol-nexovue/exporter/profileviewexporter"

import (
	"encoding/hex"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

const unknownService = "unknown_service"

// ingestResult is what one batch added and dropped.
type ingestResult struct {
	kept                     int64
	malformed, tooLarge      int64
	memoryCap, outsideWindow int64
	reasons                  []string // one line per dropped profile (malformed or too large)
}

// ingest adds a batch to the window. A profile that refers outside the
// dictionary's tables, or whose estimated size is over maxProfileBytes, is
// dropped whole with its reason; the rest of the batch is kept.
func (st *store) ingest(pd pprofile.Profiles, maxProfileBytes int64) ingestResult {
	var res ingestResult
	dict := pd.Dictionary()
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.now().UnixNano()
	var d dropCounts
	st.expire(now, &d)
	d.memoryCap = 0 // the window moving on is no drop
	rps := pd.ResourceProfiles()
	for i := range rps.Len() {
		rp := rps.At(i)
		attrs := rp.Resource().Attributes()
		service := attrString(attrs, "service.name")
		if service == "" {
			service = unknownService
		}
		ns, host := attrString(attrs, "k8s.namespace.name"), attrString(attrs, "host.name")
		version := attrString(attrs, "service.version")
		sps := rp.ScopeProfiles()
		for j := range sps.Len() {
			ps := sps.At(j).Profiles()
			for k := range ps.Len() {
				p := ps.At(k)
				n := countEvents(p)
				if err := validate(dict, p); err != nil {
					res.malformed += n
					res.reasons = append(res.reasons, fmt.Sprintf("malformed profile of service %q: %v", service, err))
					continue
				}
				if size := estimateBytes(dict, p); size > maxProfileBytes {
					res.tooLarge += n
					res.reasons = append(res.reasons, fmt.Sprintf("profile of service %q too large: about %d bytes, max_profile_bytes is %d", service, size, maxProfileBytes))
					continue
				}
				st.addProfile(dict, p, seriesKey{service: service, namespace: ns, host: host, version: version}, now, &res, &d)
			}
		}
	}
	res.memoryCap += d.memoryCap
	res.outsideWindow += d.outsideWindow
	return res
}

func attrString(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok {
		return v.AsString()
	}
	return ""
}

func str(strs pcommon.StringSlice, i int32) string {
	if i <= 0 || int(i) >= strs.Len() {
		return ""
	}
	return strs.At(int(i))
}

func countEvents(p pprofile.Profile) int64 {
	var n int64
	for i := range p.Samples().Len() {
		n += events(p.Samples().At(i))
	}
	return n
}

func events(s pprofile.Sample) int64 {
	if n := s.TimestampsUnixNano().Len(); n > 0 {
		return int64(n)
	}
	return 1
}

// validate checks every index the profile uses against the dictionary.
func validate(dict pprofile.ProfilesDictionary, p pprofile.Profile) error {
	strs := dict.StringTable().Len()
	stacks, locs, fns, maps, links := dict.StackTable(), dict.LocationTable(), dict.FunctionTable(), dict.MappingTable(), dict.LinkTable()
	inStr := func(i int32) bool { return i >= 0 && int(i) < strs }
	if !inStr(p.SampleType().TypeStrindex()) || !inStr(p.SampleType().UnitStrindex()) ||
		!inStr(p.PeriodType().TypeStrindex()) || !inStr(p.PeriodType().UnitStrindex()) {
		return fmt.Errorf("sample or period type outside the string table (%d strings)", strs)
	}
	seen := map[int32]bool{}
	for i := range p.Samples().Len() {
		s := p.Samples().At(i)
		if li := s.LinkIndex(); li < 0 || int(li) >= links.Len() {
			return fmt.Errorf("sample %d: link_index %d outside the link table (%d)", i, li, links.Len())
		}
		if v, t := s.Values().Len(), s.TimestampsUnixNano().Len(); v > 1 && t > 0 && v != t {
			return fmt.Errorf("sample %d: %d values for %d timestamps", i, v, t)
		}
		si := s.StackIndex()
		if si < 0 || int(si) >= stacks.Len() {
			return fmt.Errorf("sample %d: stack_index %d outside the stack table (%d)", i, si, stacks.Len())
		}
		if seen[si] {
			continue
		}
		seen[si] = true
		li := stacks.At(int(si)).LocationIndices()
		for j := range li.Len() {
			l := li.At(j)
			if l < 0 || int(l) >= locs.Len() {
				return fmt.Errorf("stack %d: location_index %d outside the location table (%d)", si, l, locs.Len())
			}
			loc := locs.At(int(l))
			if mi := loc.MappingIndex(); mi < 0 || int(mi) >= maps.Len() || !inStr(maps.At(int(mi)).FilenameStrindex()) {
				return fmt.Errorf("location %d: mapping_index %d outside the mapping table (%d) or its file name outside the string table", l, mi, maps.Len())
			}
			for k := range loc.Lines().Len() {
				fi := loc.Lines().At(k).FunctionIndex()
				if fi < 0 || int(fi) >= fns.Len() {
					return fmt.Errorf("location %d: function_index %d outside the function table (%d)", l, fi, fns.Len())
				}
				f := fns.At(int(fi))
				if !inStr(f.NameStrindex()) || !inStr(f.SystemNameStrindex()) || !inStr(f.FilenameStrindex()) {
					return fmt.Errorf("function %d: a name outside the string table (%d)", fi, strs)
				}
			}
		}
	}
	return nil
}

// estimateBytes is about what the profile's samples and the frames of their
// stacks take, each stack counted once.
func estimateBytes(dict pprofile.ProfilesDictionary, p pprofile.Profile) int64 {
	var n int64
	stacks := dict.StackTable()
	seen := map[int32]bool{}
	for i := range p.Samples().Len() {
		s := p.Samples().At(i)
		n += 32 + 8*int64(s.Values().Len()+s.TimestampsUnixNano().Len())
		if si := s.StackIndex(); !seen[si] {
			seen[si] = true
			n += 16 + 64*int64(stacks.At(int(si)).LocationIndices().Len())
		}
	}
	return n
}

func (st *store) addProfile(dict pprofile.ProfilesDictionary, p pprofile.Profile, key seriesKey, now int64, res *ingestResult, d *dropCounts) {
	strs := dict.StringTable()
	meta := typeMeta{
		sampleType: str(strs, p.SampleType().TypeStrindex()), sampleUnit: str(strs, p.SampleType().UnitStrindex()),
		periodType: str(strs, p.PeriodType().TypeStrindex()), periodUnit: str(strs, p.PeriodType().UnitStrindex()),
		period: p.Period(),
	}
	if meta.sampleType == "" {
		meta.sampleType = "samples"
	}
	if meta.sampleUnit == "" {
		meta.sampleUnit = "count"
	}
	key.ptype = meta.key()
	profTime := int64(p.Time())
	if profTime == 0 {
		profTime = now
	}
	// The stacks of this profile, translated once per slot.
	type slotStack struct {
		sl *slot
		si int32
	}
	translated := map[slotStack]int32{}
	for i := range p.Samples().Len() {
		s := p.Samples().At(i)
		sk := sampleKey{}
		if li := s.LinkIndex(); li > 0 {
			l := dict.LinkTable().At(int(li))
			if tid := l.TraceID(); !tid.IsEmpty() {
				sk.trace = hex.EncodeToString(tid[:])
			}
			if sid := l.SpanID(); !sid.IsEmpty() {
				sk.span = hex.EncodeToString(sid[:])
			}
		}
		ts, vals := s.TimestampsUnixNano(), s.Values()
		put := func(t, v, n int64) {
			sl := st.slotFor(t, now)
			if sl == nil {
				res.outsideWindow += n
				return
			}
			tk := slotStack{sl, s.StackIndex()}
			si, ok := translated[tk]
			if !ok {
				before := sl.bytes
				si = sl.stack(st.locations(sl, dict, s.StackIndex()))
				st.bytes += sl.bytes - before
				translated[tk] = si
			}
			sk.stack = si
			st.add(sl, key, meta, sk, v, n)
			res.kept += n
		}
		switch {
		case ts.Len() > 0 && vals.Len() == ts.Len():
			for j := range ts.Len() {
				put(int64(ts.At(j)), vals.At(j), 1)
			}
		case ts.Len() > 0 && vals.Len() <= 1:
			if vals.Len() == 1 { // one value for all its timestamps
				put(int64(ts.At(0)), vals.At(0), int64(ts.Len()))
				continue
			}
			for j := range ts.Len() {
				put(int64(ts.At(j)), 1, 1)
			}
		default:
			var v int64
			for j := range vals.Len() {
				v += vals.At(j)
			}
			put(profTime, v, 1)
		}
	}
	st.enforceCap(res)
}

// enforceCap drops the oldest slots while the window is over its memory cap;
// s.mu is held. The newest slot is kept even alone over the cap: the next
// batch's slot drops it.
func (st *store) enforceCap(res *ingestResult) {
	for st.bytes > st.maxBytes && len(st.slots) > 1 {
		st.capDroppedBefore = max(st.capDroppedBefore, st.slots[0].start+st.width)
		var d dropCounts
		st.drop(&d)
		res.memoryCap += d.memoryCap
	}
}

// locations interns the stack's locations into sl, leaf first.
func (st *store) locations(sl *slot, dict pprofile.ProfilesDictionary, stackIdx int32) []int32 {
	strs := dict.StringTable()
	li := dict.StackTable().At(int(stackIdx)).LocationIndices()
	out := make([]int32, 0, li.Len())
	for j := range li.Len() {
		loc := dict.LocationTable().At(int(li.At(j)))
		l := location{address: loc.Address()}
		if mi := loc.MappingIndex(); mi > 0 {
			l.mapping = sl.str(str(strs, dict.MappingTable().At(int(mi)).FilenameStrindex()))
		}
		for k := range loc.Lines().Len() {
			ln := loc.Lines().At(k)
			f := dict.FunctionTable().At(int(ln.FunctionIndex()))
			l.lines = append(l.lines, line{
				function:   sl.str(str(strs, f.NameStrindex())),
				systemName: sl.str(str(strs, f.SystemNameStrindex())),
				file:       sl.str(str(strs, f.FilenameStrindex())),
				startLine:  f.StartLine(),
				line:       ln.Line(),
			})
		}
		out = append(out, sl.location(l))
	}
	return out
}
