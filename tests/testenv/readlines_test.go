// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

func TestReadProfileLines(t *testing.T) {
	pd := pprofile.NewProfiles()
	pd.ResourceProfiles().AppendEmpty().Resource().Attributes().PutStr("service.name", "checkout")
	line, err := (&pprofile.JSONMarshaler{}).MarshalProfiles(pd)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "profiles.jsonl")
	read := func(content string) (int, error) {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		n := 0
		err := ReadProfileLines(path, func(pprofile.Profiles) { n++ })
		return n, err
	}

	require.NoError(t, ReadProfileLines(filepath.Join(t.TempDir(), "absent"), func(pprofile.Profiles) {}), "a missing file holds nothing")

	n, err := read(string(line) + "\n\n" + string(line) + "\n" + string(line[:len(line)/2]))
	require.NoError(t, err, "the trailing partial line is being written")
	assert.Equal(t, 2, n)

	_, err = read(string(line) + "\n" + string(line[:len(line)/2]) + "\n" + string(line) + "\n")
	require.ErrorContains(t, err, "profiles.jsonl:2: not a profiles request", "a malformed complete line fails the read")
}
