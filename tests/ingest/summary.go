package ingest

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// SeqAttribute is the key of the per-sample integer attribute (in the
// dictionary's attribute_table) that loss tests number their samples with.
const SeqAttribute = "seq"

// ServiceNameAttribute is the resource attribute samples are grouped by.
const ServiceNameAttribute = "service.name"

// SampleType is a profile's sample type as strings, e.g. {"cpu", "nanoseconds"}
// or {"alloc_space", "bytes"}.
type SampleType struct {
	Type string `json:"type"`
	Unit string `json:"unit"`
}

// TypeStats is what was accepted of one sample type ("type/unit", e.g.
// "samples/count" for CPU, "off_cpu/nanoseconds" for off-CPU): Sample
// messages (what the rate limit counts), their timestamps, the sum of
// their values (for off_cpu/nanoseconds, the nanoseconds spent off the CPU),
// and the samples as the profiler took them (Taken, see TakenCount).
type TypeStats struct {
	Samples    int64 `json:"samples"`
	Timestamps int64 `json:"timestamps"`
	Values     int64 `json:"values"`
	Taken      int64 `json:"taken"`
}

func (t *TypeStats) add(o TypeStats) {
	t.Samples += o.Samples
	t.Timestamps += o.Timestamps
	t.Values += o.Values
	t.Taken += o.Taken
}

// TakenCount is how many samples the profiler took that one Sample message
// stands for, whatever the packing: its timestamps (the eBPF profiler puts
// one per sample it took, and a sender may pack several into one message);
// where it has none, its value when the sample type's unit is "count" (a
// pprof CPU profile's samples/count, which pprof aggregates); else 1 (a
// value in bytes or nanoseconds is not a number of samples). The rate limit
// does not count these but Sample messages (see the package's doc).
func TakenCount(s pprofile.Sample, countUnit bool) int64 {
	if n := s.TimestampsUnixNano().Len(); n > 0 {
		return int64(n)
	}
	if countUnit && s.Values().Len() > 0 {
		var v int64
		for _, x := range s.Values().All() {
			v += x
		}
		return v
	}
	return 1
}

// OffCPUSampleType is the sample type of the eBPF profiler's off-CPU
// profiles (unit nanoseconds).
const OffCPUSampleType = "off_cpu"

// String is the sample type as "type/unit", the key of Stats.ByType.
func (st SampleType) String() string { return st.Type + "/" + st.Unit }

// serviceSummary is what one request carried for one service.
type serviceSummary struct {
	samples     int64
	offCPU      int64 // of samples, those of off_cpu profiles
	byType      map[string]*TypeStats
	linked      int64 // samples with a link (link_index > 0)
	sampleTypes []SampleType
	leaf        map[string]int64
	inclusive   map[string]int64
}

// summary is what the server keeps from one valid request. It is computed
// outside the server's lock.
type summary struct {
	services map[string]*serviceSummary
	seqs     []int64
}

// countFrames returns the number of samples of a validated request and the
// number of frames its stacks write out to: the sum over all samples of the
// length of the sample's stack.
func countFrames(pd pprofile.Profiles) (samples, frames int64) {
	stacks := pd.Dictionary().StackTable()
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, s := range p.Samples().All() {
					samples++
					frames += int64(stacks.At(int(s.StackIndex())).LocationIndices().Len())
				}
			}
		}
	}
	return samples, frames
}

// namer turns dictionary entries into function names, caching per location.
type namer struct {
	dict  pprofile.ProfilesDictionary
	names [][]string // per location index: function names of its lines, leaf (first line) first
	done  []bool
}

func newNamer(dict pprofile.ProfilesDictionary) *namer {
	n := dict.LocationTable().Len()
	return &namer{dict: dict, names: make([][]string, n), done: make([]bool, n)}
}

func (n *namer) str(i int32) string {
	return n.dict.StringTable().At(int(i))
}

