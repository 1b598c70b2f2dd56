// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package profilingreceiver // import "github.com/nexovue/otelcol-nexovue/receiver/profilingreceiver"

import (
	"os"
	"strings"

	"go.opentelemetry.io/ebpf-profiler/libpf"
	"go.opentelemetry.io/ebpf-profiler/reporter"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
)

// executableHolder is the profiler's ExecutableReporter hook: each
// executable file the profiler reads (once per file, when it first sees it
// mapped) is opened through its process (/proc/<pid>/map_files) and held in
// debugfile.Held, by the profiler's file id, so that the symbolize
// processor can read it after the process has exited or its container
// stopped. At most debugfile.MaxHeldFiles are held; the hook only opens a
// file (one system call on the profiler's path).
type executableHolder struct {
	held *debugfile.HeldFiles
}

var _ reporter.ExecutableReporter = executableHolder{}

func (h executableHolder) ReportExecutable(md *reporter.ExecutableMetadata) {
	if md == nil || md.Process == nil || md.Mapping == nil || md.Mapping.IsVDSO() || md.MappingFile == (libpf.FrameMappingFile{}) {
		return
	}
	r, err := md.Process.OpenMappingFile(md.Mapping)
	if err != nil {
		return
	}
	f, ok := r.(*os.File)
	if !ok {
		_ = r.Close()
		return
	}
	// The mapping's Path may be a buffer the profiler reuses: copied.
	h.held.Hold(md.MappingFile.Value().FileID.StringNoQuotes(), strings.Clone(md.Mapping.Path), f)
}
