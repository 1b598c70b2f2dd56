// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/collector/processor/xprocessor"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
	"github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor/internal/metadata"
)

// TestOffCPUProfilesPassThrough: processes whose resources carry the eBPF
// profiler's off-CPU profile next to their CPU one are named (from
// OTEL_SERVICE_NAME, and on Kubernetes from the pod's workload), and every
// profile, off-CPU durations included, is left as it was.
func TestOffCPUProfilesPassThrough(t *testing.T) {
	for _, k8s := range []bool{false, true} {
		t.Run(fmt.Sprintf("kubernetes=%v", k8s), func(t *testing.T) {
			pd := profilegen.Generate(profilegen.Config{Samples: 200, OffCPUSamples: 200, Depth: 16, Stacks: 40, Resources: 4, Seq: true, Seed: 28})
			wantNames := map[string]string{}
			for i, rp := range pd.ResourceProfiles().All() {
				attrs := rp.Resource().Attributes()
				old, _ := attrs.Get("service.name")
				name := fmt.Sprintf("checkout-%d", i)
				if k8s {
					attrs.PutStr("k8s.namespace.name", "shop")
					attrs.PutStr("k8s.pod.name", name+"-7d4b9c8f6-x2x9q")
					attrs.PutStr(keyK8sDeploymentName, name)
				} else {
					attrs.PutStr(envSvc, name)
				}
				wantNames[old.Str()] = name
				attrs.Remove("service.name")
			}
			wantProfiles := profiles(pd)
			cfg := defaultCfg()
			if k8s {
				cfg = k8sCfg(false)
			}
			sink := new(consumertest.ProfilesSink)
			p, err := NewFactory().(xprocessor.Factory).CreateProfiles(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
			require.NoError(t, err)
			require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
			require.NoError(t, p.ConsumeProfiles(context.Background(), pd))
			require.NoError(t, p.Shutdown(context.Background()))
			require.Len(t, sink.AllProfiles(), 1)
			out := sink.AllProfiles()[0]
			assert.Equal(t, wantProfiles, profiles(out), "profiles unchanged, off-CPU values included")

			nanos, offSamples, cpu := profilegen.OffCPUTotals(out)
			assert.Len(t, nanos, 4)
			for old, name := range wantNames {
				assert.Contains(t, nanos, name, "off-CPU time of %s is named %s", old, name)
				assert.Positive(t, offSamples[name])
			}
			assert.Equal(t, int64(200), cpu)
		})
	}
}

// profiles resolves every sample of pd with its profile, without the
// resource (which the processor names).
func profiles(pd pprofile.Profiles) []string {
	c := pprofile.NewProfiles()
	pd.CopyTo(c)
	for _, rp := range c.ResourceProfiles().All() {
		rp.Resource().Attributes().Clear()
	}
	return profilesplit.ResolveSamples(c, 0)
}
