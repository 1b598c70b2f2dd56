// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build windows

package queuestorageextension // import "github.com/nexovue/otelcol-nexovue/extension/queuestorageextension"

import "golang.org/x/sys/windows"

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
