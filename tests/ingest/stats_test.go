package ingest

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

func TestTopFunctionsPerService(t *testing.T) {
	s := startServer(t, Config{})
	b := NewRequestBuilder().
		Samples("checkout", 3, "runtime.mallocgc", "main.handle", "main.main").
		Samples("checkout", 2, "main.handle", "main.main").
		// Recursion: main.walk is in the stack twice but counted once.
		Samples("checkout", 1, "main.walk", "main.walk", "main.main").
		Samples("cart", 4, "cart.total", "main.main")
	require.Equal(t, http.StatusOK, sendBuilder(t, s, b).status)

	assert.Equal(t, map[string]int64{"checkout": 6, "cart": 4}, s.ServiceSamples())
	assert.Equal(t, []FunctionCount{{"runtime.mallocgc", 3}, {"main.handle", 2}, {"main.walk", 1}}, s.TopLeafFunctions("checkout", 0))
	assert.Equal(t, []FunctionCount{{"runtime.mallocgc", 3}, {"main.handle", 2}}, s.TopLeafFunctions("checkout", 2))
	assert.Equal(t, []FunctionCount{{"main.main", 6}, {"main.handle", 5}, {"runtime.mallocgc", 3}, {"main.walk", 1}}, s.TopInclusiveFunctions("checkout", 0))
	assert.Equal(t, []FunctionCount{{"cart.total", 4}}, s.TopLeafFunctions("cart", 5))
	assert.Nil(t, s.TopLeafFunctions("nobody", 5))
}

func TestSampleTypesPerService(t *testing.T) {
	s := startServer(t, Config{})
	b := NewRequestBuilder().Sample("api", "f").
		SetSampleType("alloc_space", "bytes").Sample("api", "g").Sample("heapy", "h").
		SetSampleType("cpu", "nanoseconds").Sample("api", "f")
	require.Equal(t, http.StatusOK, sendBuilder(t, s, b).status)
	assert.Equal(t, []SampleType{{"cpu", "nanoseconds"}, {"alloc_space", "bytes"}}, s.SampleTypes("api"))
	assert.Equal(t, []SampleType{{"alloc_space", "bytes"}}, s.SampleTypes("heapy"))
	assert.Equal(t, int64(3), s.ServiceSamples()["api"])
}

func TestSeqDistinctDuplicatesMissing(t *testing.T) {
	s := startServer(t, Config{})
	require.Equal(t, http.StatusOK, sendBuilder(t, s, NewRequestBuilder().SeqRange("a", 0, 10, "f")).status)
	// 5..14 again except 12: 5..9 are duplicates, 10, 11, 13, 14 new.
	b := NewRequestBuilder().SeqRange("a", 5, 12, "f").SeqRange("b", 13, 15, "f").Sample("a", "no seq")
	require.Equal(t, http.StatusOK, sendBuilder(t, s, b).status)

	assert.Equal(t, SeqStats{Distinct: 14, Duplicates: 5, Min: 0, Max: 14}, s.Seq())
	assert.Equal(t, []int64{12, 15, 16, 17}, s.MissingSeq(18))
	assert.Empty(t, s.MissingSeq(12))
	assert.Equal(t, int64(20), s.SamplesAccepted())
}

func TestSeqMustBeAnIntAttributeNamedSeq(t *testing.T) {
	s := startServer(t, Config{})
	pd := NewRequestBuilder().SeqSample("a", 3, "f").Profiles()
	attr := pd.Dictionary().AttributeTable().At(1)
	attr.Value().SetStr("3") // a string seq is not a seq
	require.Equal(t, http.StatusOK, send(t, s, testKey, ContentTypeProto, "", marshalProto(t, pd)).status)
	assert.Zero(t, s.Seq().Distinct)
	assert.Equal(t, []int64{0}, s.MissingSeq(1))
}

