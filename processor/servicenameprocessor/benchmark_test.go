// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor/internal/metadata"
)

const benchBatchSize = 1000

// BenchmarkProcessProfiles names a batch of 1,000 eBPF-like resources, of
// 1,000 processes, per op. It reports ns/resource and allocs/resource; the batch is restored from
// a template before each op with the timer stopped, so neither counts the
// copy.
func BenchmarkProcessProfiles(b *testing.B) {
	cases := []struct {
		name     string
		resource func(i int) map[string]any
	}{
		{"existing", func(int) map[string]any {
			return ebpfResource(map[string]any{"service.name": "checkout"})
		}},
		{"existing_with_env", func(int) map[string]any {
			return ebpfResource(map[string]any{"service.name": "checkout", envSvc: "checkout-env", envRA: "service.name=cart"})
		}},
		{"otel_service_name", func(int) map[string]any {
			return ebpfResource(map[string]any{envSvc: "checkout"})
		}},
		{"otel_resource_attributes", func(int) map[string]any {
			return ebpfResource(map[string]any{
				envRA: "service.name=cart,service.namespace=shop,deployment.environment.name=prod%2Deu",
			})
		}},
		{"unknown_service", func(int) map[string]any {
			return ebpfResource(nil)
		}},
		{"mixed", func(i int) map[string]any {
			switch i % 4 {
			case 0:
				return ebpfResource(map[string]any{"service.name": "checkout"})
			case 1:
				return ebpfResource(map[string]any{envSvc: "checkout"})
			case 2:
				return ebpfResource(map[string]any{envRA: "service.name=cart,service.namespace=shop"})
			}
			return ebpfResource(nil)
		}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			resources := make([]map[string]any, benchBatchSize)
			for i := range resources {
				// One resource per process, as the eBPF profiler sends
				// them: each its own process.pid (the coverage gauge
				// tracks each).
				resources[i] = bc.resource(i)
				resources[i]["process.pid"] = int64(1000 + i)
			}
			tmpl := newProfiles(b, resources...)
			work := pprofile.NewProfiles()
			p, err := newServiceNameProcessor(processortest.NewNopSettings(metadata.Type), createDefaultConfig().(*Config))
			require.NoError(b, err)
			ctx := context.Background()

			var ms runtime.MemStats
			var mallocs uint64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				tmpl.CopyTo(work)
				runtime.ReadMemStats(&ms)
				before := ms.Mallocs
				b.StartTimer()

				if _, err := p.processProfiles(ctx, work); err != nil {
					b.Fatal(err)
				}

				b.StopTimer()
				runtime.ReadMemStats(&ms)
				mallocs += ms.Mallocs - before
				b.StartTimer()
			}
			b.StopTimer()
			resourcesDone := float64(b.N) * benchBatchSize
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/resourcesDone, "ns/resource")
			b.ReportMetric(float64(mallocs)/resourcesDone, "allocs/resource")
		})
	}
}
