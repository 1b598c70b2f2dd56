// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Command otlpdecode decodes OTLP ExportProfilesServiceRequest bodies
// (uncompressed protobuf, one file each) with the protos Grafana Pyroscope
// 2.2.1 compiles against: go.opentelemetry.io/proto/otlp v1.10.0 and its
// profiles modules v0.3.0, pinned in this folder's own go.mod. For each file
// it prints one JSON line: every resource and scope attribute as decoded
// (literal key, key_strindex, kind of value) and the sample count. The first
// line names the proto module versions it was built with.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Attribute is one decoded KeyValue.
type Attribute struct {
	At          string `json:"at"`
	Key         string `json:"key"`
	KeyStrindex int32  `json:"key_strindex"`
	ValueKind   string `json:"value_kind"` // string_value, int_value, ..., string_value_strindex
	Value       string `json:"value"`      // string and int values as Pyroscope reads them
}

// Request is what one file decodes to.
type Request struct {
	File       string      `json:"file"`
	Error      string      `json:"error,omitempty"`
	Attributes []Attribute `json:"attributes"`
	Samples    int         `json:"samples"`
}

func main() {
	enc := json.NewEncoder(os.Stdout)
	versions := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if strings.HasPrefix(d.Path, "go.opentelemetry.io/proto/otlp") {
				versions[d.Path] = d.Version
			}
		}
	}
	if err := enc.Encode(map[string]any{"proto_modules": versions}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, f := range os.Args[1:] {
		if err := enc.Encode(decode(f)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func decode(file string) Request {
	out := Request{File: file, Attributes: []Attribute{}}
	b, err := os.ReadFile(file)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	req := &collectorpb.ExportProfilesServiceRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		out.Error = err.Error()
		return out
	}
	add := func(at string, kvs []*commonpb.KeyValue) {
		for _, kv := range kvs {
			a := Attribute{At: at, Key: kv.GetKey(), KeyStrindex: kv.GetKeyStrindex()}
			switch v := kv.GetValue().GetValue().(type) {
			case *commonpb.AnyValue_StringValue:
				a.ValueKind, a.Value = "string_value", v.StringValue
			case *commonpb.AnyValue_IntValue:
				a.ValueKind, a.Value = "int_value", fmt.Sprint(v.IntValue)
			case *commonpb.AnyValue_StringValueStrindex:
				a.ValueKind = "string_value_strindex"
			case nil:
				a.ValueKind = "empty"
			default:
				a.ValueKind = fmt.Sprintf("%T", v)
			}
			out.Attributes = append(out.Attributes, a)
		}
	}
	for i, rp := range req.GetResourceProfiles() {
		add(fmt.Sprintf("resource_profiles[%d].resource", i), rp.GetResource().GetAttributes())
		for j, sp := range rp.GetScopeProfiles() {
			add(fmt.Sprintf("resource_profiles[%d].scope_profiles[%d].scope", i, j), sp.GetScope().GetAttributes())
			for _, p := range sp.GetProfiles() {
				out.Samples += len(p.GetSamples())
			}
		}
	}
	return out
}
