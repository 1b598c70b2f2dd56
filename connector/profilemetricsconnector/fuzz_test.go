// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilemetricsconnector

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// bytesReader hands out the fuzzer's bytes as small numbers, zeros once
// they run out.
type bytesReader struct {
	b []byte
	i int
}

func (r *bytesReader) next(n int) int {
	if r.i >= len(r.b) || n <= 0 {
		return 0
	}
	v := int(r.b[r.i]) % n
	r.i++
	return v
}

// randomProfiles builds a batch from data: any sample type, period, stack,
// location, function, mapping and string index, valid or not.
func randomProfiles(data []byte) pprofile.Profiles {
	r := &bytesReader{b: data}
	b := newBuilder()
	for _, s := range []string{"samples", "count", "cpu", "nanoseconds", "inuse_space", "alloc_space", "bytes", "off_cpu", "f", "g", "libx.so"} {
		b.str(s)
	}
	nStr := int32(b.dict.StringTable().Len())
	for range r.next(8) {
		f := b.dict.FunctionTable().AppendEmpty()
		f.SetNameStrindex(int32(r.next(int(nStr)+4)) - 2)
	}
	for range r.next(3) {
		m := b.dict.MappingTable().AppendEmpty()
		m.SetFilenameStrindex(int32(r.next(int(nStr)+4)) - 2)
	}
	for range r.next(10) {
		loc := b.dict.LocationTable().AppendEmpty()
		loc.SetMappingIndex(int32(r.next(6)) - 1)
		for range r.next(3) {
			loc.Lines().AppendEmpty().SetFunctionIndex(int32(r.next(12)) - 2)
		}
	}
	for range r.next(10) {
		st := b.dict.StackTable().AppendEmpty()
		for range r.next(6) {
			st.LocationIndices().Append(int32(r.next(14)) - 2)
		}
	}
	services := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	for range r.next(12) {
		sp := b.resource("service.name", services[r.next(len(services))], "k8s.pod.name", services[r.next(len(services))])
		for range r.next(4) {
			p := sp.Profiles().AppendEmpty()
			p.SampleType().SetTypeStrindex(int32(r.next(int(nStr)+2)) - 1)
			p.SampleType().SetUnitStrindex(int32(r.next(int(nStr)+2)) - 1)
			p.PeriodType().SetTypeStrindex(int32(r.next(int(nStr))))
			p.PeriodType().SetUnitStrindex(int32(r.next(int(nStr))))
			p.SetPeriod(int64(r.next(200)-20) * 1_000_000)
			for range r.next(20) {
				s := p.Samples().AppendEmpty()
				s.SetStackIndex(int32(r.next(14)) - 2)
				for range r.next(3) {
					s.Values().Append(int64(r.next(256)-64) * 1_000_000)
				}
				for range r.next(5) {
					s.TimestampsUnixNano().Append(uint64(r.next(256)))
				}
			}
		}
	}
	return b.pd
}

// FuzzConsume: no input panics the connector, and the bounds hold: series
// (overflow aside), groups and the interval's function table.
func FuzzConsume(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x05\x03\x02\x04\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"))
	f.Add([]byte{7, 1, 2, 3, 4, 5, 6, 7, 2, 3, 4, 9, 8, 1, 2, 2, 3, 9, 1, 4, 4, 4, 11, 3, 3, 2, 3, 4, 5, 19, 3, 3, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxSeries = 4
		cfg := testConfig(func(c *Config) {
			c.MaxSeries = maxSeries
			c.TopFunctions = 2
			c.InclusiveTime = true
			c.GroupBy = []string{"service.name", "k8s.pod.name"}
		})
		a := newAggregator(cfg, t0)
		for i := range 3 {
			pd := randomProfiles(data)
			a.consume(pd, t0.Add(time.Duration(i)*time.Second))
			if len(a.fn) > fnEntriesPerSeries*maxSeries+2*12 {
				t.Fatalf("%d function entries", len(a.fn))
			}
			if len(a.groups) > 2*maxSeries+2 {
				t.Fatalf("%d groups", len(a.groups))
			}
			md := a.flush(t0.Add(time.Duration(i+1) * time.Minute))
			if n := a.countSeries(); n > maxSeries {
				t.Fatalf("%d series tracked, max_series %d", n, maxSeries)
			}
			if n := md.DataPointCount(); n > maxSeries+int(numMetrics)+1 {
				t.Fatalf("%d data points", n)
			}
			for _, p := range points(md) {
				if p.value < 0 {
					t.Fatalf("negative value %+v", p)
				}
			}
		}
	})
}
