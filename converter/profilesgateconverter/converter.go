// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package profilesgateconverter turns the Collector's refusal of a profiles
// pipeline without the profiles feature gate into a message that says what to
// type. Upstream's message names the gate but not the flag; users copying a
// config from nexovue's documentation need the flag.
package profilesgateconverter // import "github.com/nexovue/otelcol-nexovue/converter/profilesgateconverter"

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/featuregate"

	"github.com/nexovue/otelcol-nexovue/internal/collectorversion"
)

// GateID is the Collector feature gate that enables the profiles signal.
const GateID = "service.profilesSupport"

// Flag is the command-line flag that enables GateID.
const Flag = "--feature-gates=" + GateID

// NewFactory returns the converter factory ocb wires into the binary.
func NewFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(confmap.ConverterSettings) confmap.Converter {
		return converter{gateEnabled: gateEnabled, version: collectorversion.Get}
	})
}

type converter struct {
	gateEnabled func() (enabled, registered bool)
	// version is the Collector release the binary was built with, from its
	// build information ("" if unknown).
	version func() string
}

// Convert fails when the configuration has a profiles pipeline and the gate is
// registered but off. It never changes the configuration.
func (c converter) Convert(_ context.Context, conf *confmap.Conf) error {
	if enabled, registered := c.gateEnabled(); enabled || !registered {
		return nil
	}
	pipelines, ok := conf.Get("service::pipelines").(map[string]any)
	if !ok {
		return nil
	}
	var profiles []string
	for id := range pipelines {
		if signal, _, _ := strings.Cut(id, "/"); signal == "profiles" {
			profiles = append(profiles, id)
		}
	}
	if len(profiles) == 0 {
		return nil
	}
	slices.Sort(profiles)
	collector := "this Collector"
	if v := c.version(); v != "" {
		collector += " (" + v + ")"
	}
	return fmt.Errorf("service::pipelines::%s: profiles are an alpha signal in %s; "+
		"start the collector with %s", profiles[0], collector, Flag)
}

func gateEnabled() (enabled, registered bool) {
	featuregate.GlobalRegistry().VisitAll(func(g *featuregate.Gate) {
		if g.ID() == GateID {
			enabled, registered = g.IsEnabled(), true
		}
	})
	return enabled, registered
}
