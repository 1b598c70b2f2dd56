// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package framelimitprocessor

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumererror/xconsumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor/xprocessor"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
	"github.com/nexovue/otelcol-nexovue/processor/framelimitprocessor/internal/metadatatest"
)

// batch is a 500-sample batch of depth 64 (32,000 frames) whose samples
// carry their ordinal as the "seq" attribute.
func batch(seed uint64) pprofile.Profiles {
	return profilegen.Generate(profilegen.Config{
		Samples: 500, Depth: 64, Stacks: 60, Functions: 300, Resources: 6, LinkEvery: 5, Seq: true, Seed: seed,
	})
}

// seqs returns the "seq" attribute of every sample of pd, in order.
func seqs(t testing.TB, pd pprofile.Profiles) []int64 {
	t.Helper()
	d := pd.Dictionary()
	var out []int64
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, s := range p.Samples().All() {
					found := false
					for _, i := range s.AttributeIndices().All() {
						a := d.AttributeTable().At(int(i))
						if d.StringTable().At(int(a.KeyStrindex())) == profilegen.SeqKey {
							out = append(out, a.Value().Int())
							found = true
						}
					}
					require.True(t, found, "sample without seq")
				}
			}
		}
	}
	return out
}

type testEnv struct {
	tel  *componenttest.Telemetry
	logs *observer.ObservedLogs
	proc xprocessor.Profiles
	flp  *frameLimitProcessor
}

func newTestEnv(t *testing.T, maxFrames int, next xconsumer.Profiles) *testEnv {
	t.Helper()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := metadatatest.NewSettings(tel)
	core, logs := observer.New(zap.InfoLevel)
	set.Logger = zap.New(core)
	cfg := createDefaultConfig().(*Config)
	cfg.MaxFrames = maxFrames
	p, err := NewFactory().(xprocessor.Factory).CreateProfiles(context.Background(), set, cfg, next)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })
	return &testEnv{tel: tel, logs: logs, proc: p, flp: p.(*frameLimitProcessor)}
}

func (e *testEnv) assertCounter(t *testing.T, assertFn func(*testing.T, *componenttest.Telemetry, []metricdata.DataPoint[int64], ...metricdatatest.Option), want int64) {
	t.Helper()
	assertFn(t, e.tel, []metricdata.DataPoint[int64]{{Value: want}}, metricdatatest.IgnoreTimestamp())
}

func TestWithinLimitPassesThroughUntouched(t *testing.T) {
	sink := new(consumertest.ProfilesSink)
	env := newTestEnv(t, 32_000, sink)
	assert.True(t, env.proc.Capabilities().MutatesData)
	in := batch(1)
	want := profilesplit.ResolveSamples(in, 0)
	require.NoError(t, env.proc.ConsumeProfiles(context.Background(), in))
	require.Len(t, sink.AllProfiles(), 1)
	assert.True(t, sink.AllProfiles()[0] == in, "the batch itself is forwarded, not a copy")
	assert.Equal(t, want, profilesplit.ResolveSamples(sink.AllProfiles()[0], 0))
	_, err := env.tel.GetMetric("otelcol_processor_frame_limit_batches_split")
	assert.Error(t, err, "nothing split, nothing counted")
}

func TestSplitsLargeBatch(t *testing.T) {
	for _, maxFrames := range []int{10_000, 4_000, 64, 100} {
		sink := new(consumertest.ProfilesSink)
		env := newTestEnv(t, maxFrames, sink)
		in := batch(2)
		want := profilesplit.ResolveSamples(in, 0)
		require.NoError(t, env.proc.ConsumeProfiles(context.Background(), in))

		parts := sink.AllProfiles()
		wantParts := (32_000 + maxFrames - 1) / maxFrames
		require.GreaterOrEqual(t, len(parts), wantParts)
		var got []string
		for i, p := range parts {
			require.NoError(t, profilesplit.Validate(p), "part %d", i)
			require.LessOrEqual(t, profilesplit.Frames(p), maxFrames, "part %d", i)
			got = append(got, profilesplit.ResolveSamples(p, 0)...)
		}
		require.Equal(t, want, got, "every sample once, in order, unchanged")
		env.assertCounter(t, metadatatest.AssertEqualProcessorFrameLimitBatchesSplit, 1)
		env.assertCounter(t, metadatatest.AssertEqualProcessorFrameLimitPartsEmitted, int64(len(parts)))
		_, err := env.tel.GetMetric("otelcol_processor_frame_limit_samples_truncated")
		assert.Error(t, err, "no sample is deeper than max_frames")
	}
}

