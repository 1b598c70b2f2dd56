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
	for _, kind := range []string{"receivers", "exporters"} {
		components, ok := conf.Get(kind).(map[string]any)
		if !ok {
			continue
		}
		ids := make([]string, 0, len(components))
		for id := range components {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if settings, ok := components[id].(map[string]any); ok {
				errs = append(errs, check(kind+confmap.KeyDelimiter+id, settings, 0)...)
			}
		}
	}
	return errors.Join(errs...)
}

// check looks for a map with middlewares naming an mtls extension in
// settings (at path) and below it, and returns an error for each tls
// setting beside it.
func check(path string, settings map[string]any, depth int) []error {
	var errs []error
	if id := mtlsMiddleware(settings["middlewares"]); id != "" {
		if tls, ok := settings["tls"].(map[string]any); ok {
			keys := make([]string, 0, len(tls))
			for k, v := range tls {
				if !isZero(v) {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				errs = append(errs, fmt.Errorf("%s%stls%s%s: set beside the %s extension in %s%smiddlewares, whose TLS credentials replace this %s's tls settings, so it would be ignored: set it on extensions%s%s instead, or remove %s from middlewares",
					path, confmap.KeyDelimiter, confmap.KeyDelimiter, k, id, path, confmap.KeyDelimiter, role(path), confmap.KeyDelimiter, id, id))
			}
		}
	}
	if depth >= maxDepth {
		return errs
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if sub, ok := settings[k].(map[string]any); ok && k != "tls" {
			errs = append(errs, check(path+confmap.KeyDelimiter+k, sub, depth+1)...)
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

// role is "server" for a receiver's settings, "client" for an exporter's.
func role(path string) string {
	if strings.HasPrefix(path, "receivers"+confmap.KeyDelimiter) {
		return "server"
	}
	return "client"
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
