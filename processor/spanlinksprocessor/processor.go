// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package spanlinksprocessor // import "github.com/nexovue/otelcol-nexovue/processor/spanlinksprocessor"

import (
	"context"
	"encoding/hex"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/nexovue/otelcol-nexovue/processor/spanlinksprocessor/internal/metadata"
)

// ebpfLabelPrefix is the prefix of the sample attributes the eBPF profiler
// writes for a goroutine's pprof labels (reporter/internal/pdata/generate.go
// upstream). The pprof receiver writes a label under its own name.
const ebpfLabelPrefix = "process.context.label."

// ebpfMaxValueLen is the longest label value the eBPF profiler reads (its
// CUSTOM_LABEL_MAX_VAL_LEN, 48 bytes with the terminating NUL): a value of
// this length may have been cut.
const ebpfMaxValueLen = 47

// reason says why a sample's span labels gave no link.
type reason int

const (
	reasonNone reason = iota
	reasonWrongLength
	reasonNotHex
	reasonAllZeros
	reasonTruncated
	reasonIncomplete
	reasonNotAString
	numReasons
)

var reasonNames = [numReasons]string{
	reasonWrongLength: "wrong_length",
	reasonNotHex:      "not_hex",
	reasonAllZeros:    "all_zeros",
	reasonTruncated:   "truncated",
	reasonIncomplete:  "incomplete",
	reasonNotAString:  "not_a_string",
}

// role is what an attribute of the dictionary is to this processor.
type role uint8

const (
	roleNone role = iota
	roleSpan
	roleTrace
	roleSpanEBPF
	roleTraceEBPF
)

type linker struct {
	keys        map[string]role
	keepLabels  bool
	telemetry   *metadata.TelemetryBuilder
	reasonAttrs [numReasons][]metric.AddOption
}

func newLinker(set processor.Settings, cfg *Config) (*linker, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	l := &linker{
		keys: map[string]role{
			cfg.SpanIDLabel:                    roleSpan,
			cfg.TraceIDLabel:                   roleTrace,
			ebpfLabelPrefix + cfg.SpanIDLabel:  roleSpanEBPF,
			ebpfLabelPrefix + cfg.TraceIDLabel: roleTraceEBPF,
		},
		keepLabels: cfg.KeepLabels,
		telemetry:  tb,
	}
	for r := reasonWrongLength; r < numReasons; r++ {
		l.reasonAttrs[r] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reasonNames[r])))}
	}
	return l, nil
}

func (l *linker) shutdown(context.Context) error {
	l.telemetry.Shutdown()
	return nil
}

// linkKey identifies a link: trace ID then span ID.
type linkKey [24]byte

// batch is the state of one batch's dictionary.
type batch struct {
	dict  pprofile.ProfilesDictionary
	roles []role // per attribute table index
	links map[linkKey]int32
}

// processProfiles links every sample whose labels name a valid span and that
// has no link yet. It never fails: a sample with bad labels is kept unlinked.
func (l *linker) processProfiles(ctx context.Context, pd pprofile.Profiles) (pprofile.Profiles, error) {
	dict := pd.Dictionary()
	b := batch{dict: dict}
	if !l.attributeRoles(&b) {
		// No attribute of this batch is a span label: only count the
		// samples that are already linked.
		l.countAlreadyLinked(ctx, pd)
		return pd, nil
	}
	var linked, already int64
	var invalid [numReasons]int64
	forEachSample(pd, func(s pprofile.Sample) {
		switch r, ok := l.linkSample(&b, s); {
		case r == reasonAlreadyLinked:
			already++
		case ok:
			linked++
		case r != reasonNone:
			invalid[r]++
		}
	})
	l.telemetry.ProcessorSpanLinksSamplesLinked.Add(ctx, linked)
	l.telemetry.ProcessorSpanLinksSamplesAlreadyLinked.Add(ctx, already)
	for r, n := range invalid {
		if n > 0 {
			l.telemetry.ProcessorSpanLinksInvalidLabels.Add(ctx, n, l.reasonAttrs[r]...)
		}
	}
	return pd, nil
}

// reasonAlreadyLinked marks a sample that had a link already; it is not a
// reason of the metric.
const reasonAlreadyLinked = numReasons

// attributeRoles finds the attributes of the dictionary whose key is one of
// the label keys, and reports whether there is any.
func (l *linker) attributeRoles(b *batch) bool {
	attrs := b.dict.AttributeTable()
	strs := b.dict.StringTable()
	roles := make([]role, 0, attrs.Len())
	found := false
	for i := 0; i < attrs.Len(); i++ {
		r := roleNone
		if k := attrs.At(i).KeyStrindex(); k >= 0 && int(k) < strs.Len() {
			r = l.keys[strs.At(int(k))]
		}
		found = found || r != roleNone
		roles = append(roles, r)
	}
	b.roles = roles
	return found
}

