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

	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/memlock"
	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/metadata"
)

// NewFactory returns the upstream eBPF profiler receiver factory with
// include_env_vars defaulting to DefaultIncludeEnvVars, and a start-up step
// before upstream's Start: memlock.Prepare, which lets the profiler start
// without CAP_SYS_RESOURCE on kernels that charge BPF memory to the memory
// cgroup, and otherwise says what to grant; and a reporter (newReporter)
// that keeps samples with different goroutine labels apart. Everything else, including how
// the receiver is created and started, is upstream's.
func NewFactory() receiver.Factory {
	upstream := ebpfcollector.NewFactory()
	return xreceiver.NewFactory(
		metadata.Type,
		func() component.Config {
			cfg := upstream.CreateDefaultConfig().(*config.Config)
			cfg.IncludeEnvVars = DefaultIncludeEnvVars
			return cfg
		},
		xreceiver.WithProfiles(createProfiles(ebpfcollector.BuildProfilesReceiver(ebpfcollector.WithReporterFactory(newReporter)), memlock.Prepare), metadata.ProfilesStability),
	)
}

// createProfiles wraps upstream's receiver so that prepare runs first in Start.
func createProfiles(upstream xreceiver.CreateProfilesFunc, prepare func(*zap.Logger) error) xreceiver.CreateProfilesFunc {
	return func(ctx context.Context, set receiver.Settings, cfg component.Config, next xconsumer.Profiles) (xreceiver.Profiles, error) {
		r, err := upstream(ctx, set, cfg, next)
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
