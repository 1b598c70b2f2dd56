package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// encoder writes profiles out as an OTLP ExportProfilesServiceRequest in
// protobuf (the same bytes as pprofileotlp.ExportRequest.MarshalProto) and,
// when gzip is on, compresses them with a pooled writer into a pooled scratch
// buffer, so that a request costs one marshal buffer and one exact-size body.
type encoder struct {
	gzip    bool
	writers *sync.Pool // *gzip.Writer at the configured level
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
// Marshaling may rewrite pd's strings as dictionary references, as upstream's
// marshaler does, so the exporter declares MutatesData.
func (e *encoder) encode(pd pprofile.Profiles) ([]byte, int, error) {
	raw, err := marshaler.MarshalProfiles(pd)
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
