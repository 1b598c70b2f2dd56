// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/xprocessor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor/internal/metadatatest"
)

// withPID is an eBPF resource of the process pid, plus extra.
func withPID(pid int64, extra map[string]any) map[string]any {
	m := podResourceOrNot(extra)
	m["process.pid"] = pid
	return m
}

// podResourceOrNot is a pod's resource when extra names a pod, else a
// plain eBPF resource.
func podResourceOrNot(extra map[string]any) map[string]any {
	if _, ok := extra["k8s.pod.name"]; ok {
		return podResource(extra)
	}
	return ebpfResource(extra)
}

// coverageWant is the gauge's points: every source, with the counts given
// (0 for the others).
func coverageWant(counts map[string]int64) []metricdata.DataPoint[int64] {
	var dps []metricdata.DataPoint[int64]
	for s := range numSources {
		dps = append(dps, metricdata.DataPoint[int64]{
			Attributes: attribute.NewSet(attribute.String("source", s.String())),
			Value:      counts[s.String()],
		})
	}
	return dps
}

// TestCoverageCountsProcessesByRule: the processes of a node, through the
// processor as the DaemonSet agent runs it: two named by OTEL_SERVICE_NAME
// (one of them in two requests), one by its Kubernetes workload, one by its
// pod's name, one unnamed, and a resource without process.pid (not a
// process of the node). Then the window passes for all but one.
func TestCoverageCountsProcessesByRule(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	p, err := newServiceNameProcessor(metadatatest.NewSettings(tel), k8sCfg(true))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.shutdown(context.Background())) })
	now := time.Unix(1_700_000_000, 0)
	p.now = func() time.Time { return now }

	// Before any profile: every source at 0.
	metadatatest.AssertEqualProcessorServiceNameProcesses(t, tel, coverageWant(nil), metricdatatest.IgnoreTimestamp())

	_, err = p.processProfiles(context.Background(), newProfiles(t,
		withPID(10, map[string]any{envSvc: "checkout"}),
		withPID(11, map[string]any{envSvc: "billing"}),
		withPID(12, map[string]any{"k8s.pod.name": "cart-7d4b9c8f6-x2x9q", keyK8sDeploymentName: "cart"}),
		withPID(13, map[string]any{"k8s.pod.name": "debug-shell"}),
		withPID(14, nil),
		map[string]any{"service.name": "sdk-sent"},
	))
	require.NoError(t, err)
	now = now.Add(time.Minute)
	_, err = p.processProfiles(context.Background(), newProfiles(t, withPID(10, map[string]any{envSvc: "checkout"})))
	require.NoError(t, err)
	metadatatest.AssertEqualProcessorServiceNameProcesses(t, tel, coverageWant(map[string]int64{
		"otel_service_name": 2, "k8s_workload": 1, "k8s_pod": 1, "unknown_service": 1,
	}), metricdatatest.IgnoreTimestamp())

	// Four minutes after the first request (5 in all) the processes of the
	// first request are still counted; past the window only pid 10, seen a
	// minute later, is.
	now = now.Add(4 * time.Minute)
	metadatatest.AssertEqualProcessorServiceNameProcesses(t, tel, coverageWant(map[string]int64{
		"otel_service_name": 2, "k8s_workload": 1, "k8s_pod": 1, "unknown_service": 1,
	}), metricdatatest.IgnoreTimestamp())
	now = now.Add(time.Second)
	metadatatest.AssertEqualProcessorServiceNameProcesses(t, tel, coverageWant(map[string]int64{
		"otel_service_name": 1,
	}), metricdatatest.IgnoreTimestamp())
	now = now.Add(time.Minute)
	metadatatest.AssertEqualProcessorServiceNameProcesses(t, tel, coverageWant(nil), metricdatatest.IgnoreTimestamp())
}

// seen records one request's processes, given as pid, source pairs.
func seen(c *coverage, now time.Time, pidSrc ...any) {
	t := c.begin(now)
	defer c.end()
	for i := 0; i < len(pidSrc); i += 2 {
		c.add(t, int64(pidSrc[i].(int)), pidSrc[i+1].(source))
	}
}

// TestCoverageTakesTheLatestRule: a process counts once, under the rule
// that named it last (its pod found after its first profiles).
func TestCoverageTakesTheLatestRule(t *testing.T) {
	c := newCoverage(time.Minute, 10)
	now := time.Unix(1_700_000_000, 0)
	seen(c, now, 7, sourceUnknownService)
	seen(c, now.Add(time.Second), 7, sourceK8sWorkload)
	got := c.counts(now.Add(2 * time.Second))
	assert.Equal(t, int64(1), got[sourceK8sWorkload])
	assert.Zero(t, got[sourceUnknownService])
}

// TestCoverageBounded: past its bound the tracker forgets the expired
// processes first and then counts no new one; its map never grows past
// the bound.
func TestCoverageBounded(t *testing.T) {
	c := newCoverage(time.Minute, 3)
	now := time.Unix(1_700_000_000, 0)
	seen(c, now, 1, sourceUnknownService, 2, sourceUnknownService)
	seen(c, now.Add(50*time.Second), 3, sourceUnknownService, 4, sourceUnknownService, 1, sourceOTelServiceName)
	assert.Len(t, c.processes, 3, "pid 4 found no room")
	assert.Equal(t, int64(1), c.counts(now.Add(50 * time.Second))[sourceOTelServiceName])
	// Pid 2 expired: a new process takes its place.
	seen(c, now.Add(61*time.Second), 5, sourceUnknownService)
	got := c.counts(now.Add(61 * time.Second))
	assert.Len(t, c.processes, 3)
	assert.Equal(t, int64(2), got[sourceUnknownService], "pids 3 and 5")
	assert.Equal(t, int64(1), got[sourceOTelServiceName], "pid 1")
}

// TestCoverageThroughTheFactory: the processor the factory makes reports
// the gauge (the callback is registered on creation).
func TestCoverageThroughTheFactory(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	p, err := NewFactory().(xprocessor.Factory).CreateProfiles(context.Background(),
		metadatatest.NewSettings(tel), createDefaultConfig(), new(consumertest.ProfilesSink))
	require.NoError(t, err)
	require.NoError(t, p.ConsumeProfiles(context.Background(), newProfiles(t, withPID(1, nil), withPID(2, map[string]any{envSvc: "a"}))))
	metadatatest.AssertEqualProcessorServiceNameProcesses(t, tel, coverageWant(map[string]int64{
		"otel_service_name": 1, "unknown_service": 1,
	}), metricdatatest.IgnoreTimestamp())
	require.NoError(t, p.Shutdown(context.Background()))
}
