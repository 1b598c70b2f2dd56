// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor/xprocessor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor/internal/metadatatest"
)

// newProfiles returns a request with one resource, holding one profile,
// per attribute map.
func newProfiles(t testing.TB, resources ...map[string]any) pprofile.Profiles {
	t.Helper()
	pd := pprofile.NewProfiles()
	for _, attrs := range resources {
		rp := pd.ResourceProfiles().AppendEmpty()
		require.NoError(t, rp.Resource().Attributes().FromRaw(attrs))
		rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
	}
	return pd
}

func TestProcessProfiles(t *testing.T) {
	const secret = "hunter2-secret"
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := metadatatest.NewSettings(tel)
	core, logs := observer.New(zap.DebugLevel)
	set.Logger = zap.New(core)

	sink := new(consumertest.ProfilesSink)
	p, err := NewFactory().(xprocessor.Factory).CreateProfiles(context.Background(), set, createDefaultConfig(), sink)
	require.NoError(t, err)
	assert.True(t, p.Capabilities().MutatesData)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))

	in := newProfiles(t,
		ebpfResource(map[string]any{"service.name": "payments"}),
		ebpfResource(map[string]any{envSvc: "checkout", envRA: "token=" + secret + "%zz"}),
		ebpfResource(map[string]any{envRA: "service.name=cart,=" + secret}),
		ebpfResource(nil),
		map[string]any{"process.pid": int64(1)},
	)
	require.NoError(t, p.ConsumeProfiles(context.Background(), in))
	require.NoError(t, p.Shutdown(context.Background()))

	require.Len(t, sink.AllProfiles(), 1)
	out := sink.AllProfiles()[0]
	rps := out.ResourceProfiles()
	require.Equal(t, 5, rps.Len())
	var names []string
	for i := range rps.Len() {
		attrs := rps.At(i).Resource().Attributes()
		v, ok := attrs.Get("service.name")
		require.True(t, ok)
		names = append(names, v.Str())
		for k, v := range attrs.All() {
			assert.NotContains(t, k, envAttrPrefix)
			assert.NotContains(t, v.AsString(), secret)
		}
		// The profiles themselves are left as they were.
		assert.Equal(t, 1, rps.At(i).ScopeProfiles().At(0).Profiles().Len())
	}
	assert.Equal(t, []string{"payments", "checkout", "cart", "unknown_service:java", "unknown_service"}, names)

	assert.Zero(t, logs.Len(), "the processor logs nothing, so no env value can reach the log")

	src := func(s string) attribute.Set { return attribute.NewSet(attribute.String("source", s)) }
	metadatatest.AssertEqualProcessorServiceNameResources(t, tel, []metricdata.DataPoint[int64]{
		{Attributes: src("existing"), Value: 1},
		{Attributes: src("otel_service_name"), Value: 1},
		{Attributes: src("otel_resource_attributes"), Value: 1},
		{Attributes: src("unknown_service"), Value: 2},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorServiceNameSkippedEntries(t, tel, []metricdata.DataPoint[int64]{
		{Value: 2},
	}, metricdatatest.IgnoreTimestamp())
}

func TestProcessProfilesEmpty(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	sink := new(consumertest.ProfilesSink)
	p, err := NewFactory().(xprocessor.Factory).CreateProfiles(context.Background(),
		metadatatest.NewSettings(tel), createDefaultConfig(), sink)
	require.NoError(t, err)
	require.NoError(t, p.ConsumeProfiles(context.Background(), pprofile.NewProfiles()))
	require.Len(t, sink.AllProfiles(), 1)
	assert.Zero(t, sink.AllProfiles()[0].ResourceProfiles().Len())
	_, err = tel.GetMetric("otelcol_processor_service_name_resources")
	assert.Error(t, err, "nothing is recorded for a request without resources")
}
