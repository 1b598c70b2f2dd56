// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver"

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"
	ebpfcollector "go.opentelemetry.io/ebpf-profiler/collector"
	"go.opentelemetry.io/ebpf-profiler/collector/config"

	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/metadata"
)

// NewFactory returns the upstream eBPF profiler receiver factory with
// include_env_vars defaulting to DefaultIncludeEnvVars. Everything else,
// including how the receiver is created and started, is upstream's.
func NewFactory() receiver.Factory {
	upstream := ebpfcollector.NewFactory()
	return xreceiver.NewFactory(
		metadata.Type,
		func() component.Config {
			cfg := upstream.CreateDefaultConfig().(*config.Config)
			cfg.IncludeEnvVars = DefaultIncludeEnvVars
			return cfg
		},
		xreceiver.WithProfiles(ebpfcollector.BuildProfilesReceiver(), metadata.ProfilesStability),
	)
}
