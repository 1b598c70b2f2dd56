// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile // import "github.com/nexovue/otelcol-nexovue/internal/debugfile"

import (
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"strings"
)

// ntGNUBuildID is the note type of a GNU build ID (NT_GNU_BUILD_ID).
const ntGNUBuildID = 3

// maxNoteSize bounds the note sections read for a build ID.
const maxNoteSize = 64 << 10

// ErrNoBuildID is returned by BuildID for a file without a GNU build ID.
var ErrNoBuildID = errors.New("no GNU build ID")

// BuildID returns the GNU build ID of an ELF file, in lower-case hex.
func BuildID(f *elf.File) (string, error) {
	var notes []io.Reader
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOTE && s.Size <= maxNoteSize {
			notes = append(notes, s.Open())
		}
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_NOTE && p.Filesz <= maxNoteSize {
			notes = append(notes, p.Open())
		}
	}
	for _, r := range notes {
		data, err := io.ReadAll(io.LimitReader(r, maxNoteSize))
		if err != nil {
			continue
		}
		if id := noteBuildID(data, f.ByteOrder); id != "" {
			return id, nil
		}
	}
	return "", ErrNoBuildID
}

// noteBuildID finds the NT_GNU_BUILD_ID note of owner "GNU" in notes.
func noteBuildID(data []byte, bo binary.ByteOrder) string {
	for len(data) >= 12 {
		nameSz := uint64(bo.Uint32(data[0:]))
		descSz := uint64(bo.Uint32(data[4:]))
		typ := bo.Uint32(data[8:])
		data = data[12:]
		nameAl := (nameSz + 3) &^ 3
		descAl := (descSz + 3) &^ 3
		if nameAl > uint64(len(data)) || descAl > uint64(len(data))-nameAl {
			return ""
		}
		name := data[:nameSz]
		desc := data[nameAl : nameAl+descSz]
		data = data[nameAl+descAl:]
		if typ == ntGNUBuildID && string(name) == "GNU\x00" && len(desc) > 0 {
			return hex.EncodeToString(desc)
		}
	}
	return ""
}

// ValidBuildID reports whether id is a build ID usable in a path: lower-case
// hex, of an even length between 2 and 128 (GNU build IDs are 16 or 20 bytes,
// a few tools make others).
func ValidBuildID(id string) bool {
	if len(id) < 4 || len(id) > 128 || len(id)%2 != 0 {
		return false
	}
	return strings.Trim(id, "0123456789abcdef") == ""
}

// BuildIDPath is the path of a debug file by build ID under a debug
// directory: <dir>/.build-id/xx/yyyy.debug.
func BuildIDPath(dir, id string) string {
	return dir + "/.build-id/" + id[:2] + "/" + id[2:] + ".debug"
}
