// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// encoder writes profiles out as an OTLP ExportProfilesServiceRequest in
// protobuf (the same bytes as pprofileotlp.ExportRequest.MarshalProto) and,
// when gzip is on, compresses them with a pooled writer into a pooled scratch
// buffer, so that a request costs one marshal buffer and one exact-size body.
type encoder struct {
	gzip    bool
	writers *sync.Pool // *gzip.Writer at the configured level
	literal bool       // attribute_encoding: literal (literal.go)
}

var (
	gzipPoolsMu sync.Mutex
	gzipPools   = map[int]*sync.Pool{}
	scratchPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	marshaler   = pprofile.ProtoMarshaler{}
)

// maxPooledScratch keeps one outsized request from pinning its buffer in the pool.
const maxPooledScratch = 8 << 20

func putScratch(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledScratch {
		scratchPool.Put(buf)
	}
}

// newEncoder returns an encoder; level is a gzip level (-1 = default, 1..9)
// and is only used when compress is true.
func newEncoder(compress bool, level int) (*encoder, error) {
	e := &encoder{gzip: compress}
	if !compress {
		return e, nil
	}
	if _, err := gzip.NewWriterLevel(nil, level); err != nil {
		return nil, fmt.Errorf("compression_params::level: %w", err)
	}
	gzipPoolsMu.Lock()
	defer gzipPoolsMu.Unlock()
	p, ok := gzipPools[level]
	if !ok {
		p = &sync.Pool{New: func() any {
			w, _ := gzip.NewWriterLevel(nil, level)
			return w
		}}
		gzipPools[level] = p
	}
	e.writers = p
	return e, nil
}

// encode returns the request body and the size of the uncompressed protobuf.
//
// pdata's marshaler rewrites the resource and scope attributes of pd as
// string-table references, after which the pdata API reads them as empty
// keys. encode puts them back once marshaled, so that pd can still be halved
// after a 413 or kept for a retry; the exporter still declares MutatesData.
func (e *encoder) encode(pd pprofile.Profiles) ([]byte, int, error) {
	var raw []byte
	var err error
	if e.literal {
		raw, err = marshalLiteral(pd)
	} else {
		saved := saveAttributes(pd)
		raw, err = marshaler.MarshalProfiles(pd)
		restoreAttributes(saved)
	}
	if err != nil {
		return nil, 0, err
	}
	if !e.gzip {
		return raw, len(raw), nil
	}
	buf := scratchPool.Get().(*bytes.Buffer)
	defer putScratch(buf)
	buf.Reset()
	w := e.writers.Get().(*gzip.Writer)
	defer e.writers.Put(w)
	w.Reset(buf)
	if _, err := w.Write(raw); err != nil {
		return nil, 0, err
	}
	if err := w.Close(); err != nil {
		return nil, 0, err
	}
	return bytes.Clone(buf.Bytes()), len(raw), nil
}

// savedAttrs is a copy of one attribute map, to be put back into it.
type savedAttrs struct {
	into, copy pcommon.Map
}

// saveAttributes copies the resource and scope attributes of pd (a read-only
// pd is copied by the marshaler and left alone).
func saveAttributes(pd pprofile.Profiles) []savedAttrs {
	if pd.IsReadOnly() {
		return nil
	}
	var saved []savedAttrs
	save := func(m pcommon.Map) {
		if m.Len() > 0 {
			c := pcommon.NewMap()
			m.CopyTo(c)
			saved = append(saved, savedAttrs{into: m, copy: c})
		}
	}
	rps := pd.ResourceProfiles()
	for i := 0; i < rps.Len(); i++ {
		rp := rps.At(i)
		save(rp.Resource().Attributes())
		sps := rp.ScopeProfiles()
		for j := 0; j < sps.Len(); j++ {
			save(sps.At(j).Scope().Attributes())
		}
	}
	return saved
}

func restoreAttributes(saved []savedAttrs) {
	for _, s := range saved {
		s.copy.MoveTo(s.into)
	}
}

func gzipLevel(level int) int {
	if level == 0 {
		return -1 // gzip's default
	}
	return level
}
