// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// TestLifecycle is the lifecycle test mdatagen does not generate for a
// profiles-only exporter, with the config of metadata.yaml's tests::config.
func TestLifecycle(t *testing.T) {
	factory := NewFactory().(xexporter.Factory)
	cm, err := confmaptest.LoadConf("metadata.yaml")
	require.NoError(t, err)
	cfg := factory.CreateDefaultConfig()
	sub, err := cm.Sub("tests::config")
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(&cfg))

	t.Run("shutdown", func(t *testing.T) {
		exp, err := factory.CreateProfiles(context.Background(), exportertest.NewNopSettings(typ), cfg)
		require.NoError(t, err)
		require.NoError(t, exp.Shutdown(context.Background()))
	})
	t.Run("lifecycle", func(t *testing.T) {
		exp, err := factory.CreateProfiles(context.Background(), exportertest.NewNopSettings(typ), cfg)
		require.NoError(t, err)
		require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
		assert.True(t, exp.Capabilities().MutatesData)
		pd := pprofile.NewProfiles()
		require.NoError(t, exp.ConsumeProfiles(context.Background(), pd)) // queued
		require.NoError(t, exp.Shutdown(context.Background()))
	})
}

func TestShutdownDoesNotWaitForRetryAfter(t *testing.T) {
	ing := newFakeIngest(t, nil)
	cfg := NewFactory().CreateDefaultConfig().(*Config) // with the sending queue
	cfg.ClientConfig.Endpoint = ing.srv.URL
	cfg.Key = testKey
	exp, err := NewFactory().(xexporter.Factory).CreateProfiles(context.Background(), exportertest.NewNopSettings(typ), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	state := exp.(*profilesExporter).exp.state
	state.closeGate(time.Now().Add(time.Hour))

	require.NoError(t, exp.ConsumeProfiles(context.Background(), batch(10, 51)))
	done := make(chan error, 1)
	go func() { done <- exp.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("shutdown waited for the Retry-After gate")
	}
	assert.Empty(t, ing.requests(), "nothing left before the gate opened")
}

func TestStartFailsOnBadClientSettings(t *testing.T) {
	cfg := testConfig("https://ingest.invalid")
	cfg.ClientConfig.ProxyURL = "::not a url"
	exp, err := NewFactory().(xexporter.Factory).CreateProfiles(context.Background(), exportertest.NewNopSettings(typ), cfg)
	require.NoError(t, err)
	assert.Error(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, exp.Shutdown(context.Background()))
}