func TestTruncatesDeepSamplesAndLogsAtMostOnceAMinute(t *testing.T) {
	sink := new(consumertest.ProfilesSink)
	env := newTestEnv(t, 50, sink)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	env.flp.now = func() time.Time { return now }

	consume := func() {
		in := batch(3) // 500 samples of depth 64 > 50
		want := profilesplit.ResolveSamples(in, 50)
		sink.Reset()
		require.NoError(t, env.proc.ConsumeProfiles(context.Background(), in))
		var got []string
		for _, p := range sink.AllProfiles() {
			require.LessOrEqual(t, profilesplit.Frames(p), 50)
			got = append(got, profilesplit.ResolveSamples(p, 0)...)
		}
		require.Equal(t, want, got, "the 50 leaf-most frames of every sample are kept")
	}

	consume()
	require.Equal(t, 1, env.logs.Len())
	entry := env.logs.All()[0]
	assert.Equal(t, zap.WarnLevel, entry.Level)
	assert.Equal(t, int64(500), entry.ContextMap()["samples"])
	assert.Equal(t, int64(50), entry.ContextMap()["max_frames"])

	now = now.Add(30 * time.Second)
	consume()
	now = now.Add(29 * time.Second)
	consume()
	assert.Equal(t, 1, env.logs.Len(), "no second line within a minute")

	now = now.Add(time.Second) // a minute after the first line
	consume()
	require.Equal(t, 2, env.logs.Len())
	assert.Equal(t, int64(1500), env.logs.All()[1].ContextMap()["samples"], "the line counts every sample since the last one")

	env.assertCounter(t, metadatatest.AssertEqualProcessorFrameLimitSamplesTruncated, 2000)
	env.assertCounter(t, metadatatest.AssertEqualProcessorFrameLimitBatchesSplit, 4)
}

// flaky refuses the parts whose 0-based position in the stream of batches it
// receives is in failOn, with the error errFor returns; it accepts all else
// into sink.
type flaky struct {
	mu     sync.Mutex
	n      int
	failOn map[int]bool
	errFor func(n int, pd pprofile.Profiles) error
	sink   consumertest.ProfilesSink
}

func (f *flaky) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (f *flaky) ConsumeProfiles(ctx context.Context, pd pprofile.Profiles) error {
	f.mu.Lock()
	n := f.n
	f.n++
	f.mu.Unlock()
	if f.failOn[n] {
		return f.errFor(n, pd)
	}
	return f.sink.ConsumeProfiles(ctx, pd)
}

func accepted(t *testing.T, f *flaky) []int64 {
	var out []int64
	for _, pd := range f.sink.AllProfiles() {
		out = append(out, seqs(t, pd)...)
	}
	return out
}

func TestRefusedPartsAreHandedBackAlone(t *testing.T) {
	f := &flaky{
		failOn: map[int]bool{1: true, 3: true},
		errFor: func(int, pprofile.Profiles) error { return errors.New("ingest unavailable") },
	}
	env := newTestEnv(t, 5_000, f) // 32,000 frames: 7 parts
	in := batch(4)
	all := seqs(t, in)

	// Record what each part holds by splitting an identical batch.
	parts, _ := profilesplit.Split(batch(4), 5_000)
	require.Len(t, parts, 7)
	wantRefused := append(seqs(t, parts[1]), seqs(t, parts[3])...)

	err := env.proc.ConsumeProfiles(context.Background(), in)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err))
	assert.ErrorContains(t, err, "frame_limit: 2 of 7 parts of a split batch were refused")
	assert.ErrorContains(t, err, "part 2 of 7: ingest unavailable")
	assert.ErrorContains(t, err, "part 4 of 7: ingest unavailable")
	var carried xconsumererror.Profiles
	require.ErrorAs(t, err, &carried)
	require.NoError(t, profilesplit.Validate(carried.Data()))
	assert.Equal(t, wantRefused, seqs(t, carried.Data()), "the error carries the refused parts, only")
	assert.Len(t, f.sink.AllProfiles(), 5, "the parts after a refused one are still sent")

	env.assertCounter(t, metadatatest.AssertEqualProcessorFrameLimitPartsEmitted, 7)
	env.assertCounter(t, metadatatest.AssertEqualProcessorFrameLimitPartsFailed, 2)
	env.assertCounter(t, metadatatest.AssertEqualProcessorFrameLimitBatchesSplit, 1)

	// An upstream retrier resends what the error carries: two parts' worth,
	// split again in two, now accepted.
	require.Greater(t, profilesplit.Frames(carried.Data()), 5_000)
	require.NoError(t, env.proc.ConsumeProfiles(context.Background(), carried.Data()))
	got := accepted(t, f)
	slices.Sort(got)
	assert.Equal(t, all, got, "every sample accepted exactly once")
	env.assertCounter(t, metadatatest.AssertEqualProcessorFrameLimitPartsEmitted, 7+2)
	env.assertCounter(t, metadatatest.AssertEqualProcessorFrameLimitBatchesSplit, 2)
}

