// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package mtlsconverter fails a configuration in which a gRPC server or
// client names the mtls extension in its middlewares and also sets its own
// tls settings. The extension's credentials replace the component's (see
// extension/mtlsextension), so those settings would be ignored without a
// word: a ca_file the user believes is checked, or insecure: true the user
// believes is plaintext. The error names the setting's path, as validate
// does for a wrong value.
package mtlsconverter // import "github.com/nexovue/otelcol-nexovue/converter/mtlsconverter"

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/confmap"
)

// extensionType is the mtls extension's component type.
const extensionType = "mtls"

// maxDepth bounds the walk of a component's settings: the gRPC settings of
// the OTLP receiver sit at depth 2 (protocols::grpc), of an exporter at 0.
const maxDepth = 6

// NewFactory returns the converter factory ocb wires into the binary.
func NewFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(confmap.ConverterSettings) confmap.Converter {
		return converter{}
	})
}

type converter struct{}

// Convert returns an error naming every tls setting, set to something other
// than its default, of a receiver or exporter whose middlewares name an
// mtls extension. It never changes the configuration.
func (converter) Convert(_ context.Context, conf *confmap.Conf) error {
	var errs []error
	for _, kind := range []struct{ key, role string }{{"receivers", "server"}, {"exporters", "client"}} {
		components, ok := conf.Get(kind.key).(map[string]any)
		if !ok {
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(components)) {
			if settings, ok := components[id].(map[string]any); ok {
				errs = append(errs, check(kind.key+confmap.KeyDelimiter+id, kind.role, settings, 0)...)
			}
		}
	}
	return errors.Join(errs...)
}

// check looks for a map with middlewares naming an mtls extension in
// settings (at path, of a gRPC server or client: role) and below it, and
// returns an error for each tls setting beside it.
func check(path, role string, settings map[string]any, depth int) []error {
	var errs []error
	if id := mtlsMiddleware(settings["middlewares"]); id != "" {
		if tls, ok := settings["tls"].(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(tls)) {
				if isZero(tls[k]) {
					continue
				}
				errs = append(errs, fmt.Errorf("%s%stls%s%s: set beside the %s extension in %s%smiddlewares, whose TLS credentials replace this %s's tls settings, so it would be ignored: set it on extensions%s%s instead, or remove %s from middlewares",
					path, confmap.KeyDelimiter, confmap.KeyDelimiter, k, id, path, confmap.KeyDelimiter, role, confmap.KeyDelimiter, id, id))
			}
		}
	}
	if depth >= maxDepth {
		return errs
	}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if sub, ok := settings[k].(map[string]any); ok && k != "tls" {
			errs = append(errs, check(path+confmap.KeyDelimiter+k, role, sub, depth+1)...)
		}
	}
	return errs
}

// mtlsMiddleware returns the id of the first mtls extension named in a
// middlewares list ("" if none).
func mtlsMiddleware(v any) string {
	list, ok := v.([]any)
	if !ok {
		return ""
	}
	for _, m := range list {
		entry, ok := m.(map[string]any)
		if !ok {
			continue
		}
		id, ok := entry["id"].(string)
		if !ok {
			continue
		}
		if typ, _, _ := strings.Cut(id, "/"); typ == extensionType {
			return id
		}
	}
	return ""
}

// isZero reports whether a tls setting holds its default: false, "", 0,
// an empty list or map, or nothing (a value from an environment variable
// may be the string "false" or "0").
func isZero(v any) bool {
	if v == nil {
		return true
	}
	if s, ok := v.(string); ok {
		return s == "" || s == "0" || strings.EqualFold(s, "false")
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Map:
		return rv.Len() == 0
	default:
		return rv.IsZero()
	}
}
