// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package queuestorageextension // import "github.com/nexovue/otelcol-nexovue/extension/queuestorageextension"

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// freeBytes is the space of dir's filesystem an unprivileged process may
// still use.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil //nolint:gosec,unconvert // the fields' types differ by system
}

// isNoSpace tells a write that failed because the filesystem (or the
// user's quota) is full.
func isNoSpace(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)
}

// lockFile takes an exclusive lock on f without waiting: it fails at once
// when another process holds it. The kernel releases it when the process
// ends, however it ends.
func lockFile(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) //nolint:gosec // a descriptor fits an int
}

// isLocked tells lockFile's failure because another process holds the lock.
func isLocked(err error) bool {
	return errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, unix.EAGAIN)
}