// location returns the function names of a location's lines. A location
// without lines (an unsymbolized native frame) is named by its binary.
func (n *namer) location(li int32) []string {
	if n.done[li] {
		return n.names[li]
	}
	loc := n.dict.LocationTable().At(int(li))
	var out []string
	for _, line := range loc.Lines().All() {
		fn := n.dict.FunctionTable().At(int(line.FunctionIndex()))
		name := n.str(fn.NameStrindex())
		if name == "" {
			name = n.str(fn.SystemNameStrindex())
		}
		if name == "" {
			name = "(unnamed function)"
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		bin := n.str(n.dict.MappingTable().At(int(loc.MappingIndex())).FilenameStrindex())
		if bin == "" {
			bin = fmt.Sprintf("0x%x", loc.Address())
		}
		out = []string{bin + " (unsymbolized)"}
	}
	n.names[li], n.done[li] = out, true
	return out
}

// summarize aggregates a validated request: per service
// the samples, the linked samples, sample types, leaf and inclusive function counts, and the seq
// attribute of every sample that has one.
func summarize(pd pprofile.Profiles) *summary {
	dict := pd.Dictionary()
	attrs := dict.AttributeTable()
	seqAttr := make([]bool, attrs.Len())
	for i, a := range attrs.All() {
		seqAttr[i] = dict.StringTable().At(int(a.KeyStrindex())) == SeqAttribute && a.Value().Type() == pcommon.ValueTypeInt
	}
	nm := newNamer(dict)
	sum := &summary{services: map[string]*serviceSummary{}}
	seen := map[string]struct{}{}
	for _, rp := range pd.ResourceProfiles().All() {
		service := ""
		if v, ok := rp.Resource().Attributes().Get(ServiceNameAttribute); ok {
			service = v.AsString()
		}
		ss := sum.services[service]
		if ss == nil {
			ss = &serviceSummary{leaf: map[string]int64{}, inclusive: map[string]int64{}, byType: map[string]*TypeStats{}}
			sum.services[service] = ss
		}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				var ts *TypeStats
				if p.Samples().Len() > 0 {
					st := SampleType{Type: nm.str(p.SampleType().TypeStrindex()), Unit: nm.str(p.SampleType().UnitStrindex())}
					ss.sampleTypes = appendUnique(ss.sampleTypes, st)
					if ts = ss.byType[st.String()]; ts == nil {
						ts = &TypeStats{}
						ss.byType[st.String()] = ts
					}
				}
				// Off-CPU samples are time spent waiting: they are counted
				// by type, never in the function counts and rankings,
				// which are on-CPU views.
				offCPU := nm.str(p.SampleType().TypeStrindex()) == OffCPUSampleType
				countUnit := nm.str(p.SampleType().UnitStrindex()) == "count"
				for _, s := range p.Samples().All() {
					ss.samples++
					if linkedSample(s) {
						ss.linked++
					}
					ts.Samples++
					ts.Timestamps += int64(s.TimestampsUnixNano().Len())
					ts.Taken += TakenCount(s, countUnit)
					for _, v := range s.Values().All() {
						ts.Values += v
					}
					if offCPU {
						ss.offCPU++
					} else {
						locs := dict.StackTable().At(int(s.StackIndex())).LocationIndices()
						if locs.Len() > 0 {
							ss.leaf[nm.location(locs.At(0))[0]]++
						}
						clear(seen)
						for _, li := range locs.All() {
							for _, name := range nm.location(li) {
								if _, dup := seen[name]; !dup {
									seen[name] = struct{}{}
									ss.inclusive[name]++
								}
							}
						}
					}
					for _, ai := range s.AttributeIndices().All() {
						if seqAttr[ai] {
							sum.seqs = append(sum.seqs, attrs.At(int(ai)).Value().Int())
							break
						}
					}
				}
			}
		}
	}
	return sum
}

func appendUnique(list []SampleType, st SampleType) []SampleType {
	for _, have := range list {
		if have == st {
			return list
		}
	}
	return append(list, st)
}
