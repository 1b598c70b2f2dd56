// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build !(linux && (amd64 || arm64))

package profilingreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver"

import (
	"context"
	"runtime"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"

	"github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver/internal/metadata"
)

// Config keeps the receiver's settings as written, so that a configuration
// shared with Linux hosts still passes `validate` here. They are not used:
// the receiver cannot run on this system.
type Config struct {
	Settings map[string]any `mapstructure:",remain"`
}

// NewFactory returns a factory whose receiver refuses to be created: the eBPF
// profiler needs the Linux kernel.
func NewFactory() receiver.Factory {
	return xreceiver.NewFactory(
		metadata.Type,
		func() component.Config { return &Config{} },
		xreceiver.WithProfiles(createProfiles, metadata.ProfilesStability),
	)
}

func createProfiles(context.Context, receiver.Settings, component.Config, xconsumer.Profiles) (xreceiver.Profiles, error) {
	return nil, errNeedsLinux(runtime.GOOS, runtime.GOARCH)
}
