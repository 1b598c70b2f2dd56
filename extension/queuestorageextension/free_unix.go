// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package queuestorageextension // import "github.com/nexovue/otelcol-nexovue/extension/queuestorageextension"

import "golang.org/x/sys/unix"

// freeBytes is the space of dir's filesystem an unprivileged process may
// still use.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil //nolint:gosec,unconvert // the fields' types differ by system
}
