// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// Package debugfile reads the sources of symbols that are not in a mapped
// file's own symbol tables, for the symbolize processor's lookup chain:
//
//   - MiniDebugInfo: the xz-compressed ELF in `.gnu_debugdata` (Fedora's,
//     and any file built with it), decompressed with a hard size cap.
//   - DWZ alternate files: the `.gnu_debugaltlink` of a debug file (path and
//     build ID), resolved and verified by build ID, and the names of DWARF
//     entries whose attributes live in it (DW_FORM_GNU_ref_alt,
//     DW_FORM_GNU_strp_alt, DWARF 5's DW_FORM_ref_sup4/8 and
//     DW_FORM_strp_sup), which Go's debug/dwarf parses as raw offsets
//     without following them.
//   - The vDSO: the `[vdso]` mapping of a process, read from /proc/<pid>/mem
//     within the mapping's bounds and parsed as ELF.
//   - debuginfod: a client, off unless URLs are configured, that fetches
//     debug files by build ID off the caller's path into a bounded on-disk
//     cache in the `.build-id` layout.
//
// Every reader here treats its input as hostile: sizes are capped before
// anything is allocated, and loops are cut.
package debugfile // import "github.com/nexovue/otelcol-nexovue/internal/debugfile"
