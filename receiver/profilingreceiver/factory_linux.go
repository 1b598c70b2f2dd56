// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"
	ebpfcollector "go.opentelemetry.io/ebpf-profiler/collector"
	"go.opentelemetry.io/ebpf-profiler/collector/config"
	"go.uber.org/zap"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/memlock"
	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/metadata"
	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/offcpu"
)

// NewFactory returns the upstream eBPF profiler receiver factory with
// include_env_vars defaulting to DefaultIncludeEnvVars, and a start-up step
// before upstream's Start: memlock.Prepare, which lets the profiler start
// without CAP_SYS_RESOURCE on kernels that charge BPF memory to the memory
// cgroup, and otherwise says what to grant. With off_cpu_threshold above 0,
// withOffCPUFallback first checks that the kernel can attach upstream's
// off-CPU hooks and, where it cannot, creates upstream's receiver with
// off-CPU profiling off instead of letting it fail to start; and a reporter
// (newReporter) that keeps samples with different goroutine labels apart.
// With exec_sync_per_second above 0, withExecSync attaches a program of ours
// that has upstream synchronise a process when it execs (execsync_linux.go).
// Everything else, including how the receiver is created and started, is
// upstream's.
func NewFactory() receiver.Factory {
	upstream := ebpfcollector.NewFactory()
	return xreceiver.NewFactory(
		metadata.Type,
		func() component.Config {
			cfg := upstream.CreateDefaultConfig().(*config.Config)
			cfg.IncludeEnvVars = DefaultIncludeEnvVars
			return &Config{Config: *cfg, ExecSyncPerSecond: DefaultExecSyncPerSecond}
		},
		xreceiver.WithProfiles(withExecSync(withOffCPUFallback(createProfiles(ebpfcollector.BuildProfilesReceiver(
			ebpfcollector.WithReporterFactory(newReporter),
			ebpfcollector.WithExecutableReporter(executableHolder{held: debugfile.Held}),
		), memlock.Prepare), offcpu.Probe), attachExecSync), metadata.ProfilesStability),
	)
}

// createProfiles wraps upstream's receiver so that prepare runs first in
// Start, and counts the batches its next consumer refuses (countDrops).
func createProfiles(upstream xreceiver.CreateProfilesFunc, prepare func(*zap.Logger) error) xreceiver.CreateProfilesFunc {
	return func(ctx context.Context, set receiver.Settings, cfg component.Config, next xconsumer.Profiles) (xreceiver.Profiles, error) {
		tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
		if err != nil {
			return nil, err
		}
		r, err := upstream(ctx, set, cfg, countDrops{Profiles: next, tb: tb})
		if err != nil {
			return nil, err
		}
		ignore := false
		if c, ok := cfg.(*config.Config); ok {
			ignore = c.ErrorMode == config.IgnoreError
		}
		return &profilesReceiver{Profiles: r, logger: set.Logger, prepare: prepare, ignoreErrors: ignore}, nil
	}
}

type profilesReceiver struct {
	xreceiver.Profiles
	logger  *zap.Logger
	prepare func(*zap.Logger) error
	// ignoreErrors is error_mode: ignore. The error is logged and upstream's
	// Start runs anyway, failing and continuing without profiling as
	// upstream does in that mode.
	ignoreErrors bool
}

func (r *profilesReceiver) Start(ctx context.Context, h component.Host) error {
	if err := r.prepare(r.logger); err != nil {
		if !r.ignoreErrors {
			return err
		}
		r.logger.Error("eBPF profiler cannot start", zap.Error(err))
	}
	return r.Profiles.Start(ctx, h)
}

// OffCPUUnavailableMessage is the warning logged once when off_cpu_threshold
// is above 0 and the kernel cannot attach what off-CPU profiling needs.
const OffCPUUnavailableMessage = "off-CPU profiling is off: this kernel cannot attach what it needs, so the receiver profiles on-CPU only (off_cpu_threshold is ignored)"

// withOffCPUFallback runs probe when off_cpu_threshold is above 0. Where the
// kernel can attach upstream's off-CPU hooks, create runs with the
// configuration as it is. Where it cannot, create runs with a copy whose
// off_cpu_threshold is 0 (upstream would otherwise stop the collector with
// "failed to start off-cpu profiling"), and one warning names the missing
// kernel feature and the setting. Either way the gauge
// otelcol_receiver_profiling_off_cpu_available says which (1 or 0).
func withOffCPUFallback(create xreceiver.CreateProfilesFunc, probe func() offcpu.Result) xreceiver.CreateProfilesFunc {
	return func(ctx context.Context, set receiver.Settings, cfg component.Config, next xconsumer.Profiles) (xreceiver.Profiles, error) {
		c, ok := cfg.(*config.Config)
		if !ok || c.OffCPUThreshold <= 0 {
			return create(ctx, set, cfg, next)
		}
		tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
		if err != nil {
			return nil, err
		}
		r := probe()
		if r.Available {
			tb.ReceiverProfilingOffCPUAvailable.Record(ctx, 1)
			return create(ctx, set, cfg, next)
		}
		tb.ReceiverProfilingOffCPUAvailable.Record(ctx, 0)
		set.Logger.Warn(OffCPUUnavailableMessage,
			zap.String("missing", r.Missing),
			zap.String("setting", "off_cpu_threshold"),
			zap.Float64("off_cpu_threshold", c.OffCPUThreshold),
			zap.Error(r.Err))
		onCPU := *c
		onCPU.OffCPUThreshold = 0
		return create(ctx, set, &onCPU, next)
	}
}
