// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor // import "github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor"

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
)

const (
	// defaultMaxValueLength is the bound, in bytes, on service.name and on
	// every value taken from OTEL_RESOURCE_ATTRIBUTES.
	defaultMaxValueLength = 255
	// minMaxValueLength keeps room for "unknown_service:" and a few bytes
	// of an executable name.
	minMaxValueLength = 32
	// maxMaxValueLength is the largest bound accepted.
	maxMaxValueLength = 4096

	// defaultCoverageWindow is how long a process stays counted in
	// otelcol_processor_service_name_processes after its last profile. The
	// eBPF profiler reports a process only in the batches where it was on
	// the CPU (or, with off-CPU profiles, waited), so a process that is
	// mostly idle appears every few batches: a window of many reporter
	// intervals counts it steadily; five minutes is the usual alerting
	// resolution.
	defaultCoverageWindow = 5 * time.Minute
	// minCoverageWindow and maxCoverageWindow bound coverage_window.
	minCoverageWindow = time.Second
	maxCoverageWindow = 24 * time.Hour
)

// Config is the configuration of the service_name processor.
type Config struct {
	// KeepEnvAttributes keeps the process.environment_variable.OTEL_SERVICE_NAME
	// and process.environment_variable.OTEL_RESOURCE_ATTRIBUTES resource
	// attributes after naming. By default they are removed, since a process
	// environment may hold secrets.
	KeepEnvAttributes bool `mapstructure:"keep_env_attributes"`

	// MaxValueLength bounds, in bytes, the service.name the processor sets and
	// every attribute value it takes from OTEL_RESOURCE_ATTRIBUTES. Longer
	// values are cut on a UTF-8 boundary.
	MaxValueLength int `mapstructure:"max_value_length"`

	// Kubernetes names the processes of pods after their pod, from the
	// attributes k8s_attributes adds (see README, "Kubernetes").
	Kubernetes KubernetesConfig `mapstructure:"kubernetes"`

	// CoverageWindow is how long a process stays counted in the coverage
	// gauge, otelcol_processor_service_name_processes, after its last
	// profile (see README, "Coverage").
	CoverageWindow time.Duration `mapstructure:"coverage_window"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// KubernetesConfig configures the Kubernetes naming rules.
type KubernetesConfig struct {
	// Enabled names a process that is in a pod, and has no name from its
	// environment, after its pod's annotation, labels, workload or name,
	// and sets service.namespace from the pod's annotation or namespace.
	Enabled bool `mapstructure:"enabled"`
	// UseLabels lets the pod's app.kubernetes.io/instance and
	// app.kubernetes.io/name labels name it, before its workload.
	UseLabels bool `mapstructure:"use_labels"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

func createDefaultConfig() component.Config {
	return &Config{
		KeepEnvAttributes: false,
		MaxValueLength:    defaultMaxValueLength,
		Kubernetes:        KubernetesConfig{Enabled: false, UseLabels: true},
		CoverageWindow:    defaultCoverageWindow,
	}
}

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	if cfg.MaxValueLength < minMaxValueLength || cfg.MaxValueLength > maxMaxValueLength {
		return fmt.Errorf("max_value_length: must be between %d and %d bytes, got %d",
			minMaxValueLength, maxMaxValueLength, cfg.MaxValueLength)
	}
	if cfg.CoverageWindow < minCoverageWindow || cfg.CoverageWindow > maxCoverageWindow {
		return fmt.Errorf("coverage_window: must be between %s and %s, got %s",
			minCoverageWindow, maxCoverageWindow, cfg.CoverageWindow)
	}
	return nil
}
