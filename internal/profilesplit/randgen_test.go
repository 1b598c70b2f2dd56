package profilesplit

import (
	"fmt"
	"math/rand/v2"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// randomProfiles builds a valid but untidy request from seed: many resources
// (some without scopes), scopes without profiles, profiles without samples,
// shared and distinct stacks (some empty, some sharing locations), links,
// attributes of every value type with units, mapping and location
// attributes, orphan dictionary entries, and every profile field set.
func randomProfiles(seed1, seed2 uint64) pprofile.Profiles {
	rng := rand.New(rand.NewPCG(seed1, seed2))
	pd := pprofile.NewProfiles()
	d := pd.Dictionary()

	nStrings := 1 + rng.IntN(60)
	d.StringTable().Append("")
	for i := 1; i < nStrings; i++ {
		d.StringTable().Append(fmt.Sprintf("s%d-%x", i, rng.Uint32()))
	}
	str := func() int32 { return int32(rng.IntN(nStrings)) }

	d.AttributeTable().AppendEmpty()
	for i, n := 1, rng.IntN(30); i <= n; i++ {
		a := d.AttributeTable().AppendEmpty()
		a.SetKeyStrindex(str())
		if rng.IntN(3) == 0 {
			a.SetUnitStrindex(str())
		}
		switch rng.IntN(6) {
		case 0:
			a.Value().SetStr(fmt.Sprintf("v%d", rng.IntN(100)))
		case 1:
			a.Value().SetInt(rng.Int64())
		case 2:
			a.Value().SetDouble(rng.Float64())
		case 3:
			a.Value().SetBool(rng.IntN(2) == 0)
		case 4:
			a.Value().SetEmptyBytes().FromRaw([]byte{byte(i), 1, 2})
		case 5:
			s := a.Value().SetEmptySlice()
			s.AppendEmpty().SetStr("x")
			s.AppendEmpty().SetInt(int64(i))
		}
	}
	attrs := func(dst pcommon.Int32Slice, maxN int) {
		for k := rng.IntN(maxN + 1); k > 0; k-- {
			dst.Append(int32(rng.IntN(d.AttributeTable().Len())))
		}
	}

	d.FunctionTable().AppendEmpty()
	for i, n := 1, rng.IntN(40); i <= n; i++ {
		f := d.FunctionTable().AppendEmpty()
		f.SetNameStrindex(str())
		f.SetSystemNameStrindex(str())
		f.SetFilenameStrindex(str())
		f.SetStartLine(rng.Int64N(1000))
	}
	d.MappingTable().AppendEmpty()
	for i, n := 1, rng.IntN(10); i <= n; i++ {
		m := d.MappingTable().AppendEmpty()
		m.SetMemoryStart(rng.Uint64())
		m.SetMemoryLimit(rng.Uint64())
		m.SetFileOffset(rng.Uint64N(1 << 20))
		m.SetFilenameStrindex(str())
		attrs(m.AttributeIndices(), 2)
	}
	d.LocationTable().AppendEmpty()
	for i, n := 1, rng.IntN(60); i <= n; i++ {
		l := d.LocationTable().AppendEmpty()
		l.SetMappingIndex(int32(rng.IntN(d.MappingTable().Len())))
		l.SetAddress(rng.Uint64())
		for k := rng.IntN(4); k > 0; k-- {
			ln := l.Lines().AppendEmpty()
			ln.SetFunctionIndex(int32(rng.IntN(d.FunctionTable().Len())))
			ln.SetLine(rng.Int64N(5000))
			ln.SetColumn(rng.Int64N(80))
		}
		attrs(l.AttributeIndices(), 2)
	}
	d.StackTable().AppendEmpty()
	maxDepth := 1 + rng.IntN(40)
	for i, n := 1, rng.IntN(40); i <= n; i++ {
		s := d.StackTable().AppendEmpty().LocationIndices()
		for k := rng.IntN(maxDepth + 1); k > 0; k-- {
			s.Append(int32(rng.IntN(d.LocationTable().Len())))
		}
	}
	d.LinkTable().AppendEmpty()
	for i, n := 1, rng.IntN(10); i <= n; i++ {
		l := d.LinkTable().AppendEmpty()
		var t pcommon.TraceID
		var s pcommon.SpanID
		t[0], t[15], s[0] = byte(i), byte(rng.IntN(256)), byte(rng.IntN(256))
		l.SetTraceID(t)
		l.SetSpanID(s)
	}

	for r, nr := 0, 1+rng.IntN(6); r < nr; r++ {
		rp := pd.ResourceProfiles().AppendEmpty()
		rp.SetSchemaUrl(fmt.Sprintf("https://schema/%d", rng.IntN(3)))
		rp.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc%d", rng.IntN(4)))
		rp.Resource().Attributes().PutInt("process.pid", int64(r))
		rp.Resource().SetDroppedAttributesCount(uint32(rng.IntN(3)))
		for s, ns := 0, rng.IntN(4); s < ns; s++ {
			sp := rp.ScopeProfiles().AppendEmpty()
			sp.SetSchemaUrl(fmt.Sprintf("https://scope-schema/%d", rng.IntN(3)))
			sp.Scope().SetName(fmt.Sprintf("scope%d", s))
			sp.Scope().SetVersion("v1")
			sp.Scope().Attributes().PutBool("b", rng.IntN(2) == 0)
			sp.Scope().SetDroppedAttributesCount(uint32(rng.IntN(2)))
			for p, np := 0, rng.IntN(4); p < np; p++ {
				prof := sp.Profiles().AppendEmpty()
				prof.SampleType().SetTypeStrindex(str())
				prof.SampleType().SetUnitStrindex(str())
				prof.PeriodType().SetTypeStrindex(str())
				prof.PeriodType().SetUnitStrindex(str())
				prof.SetPeriod(rng.Int64N(1e9))
				prof.SetTime(pcommon.Timestamp(rng.Uint64()))
				prof.SetDurationNano(rng.Uint64N(1e10))
				var id pprofile.ProfileID
				id[0], id[1] = byte(r), byte(rng.IntN(256))
				prof.SetProfileID(id)
				prof.SetDroppedAttributesCount(uint32(rng.IntN(3)))
				if rng.IntN(3) == 0 {
					prof.SetOriginalPayloadFormat("pprof")
					prof.OriginalPayload().FromRaw([]byte{1, 2, byte(p)})
				}
				attrs(prof.AttributeIndices(), 3)
				for k, nk := 0, rng.IntN(30); k < nk; k++ {
					sm := prof.Samples().AppendEmpty()
					sm.SetStackIndex(int32(rng.IntN(d.StackTable().Len())))
					if rng.IntN(3) == 0 {
						sm.SetLinkIndex(int32(rng.IntN(d.LinkTable().Len())))
					}
					attrs(sm.AttributeIndices(), 4)
					for v := rng.IntN(3); v > 0; v-- {
						sm.Values().Append(rng.Int64N(1000))
					}
					for v := rng.IntN(3); v > 0; v-- {
						sm.TimestampsUnixNano().Append(rng.Uint64())
					}
				}
			}
		}
	}
	return pd
}
