// Package profilegen generates realistic batches of OTLP profiles (0.161 data
// model) shaped like those the OpenTelemetry eBPF profiler sends: one
// resource per process with process attributes, one scope and one CPU
// profile per resource (and, with Config.OffCPUSamples, an off-CPU profile
// before it), samples carrying timestamps and thread attributes,
// stacks stored leaf first (index 0 is the top of the stack) over a shared
// request-wide dictionary whose tables all start with their zero value.
//
// Stacks of a process share root-side prefixes, as call trees do; the
// functions common to every process (libc, runtime, kernel) sit at the root
// and at the leaf of stacks, the rest belong to one process. It is meant for
// tests and benchmarks of the splitter, the processor and the exporter.
package profilegen // import "github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"

import (
	"fmt"
	"math/rand/v2"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profiledict"
)

// Config describes a batch. Zero fields take the documented defaults.
type Config struct {
	// Samples is the number of samples N in the batch (default 1000).
	Samples int
	// Depth is the number of frames D of every stack (default 64).
	Depth int
	// Stacks is the number K of distinct stacks in the dictionary, divided
	// among the processes; every stack is used by at least one sample when
	// Samples >= Stacks (default 200).
	Stacks int
	// Functions is the number F of distinct functions (default 1000).
	Functions int
	// SharedFunctions of the Functions are common to every process (default
	// Functions/10, at least 1); the others are divided among the processes.
	SharedFunctions int
	// Resources is the number of processes, one ResourceProfiles each
	// (default 20, at most Stacks).
	Resources int
	// LinkEvery gives every LinkEvery-th sample a link to a span (0: no links).
	LinkEvery int
	// Seq adds to every sample an int attribute "seq" holding its ordinal in
	// the batch (0, 1, 2, ...), so that tests can tell samples apart.
	Seq bool
	// OffCPUSamples adds that many off-CPU samples, divided among the
	// processes, in an off-CPU profile of each process shaped as the eBPF
	// profiler v0.0.202633 sends it with off_cpu_threshold above 0 (see
	// offCPUProfile). They come on top of Samples; Seq numbers them too.
	OffCPUSamples int
	// Seed makes the batch reproducible.
	Seed uint64
}

// Off-CPU profiles' sample type, as upstream registers it
// (tracer/systemconfig.go, setOriginIDs).
const (
	OffCPUType = "off_cpu"
	OffCPUUnit = "nanoseconds"
)

// IsOffCPU says whether a profile of pd is an off-CPU profile.
func IsOffCPU(pd pprofile.Profiles, p pprofile.Profile) bool {
	strs := pd.Dictionary().StringTable()
	st := p.SampleType()
	at := func(i int32) string {
		if i < 0 || int(i) >= strs.Len() {
			return ""
		}
		return strs.At(int(i))
	}
	return at(st.TypeStrindex()) == OffCPUType && at(st.UnitStrindex()) == OffCPUUnit
}

// OffCPUTotals returns, per service.name, the off-CPU nanoseconds and the
// off-CPU samples (Sample messages) of pd, and the CPU samples (values, else
// timestamps) of its other profiles, for exact accounting in tests.
func OffCPUTotals(pd pprofile.Profiles) (offCPUNanos, offCPUSamples map[string]int64, cpuSamples int64) {
	offCPUNanos, offCPUSamples = map[string]int64{}, map[string]int64{}
	for _, rp := range pd.ResourceProfiles().All() {
		svc := ""
		if v, ok := rp.Resource().Attributes().Get("service.name"); ok {
			svc = v.AsString()
		}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				off := IsOffCPU(pd, p)
				for _, s := range p.Samples().All() {
					if !off {
						if s.Values().Len() > 0 {
							for _, v := range s.Values().All() {
								cpuSamples += v
							}
						} else {
							cpuSamples += int64(s.TimestampsUnixNano().Len())
						}
						continue
					}
					offCPUSamples[svc]++
					for _, v := range s.Values().All() {
						offCPUNanos[svc] += v
					}
				}
			}
		}
	}
	return offCPUNanos, offCPUSamples, cpuSamples
}

// SeqKey is the key of the per-sample attribute Config.Seq adds.
const SeqKey = "seq"

