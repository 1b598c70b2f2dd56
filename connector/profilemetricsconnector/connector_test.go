// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilemetricsconnector

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/connector/xconnector"
	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/nexovue/otelcol-nexovue/connector/profilemetricsconnector/internal/metadata"
)

// The connector built by the factory sends every interval, and what is left
// on shutdown.
func TestConnectorSendsOnIntervalAndShutdown(t *testing.T) {
	sink := &consumertest.MetricsSink{}
	cfg := testConfig(func(c *Config) { c.Interval = 50 * time.Millisecond; c.Temporality = TemporalityDelta })
	c, err := NewFactory().(xconnector.Factory).CreateProfilesToMetrics(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	assert.False(t, c.Capabilities().MutatesData)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))

	require.NoError(t, c.ConsumeProfiles(context.Background(), pprofCPUBatch("api")))
	require.Eventually(t, func() bool { return len(sink.AllMetrics()) > 0 }, 10*time.Second, 10*time.Millisecond)

	require.NoError(t, c.ConsumeProfiles(context.Background(), pprofCPUBatch("api")))
	require.NoError(t, c.Shutdown(context.Background()))
	var total float64
	for _, md := range sink.AllMetrics() {
		total += values(md)["profile.cpu.time{service.name=api}"]
	}
	assert.InDelta(t, 0.08, total, 1e-9, "two batches of 0.04 s, over the intervals and the shutdown")
	require.NoError(t, c.Shutdown(context.Background()), "a second shutdown is harmless")
}

// A refusing metrics pipeline does not fail the profiles pipeline.
func TestConnectorNextRefuses(t *testing.T) {
	cfg := testConfig(nil)
	c, err := NewFactory().(xconnector.Factory).CreateProfilesToMetrics(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, consumertest.NewErr(assert.AnError))
	require.NoError(t, err)
	require.NoError(t, c.ConsumeProfiles(context.Background(), pprofCPUBatch("api")))
	require.NoError(t, c.Shutdown(context.Background()))
}