func (l *linker) countAlreadyLinked(ctx context.Context, pd pprofile.Profiles) {
	var already int64
	forEachSample(pd, func(s pprofile.Sample) {
		if s.LinkIndex() != 0 {
			already++
		}
	})
	l.telemetry.ProcessorSpanLinksSamplesAlreadyLinked.Add(ctx, already)
}

// forEachSample calls f with every sample of pd, in order.
func forEachSample(pd pprofile.Profiles, f func(pprofile.Sample)) {
	rps := pd.ResourceProfiles()
	for i := 0; i < rps.Len(); i++ {
		sps := rps.At(i).ScopeProfiles()
		for j := 0; j < sps.Len(); j++ {
			profs := sps.At(j).Profiles()
			for k := 0; k < profs.Len(); k++ {
				samples := profs.At(k).Samples()
				for s := 0; s < samples.Len(); s++ {
					f(samples.At(s))
				}
			}
		}
	}
}

// linkSample links one sample. It returns reasonNone and false for a sample
// without span labels, reasonAlreadyLinked for one with a link, a reason for
// one whose labels gave no link, and true when it was linked.
func (l *linker) linkSample(b *batch, s pprofile.Sample) (reason, bool) {
	if s.LinkIndex() != 0 {
		return reasonAlreadyLinked, false
	}
	idx := s.AttributeIndices()
	spanAt, traceAt := -1, -1
	for i := 0; i < idx.Len(); i++ {
		a := idx.At(i)
		if a < 0 || int(a) >= len(b.roles) {
			continue
		}
		switch b.roles[a] {
		case roleSpan, roleSpanEBPF:
			spanAt = i
		case roleTrace, roleTraceEBPF:
			traceAt = i
		}
	}
	if spanAt < 0 && traceAt < 0 {
		return reasonNone, false
	}
	if spanAt < 0 || traceAt < 0 {
		return reasonIncomplete, false
	}
	var key linkKey
	if r := l.decode(b, idx.At(traceAt), key[:16]); r != reasonNone {
		return r, false
	}
	if r := l.decode(b, idx.At(spanAt), key[16:]); r != reasonNone {
		return r, false
	}
	s.SetLinkIndex(b.link(key))
	if !l.keepLabels {
		idx.RemoveIf(func(a int32) bool {
			return a >= 0 && int(a) < len(b.roles) && b.roles[a] != roleNone
		})
	}
	return reasonNone, true
}

// decode writes the ID held by attribute a into dst (8 or 16 bytes).
func (l *linker) decode(b *batch, a int32, dst []byte) reason {
	v := b.dict.AttributeTable().At(int(a)).Value()
	if v.Type() != pcommon.ValueTypeStr {
		return reasonNotAString
	}
	str := v.Str()
	r := b.roles[a]
	if len(str) != 2*len(dst) {
		if (r == roleSpanEBPF || r == roleTraceEBPF) && len(str) == ebpfMaxValueLen {
			return reasonTruncated
		}
		return reasonWrongLength
	}
	if _, err := hex.Decode(dst, []byte(str)); err != nil {
		return reasonNotHex
	}
	for _, c := range dst {
		if c != 0 {
			return reasonNone
		}
	}
	return reasonAllZeros
}

// link returns the index of the link to key in the dictionary's link table,
// appending it when the table has no identical link.
func (b *batch) link(key linkKey) int32 {
	lt := b.dict.LinkTable()
	if b.links == nil {
		b.links = make(map[linkKey]int32, lt.Len()+1)
		if lt.Len() == 0 {
			// Index 0 is the empty link, meaning "no link".
			lt.AppendEmpty()
		}
		for i := 1; i < lt.Len(); i++ {
			var k linkKey
			tid, sid := lt.At(i).TraceID(), lt.At(i).SpanID()
			copy(k[:16], tid[:])
			copy(k[16:], sid[:])
			if _, ok := b.links[k]; !ok {
				b.links[k] = int32(i)
			}
		}
	}
	if i, ok := b.links[key]; ok {
		return i
	}
	l := lt.AppendEmpty()
	l.SetTraceID(pcommon.TraceID(key[:16]))
	l.SetSpanID(pcommon.SpanID(key[16:]))
	i := int32(lt.Len() - 1)
	b.links[key] = i
	return i
}
