// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
)

// hostWith is a component.Host holding one storage extension.
type hostWith struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h hostWith) GetExtensions() map[component.ID]component.Component { return h.exts }

// newQueueRound starts the exporter helper's persistent queue (as the
// nexovue exporter configures it: 10 consumers, 1000 requests) on the
// storage extension made by newExt, with a push that only counts samples,
// and returns a round: 10,000 samples (20 batches of 500, 16 frames deep,
// as the e2e load generator sends) offered, each written to the storage,
// read back, pushed and deleted; the round returns once all are pushed.
func newQueueRound(b *testing.B, newExt func(dir string) (extension.Extension, component.ID)) func() {
	ctx := context.Background()
	ext, id := newExt(b.TempDir())
	host := hostWith{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{id: ext}}
	require.NoError(b, ext.Start(ctx, host))
	b.Cleanup(func() { require.NoError(b, ext.Shutdown(ctx)) })

	var pushed, target atomic.Int64
	done := make(chan struct{}, 1)
	push := func(_ context.Context, pd pprofile.Profiles) error {
		if pushed.Add(int64(pd.SampleCount())) >= target.Load() {
			select {
			case done <- struct{}{}:
			default:
			}
		}
		return nil
	}
	qcfg := exporterhelper.NewDefaultQueueConfig()
	qcfg.StorageID = &id
	exp, err := xexporterhelper.NewProfiles(ctx, exportertest.NewNopSettings(component.MustNewType("nexovue")), &struct{}{}, push,
		exporterhelper.WithQueue(configoptional.Some(qcfg)))
	require.NoError(b, err)
	require.NoError(b, exp.Start(ctx, host))
	b.Cleanup(func() { require.NoError(b, exp.Shutdown(ctx)) })

	const batches, per = 20, 500
	in := make([]pprofile.Profiles, batches)
	for i := range in {
		in[i] = profilegen.Generate(profilegen.Config{Samples: per, Depth: 16, Seq: true, Seed: uint64(i) + 1})
	}
	return func() {
		target.Add(batches * per)
		for _, pd := range in {
			cp := pprofile.NewProfiles()
			pd.CopyTo(cp)
			require.NoError(b, exp.ConsumeProfiles(ctx, cp))
		}
		for pushed.Load() < target.Load() {
			<-done
		}
	}
}

func newFileStorage(b *testing.B) func(string) (extension.Extension, component.ID) {
	return func(dir string) (extension.Extension, component.ID) {
		f := filestorage.NewFactory()
		cfg := f.CreateDefaultConfig().(*filestorage.Config)
		cfg.Directory = dir
		ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
		require.NoError(b, err)
		return ext, component.NewID(f.Type())
	}
}

func newQueueStorageExt(b *testing.B) func(string) (extension.Extension, component.ID) {
	return func(dir string) (extension.Extension, component.ID) {
		f := NewFactory()
		cfg := f.CreateDefaultConfig().(*Config)
		cfg.Directory = dir
		ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
		require.NoError(b, err)
		return ext, component.NewID(f.Type())
	}
}

// BenchmarkQueue10kSamples: the cost of 10,000 samples through the
// persistent queue on contrib's file_storage (bbolt, what the shipped
// configurations used) and on queue_storage, one op a round of 10,000.
func BenchmarkQueue10kSamples(b *testing.B) {
	for _, s := range []struct {
		name string
		ext  func(*testing.B) func(string) (extension.Extension, component.ID)
	}{{"file_storage", newFileStorage}, {"queue_storage", newQueueStorageExt}} {
		b.Run(s.name, func(b *testing.B) {
			round := newQueueRound(b, s.ext(b))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				round()
			}
		})
	}
}

// BenchmarkQueue10kSamplesRatio runs the two queues of
// BenchmarkQueue10kSamples side by side, a round of each in turn, so that
// both see the same machine (this host's load from other builds moves a
// round's time by 2x within a minute), and reports each one's time per
// 10,000 samples and queue_storage's / file_storage's (the extension
// README, "Measurements"):
//
//	go test -run '^$' -bench BenchmarkQueue10kSamplesRatio -benchtime 40x -count 3 ./extension/queuestorageextension/
func BenchmarkQueue10kSamplesRatio(b *testing.B) {
	file := newQueueRound(b, newFileStorage(b))
	queue := newQueueRound(b, newQueueStorageExt(b))
	var fileTime, queueTime time.Duration
	b.ResetTimer()
	for i := range b.N {
		// Alternate which goes first: neither always follows the other.
		order := []func(){file, queue}
		times := []*time.Duration{&fileTime, &queueTime}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
			times[0], times[1] = times[1], times[0]
		}
		for j, round := range order {
			start := time.Now()
			round()
			*times[j] += time.Since(start)
		}
	}
	b.ReportMetric(float64(fileTime.Nanoseconds())/float64(b.N), "file_storage-ns/10k")
	b.ReportMetric(float64(queueTime.Nanoseconds())/float64(b.N), "queue_storage-ns/10k")
	b.ReportMetric(float64(queueTime)/float64(fileTime), "queue/file")
}