func (c Config) withDefaults() Config {
	if c.Samples <= 0 {
		c.Samples = 1000
	}
	if c.Depth <= 0 {
		c.Depth = 64
	}
	if c.Stacks <= 0 {
		c.Stacks = 200
	}
	if c.Functions <= 0 {
		c.Functions = 1000
	}
	if c.Resources <= 0 {
		c.Resources = 20
	}
	c.Resources = min(c.Resources, c.Stacks)
	if c.SharedFunctions <= 0 {
		c.SharedFunctions = max(1, c.Functions/10)
	}
	c.SharedFunctions = min(c.SharedFunctions, c.Functions)
	return c
}

// Generate builds the batch described by cfg.
func Generate(cfg Config) pprofile.Profiles {
	cfg = cfg.withDefaults()
	g := newGen(cfg)
	g.build()
	return g.pd
}

type attrKey struct {
	key string
	val int64
	str string
}

type gen struct {
	cfg  Config
	rng  *rand.Rand
	pd   pprofile.Profiles
	dict pprofile.ProfilesDictionary

	strings *profiledict.Strings
	attrs   map[attrKey]int32

	sharedLocs []int32 // location index of each shared function
}

func newGen(cfg Config) *gen {
	pd := pprofile.NewProfiles()
	g := &gen{
		cfg:   cfg,
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
		pd:    pd,
		dict:  pd.Dictionary(),
		attrs: map[attrKey]int32{},
	}
	// Every table starts with its zero value.
	profiledict.AppendZeroEntries(g.dict)
	g.strings = profiledict.NewStrings(g.dict)
	return g
}

func (g *gen) str(s string) int32 { return g.strings.Index(s) }

func (g *gen) strAttr(key, val string) int32 {
	return g.attr(attrKey{key: key, str: val}, func(v pcommon.Value) { v.SetStr(val) })
}

func (g *gen) intAttr(key string, val int64) int32 {
	return g.attr(attrKey{key: key, val: val}, func(v pcommon.Value) { v.SetInt(val) })
}

// attr returns the index of the attribute k, adding it (its value set by
// set) the first time.
func (g *gen) attr(k attrKey, set func(pcommon.Value)) int32 {
	if i, ok := g.attrs[k]; ok {
		return i
	}
	i := int32(g.dict.AttributeTable().Len())
	a := g.dict.AttributeTable().AppendEmpty()
	a.SetKeyStrindex(g.str(k.key))
	set(a.Value())
	g.attrs[k] = i
	return i
}

// mapping adds a mapping for a binary with a build id attribute.
func (g *gen) mapping(file string, start uint64) int32 {
	i := int32(g.dict.MappingTable().Len())
	m := g.dict.MappingTable().AppendEmpty()
	m.SetMemoryStart(start)
	m.SetMemoryLimit(start + 0x1000000)
	m.SetFilenameStrindex(g.str(file))
	m.AttributeIndices().Append(g.strAttr("process.executable.build_id.htlhash", fmt.Sprintf("%032x", g.rng.Uint64())))
	return i
}

// function adds a function and the location of one of its call sites.
func (g *gen) function(name, file string, mapping int32, addr uint64, frameType string) int32 {
	fi := int32(g.dict.FunctionTable().Len())
	f := g.dict.FunctionTable().AppendEmpty()
	f.SetNameStrindex(g.str(name))
	f.SetFilenameStrindex(g.str(file))
	li := int32(g.dict.LocationTable().Len())
	l := g.dict.LocationTable().AppendEmpty()
	l.SetMappingIndex(mapping)
	l.SetAddress(addr)
	line := l.Lines().AppendEmpty()
	line.SetFunctionIndex(fi)
	line.SetLine(int64(10 + g.rng.IntN(2000)))
	l.AttributeIndices().Append(g.strAttr("profile.frame.type", frameType))
	return li
}

