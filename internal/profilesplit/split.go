// Package profilesplit splits OTLP profiles batches (0.161 data model) into
// parts whose stacks write out to at most a given number of frames, each part
// carrying its own compacted dictionary.
//
// The frames of a request are, summed over every sample, the number of
// locations of the stack the sample's stack_index points to in the
// request-wide dictionary. Counting per sample is the strict reading of
// "write out": it is never less than any other count.
//
// API:
//   - Frames, Samples: what a request writes out.
//   - Split / SplitChecked: parts within a frame limit (copies; the input is
//     untouched). SplitOwned: the same, moving the input's samples and, for
//     the last part using them, its stacks and locations into the parts
//     (used by the frame_limit processor, which owns its input).
//   - Halve / HalveChecked: two parts of about half the frames each (copies).
//   - Merge: parts back into one request (to hand refused parts upstream).
//   - Validate: every index of a request inside its table, every table
//     starting with its zero value; errors name the field and the table.
//   - ResolveSamples / SortedSamples: samples with every reference resolved,
//     to compare requests in tests.
//
// The subpackage profilegen generates realistic eBPF-like batches for tests
// and benchmarks.
//
// Except for SplitOwned and Merge, which consume what they are given, nothing
// here modifies its input: parts are fresh pprofile.Profiles that share no
// memory with the input except immutable strings.
package profilesplit // import "github.com/nexovue/otelcol-nexovue/internal/profilesplit"

