package profilesplit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
)

// benchBatch is a realistic 5,000,000-frame batch: 50,000 samples of depth
// 100 over 2,000 distinct stacks and 5,000 functions, from 50 processes.
var benchBatch = profilegen.Config{
	Samples: 50_000, Depth: 100, Stacks: 2_000, Functions: 5_000, Resources: 50, LinkEvery: 10, Seed: 1,
}

func encode(tb testing.TB, pd pprofile.Profiles) []byte {
	// MarshalProfiles rewrites resource attributes as string references in
	// place: encode a copy so that pd stays as it was.
	c := pprofile.NewProfiles()
	pd.CopyTo(c)
	var m pprofile.ProtoMarshaler
	buf, err := m.MarshalProfiles(c)
	require.NoError(tb, err)
	return buf
}

// benchmarkSplit splits pd at maxFrames b.N times and reports frames/s, the
// parts' total encoded size over the input's (size-ratio) and the split time
// over the time to encode the input once, measured in the same run
// (time-ratio). The machine is shared, so time-ratio compares the fastest
// split with the fastest encode of the run: the least disturbed of each.
func benchmarkSplit(b *testing.B, pd pprofile.Profiles, maxFrames int, owned bool) {
	frames := Frames(pd)
	inSize := len(encode(b, pd))
	var m pprofile.ProtoMarshaler
	var splitDur, encDur time.Duration
	minSplit, minEnc := time.Duration(1<<62), time.Duration(1<<62)
	var parts []pprofile.Profiles
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in := pd
		if owned {
			// SplitOwned consumes its input: split a fresh copy.
			b.StopTimer()
			in = pprofile.NewProfiles()
			pd.CopyTo(in)
			b.StartTimer()
		}
		t0 := time.Now()
		if owned {
			var err error
			if parts, _, err = SplitOwned(in, maxFrames); err != nil {
				b.Fatal(err)
			}
		} else {
			parts, _ = Split(in, maxFrames)
		}
		d := time.Since(t0)
		splitDur += d
		minSplit = min(minSplit, d)

		b.StopTimer()
		c := pprofile.NewProfiles()
		pd.CopyTo(c)
		t1 := time.Now()
		if _, err := m.MarshalProfiles(c); err != nil {
			b.Fatal(err)
		}
		d = time.Since(t1)
		encDur += d
		minEnc = min(minEnc, d)
		b.StartTimer()
	}
	b.StopTimer()
	outSize := 0
	for _, p := range parts {
		require.LessOrEqual(b, Frames(p), maxFrames)
		outSize += len(encode(b, p))
	}
	b.ReportMetric(float64(frames)*float64(b.N)/splitDur.Seconds(), "frames/s")
	b.ReportMetric(float64(len(parts)), "parts")
	b.ReportMetric(float64(outSize)/float64(inSize), "size-ratio")
	b.ReportMetric(float64(minSplit)/float64(minEnc), "time-ratio")
	b.ReportMetric(float64(splitDur)/float64(encDur), "mean-time-ratio")
	b.ReportMetric(float64(inSize), "input-bytes")
}

// BenchmarkSplit5MFrames splits the realistic batch at the ingest's limit.
func BenchmarkSplit5MFrames(b *testing.B) {
	benchmarkSplit(b, profilegen.Generate(benchBatch), 1_000_000, false)
}

// BenchmarkSplitOwned5MFrames is BenchmarkSplit5MFrames moving the samples
// (as the frame_limit processor does) instead of copying them.
func BenchmarkSplitOwned5MFrames(b *testing.B) {
	benchmarkSplit(b, profilegen.Generate(benchBatch), 1_000_000, true)
}

// BenchmarkSplit5MFramesOneProcess is the worst case for dictionary
// duplication: all 2,000 stacks belong to one process and its samples are
// shuffled, so every part uses nearly every stack.
func BenchmarkSplit5MFramesOneProcess(b *testing.B) {
	cfg := benchBatch
	cfg.Resources = 1
	benchmarkSplit(b, profilegen.Generate(cfg), 1_000_000, true)
}

// BenchmarkHalve5MFrames halves the realistic batch.
func BenchmarkHalve5MFrames(b *testing.B) {
	pd := profilegen.Generate(benchBatch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, ok := Halve(pd); !ok {
			b.Fatal("not halved")
		}
	}
}

// BenchmarkFrames counts the frames of the realistic batch.
func BenchmarkFrames(b *testing.B) {
	pd := profilegen.Generate(benchBatch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if Frames(pd) != 5_000_000 {
			b.Fatal("frames")
		}
	}
}
