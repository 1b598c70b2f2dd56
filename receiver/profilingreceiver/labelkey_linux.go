// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver"

import (
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/ebpf-profiler/libpf"
	"go.opentelemetry.io/ebpf-profiler/reporter"
	"go.opentelemetry.io/ebpf-profiler/reporter/samples"
)

// newReporter is upstream's collector reporter with the goroutine labels of
// a trace made part of its aggregation key.
//
// Upstream merges, within one reporter_interval, the samples of one stack,
// thread and CPU into one sample, and keeps the labels of the first
// (reporter/base_reporter.go, SampleKey has no labels): two spans running the
// same function on one thread became one sample with the first span's
// labels, so the second span's samples were linked to the first. With the
// labels in SampleKey.ExtraMeta, samples with different labels stay apart.
func newReporter(cfg *reporter.Config, next xconsumer.Profiles) (reporter.Reporter, error) {
	cfg.ExtraSampleAttrProd = labelKey{}
	return reporter.NewCollector(cfg, next)
}

// labelKey is a samples.SampleAttrProducer that adds no attribute (upstream
// already writes the labels as process.context.label.<key>) and returns the
// labels as a comparable value for the aggregation key.
type labelKey struct{}

var _ samples.SampleAttrProducer = labelKey{}

// CollectExtraSampleMeta returns the trace's labels as one string, keys in
// order, each key and value length-prefixed, or nil when it has none.
func (labelKey) CollectExtraSampleMeta(trace *libpf.Trace, _ *samples.TraceEventMeta) any {
	if len(trace.CustomLabels) == 0 {
		return nil
	}
	keys := make([]libpf.String, 0, len(trace.CustomLabels))
	for k := range trace.CustomLabels {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b libpf.String) int { return strings.Compare(a.String(), b.String()) })
	var sb strings.Builder
	for _, k := range keys {
		for _, s := range [2]string{k.String(), trace.CustomLabels[k].String()} {
			sb.WriteString(strconv.Itoa(len(s)))
			sb.WriteByte(':')
			sb.WriteString(s)
		}
	}
	return sb.String()
}

// ExtraSampleAttrs adds nothing.
func (labelKey) ExtraSampleAttrs(*samples.AttrTableManager, any) []int32 { return nil }
