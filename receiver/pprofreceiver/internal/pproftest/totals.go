// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package pproftest holds test-only helpers of the pprof receiver. It
// computes per-function totals of a profile, independently on
// a pprof profile and on OTLP profiles, so that tests can check a conversion
// by comparing the two. It is test-only (like the Collector's *test
// packages): only _test.go files import it, so it is not in the binary.
package pproftest // import "github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/pproftest"

import (
	"fmt"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Totals are the per-function totals of one sample type.
type Totals struct {
	// Type and Unit name the sample type.
	Type, Unit string
	// Sum is the sum of all sample values.
	Sum int64
	// Leaf maps a function name to the values of the samples whose innermost
	// frame is that function.
	Leaf map[string]int64
	// Inclusive maps a function name to the values of the samples in whose
	// stack the function appears (once per sample, however often).
	Inclusive map[string]int64
}

func newTotals(typ, unit string) *Totals {
	return &Totals{Type: typ, Unit: unit, Leaf: map[string]int64{}, Inclusive: map[string]int64{}}
}

func (t *Totals) add(leaf string, fns map[string]bool, v int64) {
	t.Sum += v
	t.Leaf[leaf] += v
	for fn := range fns {
		t.Inclusive[fn] += v
	}
}

// Prune drops the zero entries, which a conversion that leaves out
// zero-valued samples does not have.
func (t *Totals) Prune() *Totals {
	for _, m := range []map[string]int64{t.Leaf, t.Inclusive} {
		for k, v := range m {
			if v == 0 {
				delete(m, k)
			}
		}
	}
	return t
}

// Sub returns t minus u (same type), for checking deltas.
func (t *Totals) Sub(u *Totals) *Totals {
	d := newTotals(t.Type, t.Unit)
	d.Sum = t.Sum - u.Sum
	for _, pair := range [][3]map[string]int64{{d.Leaf, t.Leaf, u.Leaf}, {d.Inclusive, t.Inclusive, u.Inclusive}} {
		for k, v := range pair[1] {
			pair[0][k] += v
		}
		for k, v := range pair[2] {
			pair[0][k] -= v
		}
	}
	return d.Prune()
}

// FromPprof returns the totals of every sample type of p, keyed by type.
func FromPprof(p *profile.Profile) map[string]*Totals {
	out := map[string]*Totals{}
	for i, st := range p.SampleType {
		t := newTotals(st.Type, st.Unit)
		for _, s := range p.Sample {
			leaf := ""
			fns := map[string]bool{}
			for li, l := range s.Location {
				for ki, ln := range l.Line {
					name := ""
					if ln.Function != nil {
						name = ln.Function.Name
					}
					if li == 0 && ki == 0 {
						leaf = name
					}
					fns[name] = true
				}
			}
			t.add(leaf, fns, s.Value[i])
		}
		out[st.Type] = t.Prune()
	}
	return out
}

// FromOTLP returns the totals of every profile in pd, keyed by sample type.
// Profiles of the same type are added up. It fails on an index out of range.
func FromOTLP(pd pprofile.Profiles) (map[string]*Totals, error) {
	d := pd.Dictionary()
	strs := d.StringTable()
	str := func(i int32) (string, error) {
		if i < 0 || int(i) >= strs.Len() {
			return "", fmt.Errorf("string index %d out of range [0,%d)", i, strs.Len())
		}
		return strs.At(int(i)), nil
	}
	out := map[string]*Totals{}
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				typ, err := str(prof.SampleType().TypeStrindex())
				if err != nil {
					return nil, err
				}
				unit, err := str(prof.SampleType().UnitStrindex())
				if err != nil {
					return nil, err
				}
				t := out[typ]
				if t == nil {
					t = newTotals(typ, unit)
					out[typ] = t
				}
				for _, s := range prof.Samples().All() {
					if s.Values().Len() != 1 {
						return nil, fmt.Errorf("%s sample has %d values, want 1", typ, s.Values().Len())
					}
					leaf, fns, err := stackFunctions(d, s.StackIndex(), str)
					if err != nil {
						return nil, err
					}
					t.add(leaf, fns, s.Values().At(0))
				}
			}
		}
	}
	for _, t := range out {
		t.Prune()
	}
	return out, nil
}

func stackFunctions(d pprofile.ProfilesDictionary, si int32, str func(int32) (string, error)) (string, map[string]bool, error) {
	if si < 0 || int(si) >= d.StackTable().Len() {
		return "", nil, fmt.Errorf("stack index %d out of range", si)
	}
	leaf := ""
	fns := map[string]bool{}
	for li, loc := range d.StackTable().At(int(si)).LocationIndices().All() {
		if loc < 0 || int(loc) >= d.LocationTable().Len() {
			return "", nil, fmt.Errorf("location index %d out of range", loc)
		}
		for ki, ln := range d.LocationTable().At(int(loc)).Lines().All() {
			fi := ln.FunctionIndex()
			if fi < 0 || int(fi) >= d.FunctionTable().Len() {
				return "", nil, fmt.Errorf("function index %d out of range", fi)
			}
			name, err := str(d.FunctionTable().At(int(fi)).NameStrindex())
			if err != nil {
				return "", nil, err
			}
			if li == 0 && ki == 0 {
				leaf = name
			}
			fns[name] = true
		}
	}
	return leaf, fns, nil
}
