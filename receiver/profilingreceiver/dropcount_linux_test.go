// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"

	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/metadatatest"
)

// profilesWith returns a batch of n samples.
func profilesWith(n int) pprofile.Profiles {
	pd := pprofile.NewProfiles()
	p := pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
	for range n {
		p.Samples().AppendEmpty()
	}
	return pd
}

// TestDropsCountedByReason: the next consumer upstream's reporter sends to
// counts each refused batch and its samples by reason: the queue storage
// full (as queue_storage refuses, through the exporter's queue), the queue
// full, the memory_limiter refusing, anything else; accepted batches are not counted.
func TestDropsCountedByReason(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	refuse := []error{
		nil,
		fmt.Errorf("%w: queue_storage directory /q: no space left on device", storage.ErrStorageFull),
		errors.Join(errors.New("part 1"), fmt.Errorf("exporter: %w", storage.ErrStorageFull)),
		fmt.Errorf("exporter: %w", exporterhelper.ErrQueueIsFull),
		errors.New("data refused due to high memory usage"),
		errors.New("connection refused"),
	}
	i := 0
	next, err := xconsumer.NewProfiles(func(context.Context, pprofile.Profiles) error {
		err := refuse[i]
		i++
		return err
	})
	require.NoError(t, err)
	var reporterNext xconsumer.Profiles
	create := createProfiles(func(_ context.Context, _ receiver.Settings, _ component.Config, n xconsumer.Profiles) (xreceiver.Profiles, error) {
		reporterNext = n
		return &fakeProfiles{}, nil
	}, func(*zap.Logger) error { return nil })
	_, err = create(context.Background(), metadatatest.NewSettings(tt), &NewFactory().CreateDefaultConfig().(*Config).Config, next)
	require.NoError(t, err)

	for n := range refuse {
		_ = reporterNext.ConsumeProfiles(context.Background(), profilesWith(10*(n+1)))
	}
	reason := func(r string) attribute.Set { return attribute.NewSet(attribute.String("reason", r)) }
	metadatatest.AssertEqualReceiverProfilingBatchesDropped(t, tt, []metricdata.DataPoint[int64]{
		{Value: 2, Attributes: reason("storage_full")},
		{Value: 1, Attributes: reason("queue_full")},
		{Value: 1, Attributes: reason("memory_limit")},
		{Value: 1, Attributes: reason("other")},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualReceiverProfilingSamplesDropped(t, tt, []metricdata.DataPoint[int64]{
		{Value: 20 + 30, Attributes: reason("storage_full")},
		{Value: 40, Attributes: reason("queue_full")},
		{Value: 50, Attributes: reason("memory_limit")},
		{Value: 60, Attributes: reason("other")},
	}, metricdatatest.IgnoreTimestamp())
}