func TestUnsymbolizedAndUnnamedFrames(t *testing.T) {
	s := startServer(t, Config{})
	pd := NewRequestBuilder().Sample("native", "placeholder", "main").Profiles()
	d := pd.Dictionary()
	mi := d.MappingTable().Len()
	m := d.MappingTable().AppendEmpty()
	m.SetFilenameStrindex(int32(d.StringTable().Len()))
	d.StringTable().Append("libc.so.6")
	leaf := d.LocationTable().At(1) // the "placeholder" location
	leaf.Lines().RemoveIf(func(pprofile.Line) bool { return true })
	leaf.SetMappingIndex(int32(mi))
	// A function without a name but with a system name.
	d.FunctionTable().At(2).SetNameStrindex(0)
	d.FunctionTable().At(2).SetSystemNameStrindex(int32(d.StringTable().Len()))
	d.StringTable().Append("_start")

	require.Equal(t, http.StatusOK, send(t, s, testKey, ContentTypeProto, "", marshalProto(t, pd)).status)
	assert.Equal(t, []FunctionCount{{"libc.so.6 (unsymbolized)", 1}}, s.TopLeafFunctions("native", 0))
	assert.Equal(t, []FunctionCount{{"_start", 1}, {"libc.so.6 (unsymbolized)", 1}}, s.TopInclusiveFunctions("native", 0))
}

func TestResourceWithoutServiceName(t *testing.T) {
	s := startServer(t, Config{})
	require.Equal(t, http.StatusOK, sendBuilder(t, s, NewRequestBuilder().Sample("", "f")).status)
	assert.Equal(t, map[string]int64{"": 1}, s.ServiceSamples())
}

func TestTakeWindow(t *testing.T) {
	clock := newFakeClock(t0)
	s := startServer(t, Config{Now: clock.Now})
	require.Equal(t, http.StatusOK, sendBuilder(t, s, NewRequestBuilder().Samples("a", 3, "x", "y").Samples("b", 1, "z")).status)
	require.Equal(t, http.StatusUnauthorized, send(t, s, "", ContentTypeProto, "", nil).status)
	clock.Advance(10 * time.Second)
	w := s.TakeWindow()
	assert.Equal(t, t0, w.Start)
	assert.Equal(t, t0.Add(10*time.Second), w.End)
	assert.Equal(t, int64(4), w.Samples)
	assert.Equal(t, map[string]int64{"a": 3, "b": 1}, w.Services)
	assert.Equal(t, map[string]map[string]int64{"a": {"x": 3}, "b": {"z": 1}}, w.Leaf)
	assert.Equal(t, map[int]int{200: 1, 401: 1}, w.Statuses)

	require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("c", 2)).status)
	w = s.TakeWindow()
	assert.Equal(t, int64(2), w.Samples)
	assert.Equal(t, map[string]int64{"c": 2}, w.Services)
	assert.Equal(t, int64(6), s.SamplesAccepted(), "totals are kept across windows")
}

func TestRecentRequestsAreBounded(t *testing.T) {
	s := startServer(t, Config{KeepRecent: 3})
	for i := range 5 {
		require.Equal(t, http.StatusOK, sendBuilder(t, s, nSamples("a", i+1)).status)
	}
	recent := s.RecentRequests()
	require.Len(t, recent, 3)
	assert.Equal(t, []int64{3, 4, 5}, []int64{recent[0].Samples, recent[1].Samples, recent[2].Samples})
	assert.Equal(t, 5, s.Requests(http.StatusOK))
}

func TestDistinctFunctionsPerServiceAreBounded(t *testing.T) {
	dst := map[string]int64{}
	src := map[string]int64{}
	for i := range maxFunctionsPerService + 5 {
		src[fmt.Sprintf("fn%d", i)] = 1
	}
	addCounts(dst, src)
	assert.Len(t, dst, maxFunctionsPerService+1)
	assert.Equal(t, int64(5), dst[OtherFunctions], "the 5 names beyond the bound")
}