// share returns the part of total given to item i of n.
func share(total, i, n int) int {
	return total/n + btoi(i < total%n)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

var langs = []struct{ ext, frameType string }{
	{"java", "jvm"}, {"py", "cpython"}, {"go", "go"}, {"js", "v8js"}, {"rb", "ruby"},
}

func (g *gen) build() {
	cfg := g.cfg
	libc := g.mapping("/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f0000000000)
	for i := 0; i < cfg.SharedFunctions; i++ {
		name, ft := fmt.Sprintf("libc_shared_%d", i), "native"
		if i%4 == 3 {
			name, ft = fmt.Sprintf("__x64_sys_call_%d", i), "kernel"
		}
		g.sharedLocs = append(g.sharedLocs, g.function(name, "", libc, 0x7f0000001000+uint64(i)*0x40, ft))
	}
	ordinal := 0
	base := pcommon.Timestamp(1_780_000_000_000_000_000)
	for r := 0; r < cfg.Resources; r++ {
		nSamples := share(cfg.Samples, r, cfg.Resources)
		nStacks := share(cfg.Stacks, r, cfg.Resources)
		nFuncs := max(1, share(cfg.Functions-cfg.SharedFunctions, r, cfg.Resources))
		lang := langs[r%len(langs)]
		pid := int64(1000 + 37*r)
		exe := fmt.Sprintf("/opt/app%d/bin/app%d", r, r)

		rp := g.pd.ResourceProfiles().AppendEmpty()
		rp.SetSchemaUrl("https://opentelemetry.io/schemas/1.37.0")
		ra := rp.Resource().Attributes()
		ra.PutStr("service.name", fmt.Sprintf("service-%d", r))
		ra.PutInt("process.pid", pid)
		ra.PutStr("process.executable.path", exe)
		ra.PutStr("process.executable.name", fmt.Sprintf("app%d", r))
		ra.PutStr("host.name", "node-1")
		ra.PutStr("container.id", fmt.Sprintf("%064x", uint64(r)*0x9e3779b97f4a7c15))
		sp := rp.ScopeProfiles().AppendEmpty()
		sp.SetSchemaUrl("https://opentelemetry.io/schemas/1.37.0")
		sp.Scope().SetName("go.opentelemetry.io/ebpf-profiler")
		sp.Scope().SetVersion("v0.0.202633")

		// Upstream appends a process's profiles sorted by sample type
		// (reporter/internal/pdata/generate.go): off_cpu before samples.
		nOff := share(cfg.OffCPUSamples, r, cfg.Resources)
		var off pprofile.Profile
		if nOff > 0 {
			off = sp.Profiles().AppendEmpty()
		}
		prof := sp.Profiles().AppendEmpty()
		prof.SampleType().SetTypeStrindex(g.str("samples"))
		prof.SampleType().SetUnitStrindex(g.str("count"))
		prof.PeriodType().SetTypeStrindex(g.str("cpu"))
		prof.PeriodType().SetUnitStrindex(g.str("nanoseconds"))
		prof.SetPeriod(1_000_000_000 / 19)
		prof.SetTime(base)
		prof.SetDurationNano(5e9)
		prof.SetProfileID(g.profileID())

		// The process's own functions, one location each.
		exeMap := g.mapping(exe, 0x400000)
		own := make([]int32, nFuncs)
		for k := range own {
			own[k] = g.function(fmt.Sprintf("com.example.app%d.Module%d.method%d", r, k/25, k),
				fmt.Sprintf("app%d/module%d.%s", r, k/25, lang.ext), exeMap, 0x401000+uint64(k)*0x80, lang.frameType)
		}
		stacks := g.stacks(nStacks, own)

		var links []int32
		if cfg.LinkEvery > 0 {
			for k := 0; k < 16; k++ {
				links = append(links, int32(g.dict.LinkTable().Len()))
				l := g.dict.LinkTable().AppendEmpty()
				var tid pcommon.TraceID
				var sid pcommon.SpanID
				for b := range tid {
					tid[b] = byte(g.rng.UintN(256))
				}
				for b := range sid {
					sid[b] = byte(g.rng.UintN(256)) | 1
				}
				l.SetTraceID(tid)
				l.SetSpanID(sid)
			}
		}

		// Every stack once, then a skewed choice, in random order.
		choice := make([]int32, nSamples)
		for k := range choice {
			if k < len(stacks) {
				choice[k] = stacks[k]
			} else {
				u := g.rng.Float64()
				choice[k] = stacks[int(u*u*float64(len(stacks)))]
			}
		}
		g.rng.Shuffle(len(choice), func(a, b int) { choice[a], choice[b] = choice[b], choice[a] })

		samples := prof.Samples()
		samples.EnsureCapacity(nSamples)
		for k := 0; k < nSamples+nOff; k++ {
			var s pprofile.Sample
			if k < nSamples {
				s = samples.AppendEmpty()
				s.SetStackIndex(choice[k])
			} else {
				if k == nSamples {
					g.offCPUProfile(off, base)
				}
				s = off.Samples().AppendEmpty()
				s.SetStackIndex(stacks[g.rng.IntN(len(stacks))])
			}
			tid := pid + int64(g.rng.IntN(4))
			s.AttributeIndices().Append(
				g.strAttr("thread.name", fmt.Sprintf("worker-%d", tid-pid)),
				g.intAttr("thread.id", tid),
				g.intAttr("cpu.logical_number", int64(g.rng.IntN(8))))
			if cfg.Seq {
				s.AttributeIndices().Append(g.intAttr(SeqKey, int64(ordinal)))
			}
			if cfg.LinkEvery > 0 && ordinal%cfg.LinkEvery == 0 {
				s.SetLinkIndex(links[g.rng.IntN(len(links))])
			}
			s.TimestampsUnixNano().Append(uint64(base) + uint64(ordinal)*1_000_000 + uint64(g.rng.IntN(1000)))
			if k >= nSamples {
				// One to three events of the same stack and thread, each with
				// its duration (ReportValues: one value per timestamp).
				s.Values().Append(offCPUDuration(g.rng))
				for range g.rng.IntN(3) {
					s.TimestampsUnixNano().Append(s.TimestampsUnixNano().At(s.TimestampsUnixNano().Len()-1) + 1 + uint64(g.rng.IntN(1000)))
					s.Values().Append(offCPUDuration(g.rng))
				}
			}
			ordinal++
		}
	}
}

// offCPUProfile sets up p as upstream's off-CPU profile: the eBPF profiler
// v0.0.202633 registers it in tracer/systemconfig.go (setOriginIDs) as
// SampleType "off_cpu", SampleUnit "nanoseconds", ReportValues true and no
// PeriodType, and reporter/internal/pdata/generate.go (setProfile) then
// writes it with no period type and period 0, sample_type
// off_cpu/nanoseconds, and per sample its timestamps and one value per
// timestamp (traceInfo.Values: the nanoseconds the thread was off the CPU),
// with the same sample attributes (thread.name, thread.id,
// cpu.logical_number) and the same Time and DurationNano as the CPU profile.
func (g *gen) offCPUProfile(p pprofile.Profile, base pcommon.Timestamp) {
	p.SampleType().SetTypeStrindex(g.str(OffCPUType))
	p.SampleType().SetUnitStrindex(g.str(OffCPUUnit))
	p.SetTime(base)
	p.SetDurationNano(5e9)
	p.SetProfileID(g.profileID())
}

// profileID is a random profile id.
func (g *gen) profileID() pprofile.ProfileID {
	var id pprofile.ProfileID
	for k := range id {
		id[k] = byte(g.rng.UintN(256))
	}
	return id
}

// offCPUDuration is a wait between 1 µs and 100 ms, in nanoseconds.
func offCPUDuration(rng *rand.Rand) int64 { return 1_000 + rng.Int64N(100_000_000) }

// stacks adds n stacks of cfg.Depth frames over the process's functions and
// the shared ones and returns their indices. Root first: a few shared root
// frames, then process frames whose prefix is shared with the previous stack
// (a call tree), then up to two shared leaf frames (libc, syscalls).
func (g *gen) stacks(n int, own []int32) []int32 {
	d := g.cfg.Depth
	nShared := len(g.sharedLocs)
	rootShared := min(4, d, nShared)
	out := make([]int32, 0, n)
	prev := make([]int32, d) // root first
	cur := make([]int32, d)
	for j := 0; j < n; j++ {
		keep := rootShared
		if j > 0 && d > rootShared {
			keep = rootShared + g.rng.IntN(d-rootShared)
		}
		copy(cur[:keep], prev[:keep])
		for k := 0; k < rootShared; k++ {
			cur[k] = g.sharedLocs[k]
		}
		leafShared := min(g.rng.IntN(3), d-max(keep, rootShared))
		for k := keep; k < d; k++ {
			if k >= d-leafShared {
				cur[k] = g.sharedLocs[g.rng.IntN(nShared)]
			} else {
				cur[k] = own[g.rng.IntN(len(own))]
			}
		}
		out = append(out, int32(g.dict.StackTable().Len()))
		locs := g.dict.StackTable().AppendEmpty().LocationIndices()
		locs.EnsureCapacity(d)
		for k := d - 1; k >= 0; k-- { // leaf first
			locs.Append(cur[k])
		}
		prev, cur = cur, prev
	}
	return out
}