func TestPermanentRefusalsAreDroppedRetryableOnesHandedBack(t *testing.T) {
	f := &flaky{
		failOn: map[int]bool{0: true, 2: true},
		errFor: func(n int, _ pprofile.Profiles) error {
			if n == 0 {
				return consumererror.NewPermanent(errors.New("bad request"))
			}
			return errors.New("timeout")
		},
	}
	env := newTestEnv(t, 5_000, f)
	parts, _ := profilesplit.Split(batch(5), 5_000)
	err := env.proc.ConsumeProfiles(context.Background(), batch(5))
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "a retryable part must still be retried")
	assert.ErrorContains(t, err, "part 1 of 7 (refused permanently, dropped): Permanent error: bad request")
	var carried xconsumererror.Profiles
	require.ErrorAs(t, err, &carried)
	assert.Equal(t, seqs(t, parts[2]), seqs(t, carried.Data()), "only the retryable part is handed back")
}

func TestAllRefusalsPermanent(t *testing.T) {
	f := &flaky{
		failOn: map[int]bool{1: true, 5: true},
		errFor: func(int, pprofile.Profiles) error { return consumererror.NewPermanent(errors.New("bad request")) },
	}
	env := newTestEnv(t, 5_000, f)
	err := env.proc.ConsumeProfiles(context.Background(), batch(6))
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err))
	var carried xconsumererror.Profiles
	assert.False(t, errors.As(err, &carried), "nothing to resend")
	assert.Len(t, f.sink.AllProfiles(), 5)
}

func TestDownstreamPartialErrorIsPassedOn(t *testing.T) {
	// The next consumer accepts part 3 but for some of its samples, which
	// it hands back itself: only those are handed on.
	var handedBack []int64
	f := &flaky{
		failOn: map[int]bool{3: true},
		errFor: func(_ int, pd pprofile.Profiles) error {
			first, _, ok := profilesplit.Halve(pd)
			require.True(t, ok)
			handedBack = seqs(t, first)
			return xconsumererror.NewProfiles(errors.New("half refused"), first)
		},
	}
	env := newTestEnv(t, 5_000, f)
	err := env.proc.ConsumeProfiles(context.Background(), batch(7))
	var carried xconsumererror.Profiles
	require.ErrorAs(t, err, &carried)
	require.NotEmpty(t, handedBack)
	assert.Equal(t, handedBack, seqs(t, carried.Data()))
}

func TestInvalidBatchIsRefusedPermanently(t *testing.T) {
	sink := new(consumertest.ProfilesSink)
	env := newTestEnv(t, 1_000, sink)
	in := batch(8)
	s := in.ResourceProfiles().At(2).ScopeProfiles().At(0).Profiles().At(0).Samples().At(4)
	s.SetLinkIndex(9999)
	err := env.proc.ConsumeProfiles(context.Background(), in)
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err))
	assert.ErrorContains(t, err, "resource_profiles[2].scope_profiles[0].profiles[0].samples[4].link_index: index 9999 outside dictionary.link_table")
	assert.Empty(t, sink.AllProfiles(), "nothing half-sent")
}

func TestReadOnlyBatchIsCopied(t *testing.T) {
	sink := new(consumertest.ProfilesSink)
	env := newTestEnv(t, 5_000, sink)
	in := batch(9)
	in.MarkReadOnly()
	want := profilesplit.ResolveSamples(in, 0)
	require.NoError(t, env.proc.ConsumeProfiles(context.Background(), in))
	assert.Equal(t, want, profilesplit.ResolveSamples(in, 0), "a shared batch is left as it was")
	var got []string
	for _, p := range sink.AllProfiles() {
		got = append(got, profilesplit.ResolveSamples(p, 0)...)
	}
	assert.Equal(t, want, got)
}

