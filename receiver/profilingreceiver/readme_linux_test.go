// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/ebpf-profiler/probes/kprobe"
)

// TestREADMESettings compares the README's settings table with the upstream
// receiver's configuration at the pinned version, read by reflection from its
// mapstructure tags: a row naming a setting upstream does not have, or an
// upstream setting no row names, fails it.
func TestREADMESettings(t *testing.T) {
	documented := readmeSettings(t, "README.md")
	upstream := map[string]bool{}
	settingKeys(reflect.TypeFor[Config](), "", upstream)
	// A probe's settings other than `type` are its type's (mapstructure
	// ",remain"); kprobe is the only type upstream's controller knows.
	settingKeys(reflect.TypeFor[kprobe.Config](), "probes[].", upstream)

	var stale, missing []string
	for k := range documented {
		if _, ok := upstream[k]; !ok {
			stale = append(stale, k)
		}
	}
	for k, leaf := range upstream {
		if leaf && !documented[k] {
			missing = append(missing, k)
		}
	}
	slices.Sort(stale)
	slices.Sort(missing)
	if len(stale) > 0 {
		t.Errorf("README.md documents settings the upstream receiver does not have: %s", strings.Join(stale, ", "))
	}
	if len(missing) > 0 {
		t.Errorf("README.md's settings table has no row for these upstream settings: %s", strings.Join(missing, ", "))
	}
}

// settingKeys adds to keys the setting names of the struct type typ, with
// prefix: every mapstructure-tagged field, the fields of a struct field
// under its name with a dot, of a squashed one without, of a slice of
// structs under its name with "[]."; fields tagged "-" and ",remain" are not
// settings. A leaf (a value) maps to true: the table must name it; a struct
// or a slice of them maps to false: a row may name it, as a heading for its
// settings.
func settingKeys(typ reflect.Type, prefix string, keys map[string]bool) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag, ok := f.Tag.Lookup("mapstructure")
		if !ok || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || opts == "remain":
			continue
		case opts == "squash":
			settingKeys(f.Type, prefix, keys)
			continue
		}
		key := prefix + name
		switch ft := f.Type; {
		case ft.Kind() == reflect.Struct:
			keys[key] = false
			settingKeys(ft, key+".", keys)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			keys[key] = false
			settingKeys(ft.Elem(), key+"[].", keys)
		default:
			keys[key] = true
		}
	}
}

// readmeSettings returns the settings the first column of the table under
// "## Settings" names (`name`).
func readmeSettings(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Settings\n")
	if !ok {
		t.Fatalf("%s has no \"## Settings\" section", path)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("^\\| `([^`]+)` \\|")
	settings := map[string]bool{}
	for line := range strings.SplitSeq(section, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			if settings[m[1]] {
				t.Errorf("%s: %s has two rows", path, m[1])
			}
			settings[m[1]] = true
		}
	}
	if len(settings) == 0 {
		t.Fatalf("%s: no settings table under \"## Settings\"", path)
	}
	return settings
}
