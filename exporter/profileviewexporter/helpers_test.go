// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profiledict"
)

// batch builds OTLP profiles with a dictionary, as the receivers do.
type batch struct {
	pd   pprofile.Profiles
	dict pprofile.ProfilesDictionary
	strs *profiledict.Strings
}

func newBatch() *batch {
	pd := pprofile.NewProfiles()
	b := &batch{pd: pd, dict: pd.Dictionary()}
	profiledict.AppendZeroEntries(b.dict)
	b.strs = profiledict.NewStrings(b.dict)
	return b
}

func (b *batch) str(s string) int32 { return b.strs.Index(s) }

// profile adds a profile of one service and sample type.
func (b *batch) profile(service, host, sampleType, unit string, period int64) pprofile.Profile {
	rp := b.pd.ResourceProfiles().AppendEmpty()
	rp.Resource().Attributes().PutStr("service.name", service)
	if host != "" {
		rp.Resource().Attributes().PutStr("host.name", host)
	}
	p := rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
	p.SampleType().SetTypeStrindex(b.str(sampleType))
	p.SampleType().SetUnitStrindex(b.str(unit))
	if period > 0 {
		p.PeriodType().SetTypeStrindex(b.str("cpu"))
		p.PeriodType().SetUnitStrindex(b.str("nanoseconds"))
		p.SetPeriod(period)
	}
	p.SetTime(pcommon.NewTimestampFromTime(time.Now()))
	return p
}

// stack adds a stack of functions, leaf first; each frame in file
// <name>.go at line 10+i. A frame "a+b" is one location with b inlined into a
// (a the innermost).
func (b *batch) stack(fns ...string) int32 {
	st := b.dict.StackTable().AppendEmpty()
	for i, fn := range fns {
		loc := b.dict.LocationTable().AppendEmpty()
		loc.SetAddress(uint64(0x1000 + i))
		for _, name := range splitPlus(fn) {
			f := b.dict.FunctionTable().AppendEmpty()
			f.SetNameStrindex(b.str(name))
			f.SetFilenameStrindex(b.str(name + ".go"))
			ln := loc.Lines().AppendEmpty()
			ln.SetFunctionIndex(int32(b.dict.FunctionTable().Len() - 1))
			ln.SetLine(int64(10 + i))
		}
		st.LocationIndices().Append(int32(b.dict.LocationTable().Len() - 1))
	}
	return int32(b.dict.StackTable().Len() - 1)
}

func splitPlus(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '+' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// samples adds n samples of stack at t, one timestamp each (the eBPF
// profiler's form), optionally linked to a span.
func (b *batch) samples(p pprofile.Profile, stack int32, n int, t time.Time, trace pcommon.TraceID, span pcommon.SpanID) {
	s := p.Samples().AppendEmpty()
	s.SetStackIndex(stack)
	for range n {
		s.TimestampsUnixNano().Append(uint64(t.UnixNano()))
	}
	if !trace.IsEmpty() {
		l := b.dict.LinkTable().AppendEmpty()
		l.SetTraceID(trace)
		l.SetSpanID(span)
		s.SetLinkIndex(int32(b.dict.LinkTable().Len() - 1))
	}
}

// valued adds a sample with one value and no timestamp (pprof's form).
func (b *batch) valued(p pprofile.Profile, stack int32, v int64) {
	s := p.Samples().AppendEmpty()
	s.SetStackIndex(stack)
	s.Values().Append(v)
}

func fnName(i int) string { return fmt.Sprintf("pkg.fn%04d", i) }