// TestExporterhelperRetryNeitherLosesNorDuplicates puts the processor behind
// an exporterhelper retrier (as a component upstream would be), in front of
// a consumer that refuses two parts once: after the retry, every sample has
// been accepted exactly once.
func TestExporterhelperRetryNeitherLosesNorDuplicates(t *testing.T) {
	f := &flaky{
		failOn: map[int]bool{2: true, 4: true, 7: true}, // 7: the first part of the retry
		errFor: func(int, pprofile.Profiles) error { return errors.New("503") },
	}
	env := newTestEnv(t, 5_000, f)
	retry := configretry.NewDefaultBackOffConfig()
	retry.InitialInterval = time.Millisecond
	retry.MaxInterval = time.Millisecond
	retry.RandomizationFactor = 0
	exp, err := xexporterhelper.NewProfiles(context.Background(), exportertest.NewNopSettings(exportertest.NopType),
		&struct{}{}, env.proc.ConsumeProfiles, exporterhelper.WithRetry(retry))
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })

	in := batch(10)
	all := seqs(t, in)
	require.NoError(t, exp.ConsumeProfiles(context.Background(), in))
	got := accepted(t, f)
	slices.Sort(got)
	assert.Equal(t, all, got, "every sample accepted exactly once")
	assert.Equal(t, 7+2+1, f.n, "7 parts; the 2 refused ones merged and split again in 2, the first refused again; then that one alone")
}

func TestConcurrentBatches(t *testing.T) {
	sink := new(consumertest.ProfilesSink)
	env := newTestEnv(t, 3_000, sink)
	now := time.Now()
	env.flp.now = func() time.Time { return now }
	var want []int64
	batches := make([]pprofile.Profiles, 8)
	for i := range batches {
		batches[i] = profilegen.Generate(profilegen.Config{
			Samples: 200, Depth: 40, Stacks: 30, Functions: 100, Resources: 3, Seq: true, Seed: uint64(100 + i),
		})
		want = append(want, seqs(t, batches[i])...)
	}
	var wg sync.WaitGroup
	for _, b := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, env.proc.ConsumeProfiles(context.Background(), b))
		}()
	}
	wg.Wait()
	var got []int64
	for _, p := range sink.AllProfiles() {
		require.LessOrEqual(t, profilesplit.Frames(p), 3_000)
		require.NoError(t, profilesplit.Validate(p))
		got = append(got, seqs(t, p)...)
	}
	slices.Sort(want)
	slices.Sort(got)
	assert.Equal(t, want, got)
	env.assertCounter(t, metadatatest.AssertEqualProcessorFrameLimitBatchesSplit, 8)
}

// TestSplitKeepsOffCPUDurations: a batch with the eBPF profiler's off-CPU
// profiles next to its CPU ones, split under limits that cut it into many
// parts: every off-CPU sample stays in an off_cpu/nanoseconds profile with
// its timestamps and one duration each, and per service the durations add
// up to what came in; the CPU samples stay counts.
func TestSplitKeepsOffCPUDurations(t *testing.T) {
	in := profilegen.Generate(profilegen.Config{
		Samples: 300, OffCPUSamples: 300, Depth: 64, Stacks: 60, Functions: 300, Resources: 6, Seq: true, Seed: 28,
	})
	wantNanos, wantOff, wantCPU := profilegen.OffCPUTotals(in)
	want := profilesplit.ResolveSamples(in, 0)
	for _, maxFrames := range []int{64, 1_000, 10_000} {
		sink := new(consumertest.ProfilesSink)
		env := newTestEnv(t, maxFrames, sink)
		require.NoError(t, env.proc.ConsumeProfiles(context.Background(), profilegen.Generate(profilegen.Config{
			Samples: 300, OffCPUSamples: 300, Depth: 64, Stacks: 60, Functions: 300, Resources: 6, Seq: true, Seed: 28,
		})))
		parts := sink.AllProfiles()
		require.Greater(t, len(parts), 1, "max_frames %d must force a split", maxFrames)
		gotNanos, gotOff := map[string]int64{}, map[string]int64{}
		var gotCPU int64
		var got []string
		for _, p := range parts {
			require.LessOrEqual(t, profilesplit.Frames(p), maxFrames)
			n, o, c := profilegen.OffCPUTotals(p)
			for k, v := range n {
				gotNanos[k] += v
			}
			for k, v := range o {
				gotOff[k] += v
			}
			gotCPU += c
			got = append(got, profilesplit.ResolveSamples(p, 0)...)
		}
		assert.Equal(t, wantNanos, gotNanos, "max_frames %d: off-CPU nanoseconds per service", maxFrames)
		assert.Equal(t, wantOff, gotOff, "max_frames %d: off-CPU samples per service", maxFrames)
		assert.Equal(t, wantCPU, gotCPU, "max_frames %d: CPU samples", maxFrames)
		require.Equal(t, want, got, "max_frames %d: every sample once, with its profile's type, timestamps and values", maxFrames)
	}
}