import (
	"fmt"
	"math"
	"sync"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Frames returns the frames the request writes out: the sum over all samples
// of the length of the sample's stack. A stack_index outside the stack table
// counts 0 (Validate reports it).
func Frames(pd pprofile.Profiles) int {
	stacks := pd.Dictionary().StackTable()
	n := stacks.Len()
	total := 0
	forEachProfile(pd, func(_ samplePath, p pprofile.Profile) {
		samples := p.Samples()
		for l := 0; l < samples.Len(); l++ {
			if idx := int(samples.At(l).StackIndex()); idx >= 0 && idx < n {
				total += stacks.At(idx).LocationIndices().Len()
			}
		}
	})
	return total
}

// Samples returns the number of samples in pd.
func Samples(pd pprofile.Profiles) int {
	return pd.SampleCount()
}

// Split returns []{pd} itself (same value, no copy) when Frames(pd) <= maxFrames;
// otherwise parts, each within maxFrames, each with its own compacted
// dictionary, samples in order, nothing lost or duplicated. Samples deeper
// than maxFrames are truncated to their maxFrames leaf-most frames (index 0
// of a stack is its top); truncated counts them. A maxFrames below 1 is
// treated as 1.
//
// Split cannot report an error: when pd holds an index outside its dictionary
// (see Validate), it returns []{pd} unchanged and 0. Use SplitChecked to learn
// why.
func Split(pd pprofile.Profiles, maxFrames int) (parts []pprofile.Profiles, truncated int) {
	parts, truncated, err := SplitChecked(pd, maxFrames)
	if err != nil {
		return []pprofile.Profiles{pd}, 0
	}
	return parts, truncated
}

// SplitChecked is Split that reports an index outside the dictionary met while
// splitting, as an error naming the field (for example
// "dictionary.stack_table[7].location_indices[3]: index 9001 outside location_table (500 entries)").
// On error no parts are returned. A batch within maxFrames is returned as
// []{pd} without being checked.
func SplitChecked(pd pprofile.Profiles, maxFrames int) (parts []pprofile.Profiles, truncated int, err error) {
	return split(pd, maxFrames, false)
}

// SplitOwned is SplitChecked for a caller that owns pd and gives it up: the
// samples of pd are moved into the parts rather than copied, which saves an
// allocation or more per sample. After a split into several parts, pd holds
// no samples and must not be used; after an error it is in an unspecified
// state (the error names the field whose index lies outside the dictionary:
// such a request cannot be sent). A batch within maxFrames is returned as
// []{pd}, untouched. A read-only pd is copied as by SplitChecked.
func SplitOwned(pd pprofile.Profiles, maxFrames int) (parts []pprofile.Profiles, truncated int, err error) {
	return split(pd, maxFrames, !pd.IsReadOnly())
}

func split(pd pprofile.Profiles, maxFrames int, owned bool) (parts []pprofile.Profiles, truncated int, err error) {
	if maxFrames < 1 {
		maxFrames = 1
	}
	if Frames(pd) <= maxFrames {
		return []pprofile.Profiles{pd}, 0, nil
	}
	s := splitterPool.Get().(*splitter)
	defer splitterPool.Put(s)
	s.owned = owned
	parts, err = s.run(pd, cutByFrames, maxFrames, 0)
	if err != nil {
		return nil, 0, err
	}
	return parts, s.truncated, nil
}

// Halve splits pd into two parts with about half the frames each (by sample
// boundaries), each with its own compacted dictionary. ok is false when pd
// holds fewer than two samples, or holds an index outside its dictionary
// (HalveChecked tells which).
func Halve(pd pprofile.Profiles) (first, second pprofile.Profiles, ok bool) {
	first, second, ok, err := HalveChecked(pd)
	if err != nil {
		return pprofile.Profiles{}, pprofile.Profiles{}, false
	}
	return first, second, ok
}

// HalveChecked is Halve that reports an index outside the dictionary as an
// error naming the field.
func HalveChecked(pd pprofile.Profiles) (first, second pprofile.Profiles, ok bool, err error) {
	n := Samples(pd)
	if n < 2 {
		return pprofile.Profiles{}, pprofile.Profiles{}, false, nil
	}
	s := splitterPool.Get().(*splitter)
	defer splitterPool.Put(s)
	// The first part ends after the sample whose prefix first reaches half of
	// the frames, keeping at least one sample on each side.
	cutAt, err := s.halfPoint(pd, n)
	if err != nil {
		return pprofile.Profiles{}, pprofile.Profiles{}, false, err
	}
	s.owned = false
	parts, err := s.run(pd, cutAtOrdinal, math.MaxInt, cutAt)
	if err != nil {
		return pprofile.Profiles{}, pprofile.Profiles{}, false, err
	}
	if len(parts) != 2 {
		return pprofile.Profiles{}, pprofile.Profiles{}, false, fmt.Errorf("profilesplit: internal error: halving gave %d parts", len(parts))
	}
	return parts[0], parts[1], true, nil
}

var splitterPool = sync.Pool{New: func() any { return new(splitter) }}

// cutMode says where a new part starts.
type cutMode int

const (
	// cutByFrames starts a new part before a sample that would carry the
	// current part beyond maxFrames.
	cutByFrames cutMode = iota
	// cutAtOrdinal starts the second part at sample ordinal cutAt.
	cutAtOrdinal
)

// cutter decides, sample after sample, where parts start.
type cutter struct {
	mode       cutMode
	maxFrames  int
	cutAt      int
	partFrames int
	ordinal    int
}

// next takes a sample of f frames (at most maxFrames) and says whether it
// starts a new part.
func (c *cutter) next(f int) (cut bool) {
	if c.mode == cutByFrames {
		cut = c.partFrames+f > c.maxFrames
	} else {
		cut = c.ordinal == c.cutAt
	}
	if cut {
		c.partFrames = 0
	}
	c.partFrames += f
	c.ordinal++
	return cut
}

// splitter holds the state of one split. It is reused through splitterPool so
// that the index remap slices are allocated once.
type splitter struct {
	// owned: the input's samples may be moved into the parts.
	owned   bool
	dict    compactor
	parts   []pprofile.Profiles
	cur     pprofile.Profiles
	partNum int

	truncated int
}

// halfPoint returns the ordinal of the first sample of the second half.
func (s *splitter) halfPoint(pd pprofile.Profiles, n int) (int, error) {
	stacks := pd.Dictionary().StackTable()
	total := Frames(pd)
	acc, ord := 0, 0
	cut := n - 1
	found := false
	err := forEachSample(pd, func(path samplePath, sm pprofile.Sample) error {
		idx := int(sm.StackIndex())
		if idx < 0 || idx >= stacks.Len() {
			return indexError(path.String()+".stack_index", idx, "stack_table", stacks.Len())
		}
		acc += stacks.At(idx).LocationIndices().Len()
		ord++
		if !found && 2*acc >= total {
			cut, found = ord, true
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return min(max(cut, 1), n-1), nil
}

// run walks pd once, in order, and emits its content into consecutive parts.
// A container (resource, scope, profile) is repeated in every part that holds
// some of its samples; a container without samples goes to the part open when
// the walk meets it.
func (s *splitter) run(pd pprofile.Profiles, mode cutMode, maxFrames, cutAt int) ([]pprofile.Profiles, error) {
	src := pd.Dictionary()
	stacks := src.StackTable()
	nStacks := stacks.Len()
	s.parts = nil
	s.truncated = 0
	s.partNum = -1
	s.dict.init(src, maxFrames)
	if s.owned {
		s.planLastUse(pd, cutter{mode: mode, maxFrames: maxFrames, cutAt: cutAt})
	}
	if err := s.newPart(); err != nil {
		return nil, err
	}

	cuts := cutter{mode: mode, maxFrames: maxFrames, cutAt: cutAt}
	rps := pd.ResourceProfiles()
	for ri := 0; ri < rps.Len(); ri++ {
		rp := rps.At(ri)
		var drp pprofile.ResourceProfiles
		drpPart := -1
		ensureRP := func() pprofile.ResourceProfiles {
			if drpPart != s.partNum {
				drp = s.cur.ResourceProfiles().AppendEmpty()
				rp.Resource().CopyTo(drp.Resource())
				drp.SetSchemaUrl(rp.SchemaUrl())
				drpPart = s.partNum
			}
			return drp
		}
		sps := rp.ScopeProfiles()
		if sps.Len() == 0 {
			ensureRP()
		}
		for si := 0; si < sps.Len(); si++ {
			sp := sps.At(si)
			var dsp pprofile.ScopeProfiles
			dspPart := -1
			ensureSP := func() pprofile.ScopeProfiles {
				if dspPart != s.partNum {
					dsp = ensureRP().ScopeProfiles().AppendEmpty()
					sp.Scope().CopyTo(dsp.Scope())
					dsp.SetSchemaUrl(sp.SchemaUrl())
					dspPart = s.partNum
				}
				return dsp
			}
			profs := sp.Profiles()
			if profs.Len() == 0 {
				ensureSP()
			}
			for pi := 0; pi < profs.Len(); pi++ {
				prof := profs.At(pi)
				samples := prof.Samples()
				n := samples.Len()
				path := samplePath{ri, si, pi, 0}
				if n == 0 {
					if err := s.dict.copyProfileFields(prof, ensureSP().Profiles().AppendEmpty(), path); err != nil {
						return nil, err
					}
					continue
				}
				// Samples [from, k) go to the open part; a cut before sample
				// k emits them and opens the next part.
				from := 0
				for k := 0; k < n; k++ {
					idx := int(samples.At(k).StackIndex())
					if idx < 0 || idx >= nStacks {
						path.sample = k
						return nil, indexError(path.String()+".stack_index", idx, "stack_table", nStacks)
					}
					if cuts.next(min(int(s.dict.stackLen[idx]), maxFrames)) {
						if k > from {
							if err := s.emit(prof, ensureSP(), path, from, k); err != nil {
								return nil, err
							}
						}
						if err := s.newPart(); err != nil {
							return nil, err
						}
						from = k
					}
				}
				if err := s.emit(prof, ensureSP(), path, from, n); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := s.dict.finish(); err != nil {
		return nil, err
	}
	parts := s.parts
	s.parts = nil
	s.cur = pprofile.Profiles{}
	return parts, nil
}

// emit adds to the open part, under dsp, a profile with the fields of src and
// its samples [from, to), moved when the splitter owns the input and copied
// otherwise, their dictionary references mapped to the part's dictionary.
func (s *splitter) emit(src pprofile.Profile, dsp pprofile.ScopeProfiles, path samplePath, from, to int) error {
	dst := dsp.Profiles().AppendEmpty()
	if err := s.dict.copyProfileFields(src, dst, path); err != nil {
		return err
	}
	samples, dsamples := src.Samples(), dst.Samples()
	if s.owned && from == 0 && to == samples.Len() {
		samples.MoveAndAppendTo(dsamples)
	} else {
		dsamples.EnsureCapacity(to - from)
		for k := from; k < to; k++ {
			if s.owned {
				samples.At(k).MoveTo(dsamples.AppendEmpty())
			} else {
				samples.At(k).CopyTo(dsamples.AppendEmpty())
			}
		}
	}
	for k := 0; k < dsamples.Len(); k++ {
		path.sample = from + k
		truncated, err := s.dict.mapSample(dsamples.At(k), path)
		if err != nil {
			return err
		}
		if truncated {
			s.truncated++
		}
	}
	return nil
}

// planLastUse records in s.dict, for each source stack and location, the
// last part that will use it, walking the samples with the same cuts as run.
// Samples with a bad stack index are skipped: run reports them.
func (s *splitter) planLastUse(pd pprofile.Profiles, cuts cutter) {
	c := &s.dict
	stacks := c.srcStacks
	c.stackLast = fill(c.stackLast, stacks.Len(), -1)
	c.locLast = fill(c.locLast, c.srcLocations.Len(), -1)
	part := int32(0)
	forEachProfile(pd, func(_ samplePath, p pprofile.Profile) {
		samples := p.Samples()
		for k := 0; k < samples.Len(); k++ {
			idx := int(samples.At(k).StackIndex())
			if idx < 0 || idx >= stacks.Len() {
				continue
			}
			if cuts.next(min(int(c.stackLen[idx]), cuts.maxFrames)) {
				part++
			}
			c.stackLast[idx] = part
		}
	})
	for i, last := range c.stackLast {
		if last < 0 {
			continue
		}
		li := stacks.At(i).LocationIndices()
		for k, n := 0, min(li.Len(), cuts.maxFrames); k < n; k++ {
			if v := li.At(k); v >= 0 && int(v) < len(c.locLast) && c.locLast[v] < last {
				c.locLast[v] = last
			}
		}
	}
}

// fill returns s resized to n elements, all v.
func fill(s []int32, n int, v int32) []int32 {
	if cap(s) < n {
		s = make([]int32, n)
	}
	s = s[:n]
	for i := range s {
		s[i] = v
	}
	return s
}

// newPart closes the open part (if any) and opens the next one.
func (s *splitter) newPart() error {
	if s.partNum >= 0 {
		if err := s.dict.finish(); err != nil {
			return err
		}
	}
	s.cur = pprofile.NewProfiles()
	s.parts = append(s.parts, s.cur)
	s.partNum++
	s.dict.part = int32(s.partNum)
	return s.dict.begin(s.cur.Dictionary())
}

// samplePath locates a sample (or its profile) for error messages.
type samplePath struct{ resource, scope, profile, sample int }

func (p samplePath) profilePath() string {
	return fmt.Sprintf("resource_profiles[%d].scope_profiles[%d].profiles[%d]", p.resource, p.scope, p.profile)
}

func (p samplePath) String() string {
	return fmt.Sprintf("%s.samples[%d]", p.profilePath(), p.sample)
}

// forEachSample calls fn for every sample of pd in order, stopping at the
// first error.
func forEachSample(pd pprofile.Profiles, fn func(samplePath, pprofile.Sample) error) error {
	var err error
	forEachProfile(pd, func(path samplePath, p pprofile.Profile) {
		samples := p.Samples()
		for l := 0; l < samples.Len() && err == nil; l++ {
			path.sample = l
			err = fn(path, samples.At(l))
		}
	})
	return err
}

// forEachProfile calls fn for every profile of pd in order.
func forEachProfile(pd pprofile.Profiles, fn func(samplePath, pprofile.Profile)) {
	rps := pd.ResourceProfiles()
	for i := 0; i < rps.Len(); i++ {
		sps := rps.At(i).ScopeProfiles()
		for j := 0; j < sps.Len(); j++ {
			profs := sps.At(j).Profiles()
			for k := 0; k < profs.Len(); k++ {
				fn(samplePath{i, j, k, 0}, profs.At(k))
			}
		}
	}
}

// indexError names the field holding an index outside its table.
func indexError(field string, idx int, table string, n int) error {
	return fmt.Errorf("%s: index %d outside dictionary.%s (%d entries)", field, idx, table, n)
}
