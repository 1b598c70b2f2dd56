// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver"

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/metadata"
)

// Reasons of otelcol_receiver_profiling_batches_dropped.
const (
	dropStorageFull = "storage_full"
	dropQueueFull   = "queue_full"
	dropMemoryLimit = "memory_limit"
	dropOther       = "other"
)

// memoryLimitText is the message of the memory_limiter's ErrDataRefused,
// which lives in an internal package (go.opentelemetry.io/collector/internal/memorylimiter),
// so it is matched by its text. The memory_limiter counts no refused
// profile samples itself (its refused_* metrics are for spans, metric
// points and log records only), so this count is the one an alert on an
// agent's memory limiter reads.
const memoryLimitText = "data refused due to high memory usage"

// countDrops is the next consumer of upstream's reporter with every refused
// batch counted: the reporter logs the error and drops the batch (it sends
// no batch twice), so without this a full queue would lose profiles
// silently.
type countDrops struct {
	xconsumer.Profiles
	tb *metadata.TelemetryBuilder
}

func (c countDrops) ConsumeProfiles(ctx context.Context, pd pprofile.Profiles) error {
	n := pd.SampleCount() // before next may take the batch apart
	err := c.Profiles.ConsumeProfiles(ctx, pd)
	if err != nil {
		attrs := metric.WithAttributes(attribute.String("reason", dropReason(err)))
		c.tb.ReceiverProfilingBatchesDropped.Add(ctx, 1, attrs)
		c.tb.ReceiverProfilingSamplesDropped.Add(ctx, int64(n), attrs)
	}
	return err
}

func (c countDrops) Capabilities() consumer.Capabilities { return c.Profiles.Capabilities() }

func dropReason(err error) string {
	switch {
	case errors.Is(err, storage.ErrStorageFull):
		return dropStorageFull
	case errors.Is(err, exporterhelper.ErrQueueIsFull):
		return dropQueueFull
	case strings.Contains(err.Error(), memoryLimitText):
		return dropMemoryLimit
	}
	return dropOther
}
