// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package memlock_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/receiver/xreceiver"
	"go.uber.org/zap"

	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver"
	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/memlock"
	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/metadata"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

func init() { memlock.ChildModes["receiver"] = startChild }

// startChild starts the real receiver (eBPF) in this process and waits for
// its first profiles; its log goes to standard error.
func startChild() int {
	zc := zap.NewDevelopmentConfig()
	zc.Level = zap.NewAtomicLevelAt(zap.InfoLevel)
	logger, lerr := zc.Build()
	if lerr != nil {
		fmt.Println("logger:", lerr)
		return 1
	}
	cfg := profilingreceiver.NewFactory().CreateDefaultConfig().(*profilingreceiver.Config)
	cfg.ReporterInterval = time.Second
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = logger
	sink := new(consumertest.ProfilesSink)
	r, err := profilingreceiver.NewFactory().(xreceiver.Factory).CreateProfiles(context.Background(), set, cfg, sink)
	if err != nil {
		fmt.Println("create:", err)
		return 1
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		fmt.Println("start:", err)
		return 1
	}
	defer r.Shutdown(context.Background())
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if sink.SampleCount() > 0 {
			fmt.Println("profiles: received")
			return 0
		}
	}
	fmt.Println("profiles: none in 60s")
	return 1
}

// TestReceiverStartsHere starts the real receiver (our factory, upstream's
// eBPF profiler) in a child process on this machine, as the collector does: where CAP_SYS_RESOURCE is missing (as on
// this project's machines) it logs the memlock line once and profiles arrive;
// upstream's "failed to set temporary rlimit" never shows.
func TestReceiverStartsHere(t *testing.T) {
	testenv.RequireTracefs(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memlock.ChildEnv+"=receiver")
	out, err := cmd.CombinedOutput()
	log := string(out)
	require.NoError(t, err, log)
	require.Contains(t, log, "profiles: received")
	require.NotContains(t, log, "failed to set temporary rlimit")
	want := 1
	if testenv.CanRaiseMemlock(t) {
		want = 0
	}
	require.Equal(t, want, strings.Count(log, "RLIMIT_MEMLOCK may not be raised here (no CAP_SYS_RESOURCE)"), log)
	t.Logf("child:\n%s", log)
}
