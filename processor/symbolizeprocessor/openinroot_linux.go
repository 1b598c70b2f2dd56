// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor"

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// openInRoot opens a path as the process pid sees it: resolved inside its
// root (/proc/<pid>/root), absolute links included, never leaving it
// (RESOLVE_IN_ROOT). pid 0 opens it on the host.
func openInRoot(pid int64, p string) (*os.File, error) {
	if pid <= 0 {
		return os.Open(p)
	}
	root, err := unix.Open(procRoot+"/"+strconv.FormatInt(pid, 10)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, strings.TrimPrefix(p, "/"), &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}
