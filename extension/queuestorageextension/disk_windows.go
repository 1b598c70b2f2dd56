// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build windows

package queuestorageextension // import "github.com/nexovue/otelcol-nexovue/extension/queuestorageextension"

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// freeBytes is the space of dir's volume the caller may still use.
func freeBytes(dir string) (int64, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, err
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return 0, err
	}
	return int64(avail), nil //nolint:gosec // a volume's size fits
}

// isNoSpace tells a write that failed because the volume (or the user's
// quota) is full: Windows reports it as ERROR_DISK_FULL or
// ERROR_HANDLE_DISK_FULL, never as ENOSPC.
func isNoSpace(err error) bool {
	return errors.Is(err, windows.ERROR_DISK_FULL) || errors.Is(err, windows.ERROR_HANDLE_DISK_FULL)
}

// lockFile takes an exclusive lock on f without waiting: it fails at once
// when another process holds it. Windows releases it when the process
// ends.
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
}

// isLocked tells lockFile's failure because another process holds the lock.
func isLocked(err error) bool {
	return errors.Is(err, windows.ERROR_LOCK_VIOLATION)
}
