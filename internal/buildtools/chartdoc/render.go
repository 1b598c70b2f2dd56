// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Value is one documented value of values.yaml: a leaf, or a map or list
// whose default is shown whole.
type Value struct {
	Path    string
	Default string
	Doc     string
}

// below is the default shown for a map whose values are listed one by one.
const below = "(below)"

// Render returns the README of the chart in dir.
func Render(dir string) ([]byte, error) {
	var chart struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
		Version     string `yaml:"version"`
		AppVersion  string `yaml:"appVersion"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %w", err)
	}
	data, err = os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	values, err := Values(data)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!-- Generated from Chart.yaml and values.yaml by internal/buildtools/chartdoc (make manifests): edit those. -->\n")
	fmt.Fprintf(&b, "# %s\n\n%s.\n\nChart %s, collector %s.\n\n", chart.Name, chart.Description, chart.Version, chart.AppVersion)
	b.WriteString("How to install it: [Install on Kubernetes](../../docs/install-kubernetes.md).\n\n")
	b.WriteString("## Values\n\n| value | default | what it is |\n| --- | --- | --- |\n")
	for _, v := range values {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.Path, cell(v.Default), strings.ReplaceAll(v.Doc, "|", `\|`))
	}
	return b.Bytes(), nil
}

func cell(def string) string {
	if def == "" || def == below {
		return def
	}
	return "`" + strings.ReplaceAll(def, "|", `\|`) + "`"
}

// Values lists the values of a values.yaml in their order: each mapping key
// with a comment above it is documented; a map whose keys are all
// documented is listed through them, any other value whole. A key without
// a comment is an error, so that no value goes undocumented.
func Values(data []byte) ([]Value, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("values.yaml is not a mapping")
	}
	var out []Value
	if err := walk(root.Content[0], "", &out); err != nil {
		return nil, err
	}
	return out, nil
}

func walk(m *yaml.Node, prefix string, out *[]Value) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		path := prefix + k.Value
		doc := comment(k.HeadComment)
		if doc == "" {
			return fmt.Errorf("line %d: %s has no comment above it", k.Line, path)
		}
		if v.Kind == yaml.MappingNode && len(v.Content) > 0 && allDocumented(v) {
			*out = append(*out, Value{Path: path, Doc: doc, Default: below})
			if err := walk(v, path+".", out); err != nil {
				return err
			}
			continue
		}
		*out = append(*out, Value{Path: path, Default: flow(v), Doc: doc})
	}
	return nil
}

func allDocumented(m *yaml.Node) bool {
	for i := 0; i < len(m.Content); i += 2 {
		if comment(m.Content[i].HeadComment) == "" {
			return false
		}
	}
	return true
}

// comment joins a head comment's lines without their "#".
func comment(c string) string {
	var words []string
	for _, l := range strings.Split(c, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#"))
		if l != "" {
			words = append(words, l)
		}
	}
	return strings.Join(words, " ")
}

// flow writes a value on one line, in YAML's flow style.
func flow(n *yaml.Node) string {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	setFlow(&c)
	data, err := yaml.Marshal(&c)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(data))
}

func setFlow(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
	}
	for i, c := range n.Content {
		cc := *c
		cc.HeadComment, cc.LineComment, cc.FootComment = "", "", ""
		setFlow(&cc)
		n.Content[i] = &cc
	}
}
