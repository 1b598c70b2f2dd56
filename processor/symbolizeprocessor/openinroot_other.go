// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package symbolizeprocessor // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor"

import (
	"errors"
	"os"
)

// openInRoot opens a path on the host (pid 0). A process's own root
// (/proc/<pid>/root) exists only on Linux, where the eBPF profiler runs:
// elsewhere a process's files are not looked up.
func openInRoot(pid int64, p string) (*os.File, error) {
	if pid <= 0 {
		return os.Open(p)
	}
	return nil, &os.PathError{Op: "open", Path: p, Err: errors.ErrUnsupported}
}
