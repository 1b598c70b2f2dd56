// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilemetricsconnector // import "github.com/nexovue/otelcol-nexovue/connector/profilemetricsconnector"

import (
	"path"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// profileKind is what a profile's sample type says its values are.
type profileKind int

const (
	kindOther profileKind = iota
	// kindCPUTime: sample type cpu/nanoseconds (a pprof CPU profile); each
	// value is CPU time.
	kindCPUTime
	// kindCPUSamples: sample type samples/count with period type
	// cpu/nanoseconds (the eBPF profiler, or a pprof CPU profile's count);
	// each sample counts len(timestamps), or its value when it has one,
	// periods of Profile.period nanoseconds.
	kindCPUSamples
	// kindHeapInUse: sample type inuse_space/bytes.
	kindHeapInUse
	// kindHeapAlloc: sample type alloc_space/bytes (a delta, the pprof
	// receiver's default).
	kindHeapAlloc
	// kindOffCPU: sample type off_cpu/nanoseconds, the eBPF profiler's
	// off-CPU profile (off_cpu_threshold above 0): no period, one value per
	// timestamp, each the nanoseconds a thread waited off the CPU.
	kindOffCPU
)

const (
	unknownFunction = "unknown"
	otherFunction   = "other"
)

// classify returns the kind of prof from its sample and period types.
func classify(strs pcommon.StringSlice, prof pprofile.Profile) profileKind {
	st := str(strs, prof.SampleType().TypeStrindex())
	su := str(strs, prof.SampleType().UnitStrindex())
	switch {
	case st == "cpu" && su == "nanoseconds":
		return kindCPUTime
	case st == "samples" && su == "count" &&
		str(strs, prof.PeriodType().TypeStrindex()) == "cpu" &&
		str(strs, prof.PeriodType().UnitStrindex()) == "nanoseconds" && prof.Period() > 0:
		return kindCPUSamples
	case st == "inuse_space" && su == "bytes":
		return kindHeapInUse
	case st == "alloc_space" && su == "bytes":
		return kindHeapAlloc
	case st == "off_cpu" && su == "nanoseconds":
		return kindOffCPU
	}
	return kindOther
}

// str returns the string at i, or "" when i is out of the table.
func str(strs pcommon.StringSlice, i int32) string {
	if i < 0 || int(i) >= strs.Len() {
		return ""
	}
	return strs.At(int(i))
}

// sampleValue is a sample's value in the profile's unit: the sum of its
// values, or for kindCPUSamples without values, the number of timestamps.
func sampleValue(kind profileKind, s pprofile.Sample) int64 {
	vals := s.Values()
	if vals.Len() == 0 {
		if kind == kindCPUSamples {
			return int64(s.TimestampsUnixNano().Len())
		}
		return 0
	}
	var sum int64
	for i := range vals.Len() {
		sum += vals.At(i)
	}
	return sum
}

// frames resolves the functions of samples' stacks against a dictionary,
// caching per stack index (the dictionary is shared by a whole batch).
type frames struct {
	dict  pprofile.ProfilesDictionary
	strs  pcommon.StringSlice
	leaf  map[int32]string
	stack map[int32][]string
}

func newFrames(dict pprofile.ProfilesDictionary) *frames {
	return &frames{dict: dict, strs: dict.StringTable(), leaf: map[int32]string{}, stack: map[int32][]string{}}
}

// leafFunction is the innermost function of a stack: the first
// line of its first location (inlined functions come first), else the
// basename of the location's mapping, else "unknown".
func (f *frames) leafFunction(idx int32) string {
	if name, ok := f.leaf[idx]; ok {
		return name
	}
	name := unknownFunction
	if locs := f.locations(idx); locs.Len() > 0 {
		if fns := f.locationFunctions(locs.At(0), nil); len(fns) > 0 {
			name = fns[0]
		}
	}
	f.leaf[idx] = name
	return name
}

// stackFunctions are the distinct functions of a stack, for
// inclusive time.
func (f *frames) stackFunctions(idx int32) []string {
	if fns, ok := f.stack[idx]; ok {
		return fns
	}
	var fns []string
	locs := f.locations(idx)
	for i := range locs.Len() {
		fns = f.locationFunctions(locs.At(i), fns)
	}
	if len(fns) == 0 {
		fns = []string{unknownFunction}
	}
	// Distinct: a recursive function counts once per sample.
	seen := make(map[string]struct{}, len(fns))
	out := make([]string, 0, len(fns))
	for _, fn := range fns {
		if _, dup := seen[fn]; !dup {
			seen[fn] = struct{}{}
			out = append(out, fn)
		}
	}
	f.stack[idx] = out
	return out
}

func (f *frames) locations(stackIdx int32) pcommon.Int32Slice {
	stacks := f.dict.StackTable()
	if stackIdx < 0 || int(stackIdx) >= stacks.Len() {
		return pcommon.NewInt32Slice()
	}
	return stacks.At(int(stackIdx)).LocationIndices()
}

// locationFunctions appends the names of the location's functions, innermost
// first, or its mapping's file name if it has none.
func (f *frames) locationFunctions(locIdx int32, out []string) []string {
	locs := f.dict.LocationTable()
	if locIdx < 0 || int(locIdx) >= locs.Len() {
		return append(out, unknownFunction)
	}
	loc := locs.At(int(locIdx))
	n := len(out)
	fnTable := f.dict.FunctionTable()
	for i := range loc.Lines().Len() {
		fi := loc.Lines().At(i).FunctionIndex()
		if fi < 0 || int(fi) >= fnTable.Len() {
			continue
		}
		if name := str(f.strs, fnTable.At(int(fi)).NameStrindex()); name != "" {
			out = append(out, name)
		}
	}
	if len(out) > n {
		return out
	}
	mappings := f.dict.MappingTable()
	if mi := loc.MappingIndex(); mi > 0 && int(mi) < mappings.Len() {
		if file := str(f.strs, mappings.At(int(mi)).FilenameStrindex()); file != "" {
			return append(out, path.Base(strings.ReplaceAll(file, `\`, "/")))
		}
	}
	return append(out, unknownFunction)
}
