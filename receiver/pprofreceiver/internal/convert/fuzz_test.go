// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package convert

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/delta"
	"github.com/nexovue/otelcol-nexovue/receiver/pprofreceiver/internal/pproftest"
)

// FuzzConvert parses arbitrary bytes as pprof; whatever parses must convert
// without error into OTLP profiles whose references are all in range, whose
// per-function totals equal pprof's, and whose attribute keys are unique per
// record. The same holds after delta tracking. Seeds are in
// testdata/fuzz/FuzzConvert (real Go runtime profiles, gzip and plain, and a
// legacy text profile) plus the synthetic profile of the unit tests.
func FuzzConvert(f *testing.F) {
	var plain bytes.Buffer
	require.NoError(f, sampleProfile().WriteUncompressed(&plain))
	f.Add(plain.Bytes())
	f.Add(pproftest.Gzip(f, plain.Bytes()))

	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, 1<<20)
		if err != nil {
			return // not a profile: the receiver logs and drops it
		}
		pd, err := Convert(p)
		if errors.Is(err, ErrExpansion) {
			return // refused by the memory bound, as the receiver does
		}
		require.NoError(t, err)
		got, err := pproftest.FromOTLP(pd)
		require.NoError(t, err)
		want := pproftest.FromPprof(p)
		for typ, w := range want {
			if w.Sum == 0 && len(w.Leaf) == 0 {
				continue // no non-zero sample: possibly no entry on our side
			}
			// Two pprof sample types of the same name are added up on
			// our side, so compare only unambiguous ones.
			if countType(p.SampleType, typ) == 1 {
				require.Equal(t, w, got[typ], typ)
			}
		}
		checkUniqueKeys(t, pd)

		tr := delta.NewTracker()
		tr.Commit(tr.Next(p))
		r := tr.Next(p)
		_, err = Convert(nonNil(r.Snapshot, r.Delta)...)
		if !errors.Is(err, ErrExpansion) {
			require.NoError(t, err)
		}
	})
}
