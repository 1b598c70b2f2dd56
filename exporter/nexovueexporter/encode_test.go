// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
)

func TestEncodeIsUpstreamProtobufGzipped(t *testing.T) {
	for _, level := range []int{-1, 1, 6, 9} {
		enc, err := newEncoder(true, level)
		require.NoError(t, err)
		pd := batch(500, 21)
		upstream := pprofile.NewProfiles()
		pd.CopyTo(upstream)
		want, err := pprofileotlp.NewExportRequestFromProfiles(upstream).MarshalProto()
		require.NoError(t, err)

		body, rawLen, err := enc.encode(pd)
		require.NoError(t, err)
		assert.Equal(t, len(want), rawLen)
		assert.Equal(t, want, gunzip(t, body), "level %d", level)
		assert.Less(t, len(body), rawLen/2, "level %d compresses", level)
	}
}

func TestEncodeWithoutCompression(t *testing.T) {
	enc, err := newEncoder(false, 0)
	require.NoError(t, err)
	pd := batch(100, 22)
	want := profilesplit.SortedSamples(pd, 0)
	body, rawLen, err := enc.encode(pd)
	require.NoError(t, err)
	assert.Len(t, body, rawLen)
	req := pprofileotlp.NewExportRequest()
	require.NoError(t, req.UnmarshalProto(body))
	assert.Equal(t, want, profilesplit.SortedSamples(req.Profiles(), 0))
}

func TestEncodeLeavesProfilesReadable(t *testing.T) {
	enc, err := newEncoder(true, -1)
	require.NoError(t, err)
	pd := batch(200, 23)
	want := profilesplit.SortedSamples(pd, 0)
	for range 2 { // a retry encodes the same data again
		_, _, err := enc.encode(pd)
		require.NoError(t, err)
		require.NoError(t, profilesplit.Validate(pd))
		assert.Equal(t, want, profilesplit.SortedSamples(pd, 0), "resource and scope attributes survive marshaling")
	}
}

func TestEncodeReadOnlyProfiles(t *testing.T) {
	enc, err := newEncoder(true, -1)
	require.NoError(t, err)
	pd := batch(50, 24)
	want := profilesplit.SortedSamples(pd, 0)
	pd.MarkReadOnly()
	body, _, err := enc.encode(pd)
	require.NoError(t, err)
	req := pprofileotlp.NewExportRequest()
	require.NoError(t, req.UnmarshalProto(gunzip(t, body)))
	assert.Equal(t, want, profilesplit.SortedSamples(req.Profiles(), 0))
}

func TestInvalidGzipLevel(t *testing.T) {
	_, err := newEncoder(true, 42)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "compression_params::level")
}
