// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile // import "github.com/nexovue/otelcol-nexovue/internal/debugfile"

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
)

// ErrNoAltLink is returned by ReadAltLink for a file that refers to no
// alternate (supplementary) file.
var ErrNoAltLink = errors.New("no .gnu_debugaltlink or .debug_sup section")

// maxAltLinkSection bounds the link sections read.
const maxAltLinkSection = 8 << 10

// AltLink is a debug file's reference to the DWZ alternate file that holds
// the DWARF entries and strings dwz moved out of it: `.gnu_debugaltlink`
// (a path, then the alternate's build ID), or DWARF 5's `.debug_sup` (a
// path and a checksum, here the build ID too as dwz writes it).
type AltLink struct {
	Path    string
	BuildID string // lower-case hex
	// Sup: the link is DWARF 5's .debug_sup, whose checksum (BuildID)
	// the supplementary file states in its own .debug_sup (dwz --dwarf-5
	// writes it without a GNU build ID note).
	Sup bool
}

// debugSup is a .debug_sup section: in a file that refers to a
// supplementary file (isSupplementary false), the file's name and
// checksum; in the supplementary file itself, its checksum.
type debugSup struct {
	isSupplementary bool
	name            string
	checksum        string // lower-case hex
}

// readDebugSup parses a .debug_sup section: version (2 bytes, 5),
// is_supplementary (1), filename (NUL-terminated), checksum length
// (ULEB128), checksum.
func readDebugSup(s *elf.Section) (debugSup, error) {
	data, err := readSmall(s)
	if err != nil {
		return debugSup{}, err
	}
	if len(data) < 4 || data[2] > 1 {
		return debugSup{}, errors.New(".debug_sup: malformed")
	}
	sup := debugSup{isSupplementary: data[2] == 1}
	rest := data[3:]
	i := bytes.IndexByte(rest, 0)
	if i < 0 || (i == 0 && !sup.isSupplementary) {
		return debugSup{}, errors.New(".debug_sup: malformed")
	}
	sup.name = string(rest[:i])
	n, k := binary.Uvarint(rest[i+1:])
	if k <= 0 || n > uint64(len(rest[i+1+k:])) {
		return debugSup{}, errors.New(".debug_sup: malformed checksum")
	}
	sup.checksum = hex.EncodeToString(rest[i+1+k : i+1+k+int(n)])
	if !ValidBuildID(sup.checksum) {
		return debugSup{}, errors.New(".debug_sup: malformed checksum")
	}
	return sup, nil
}

// ReadAltLink returns the alternate file a debug file refers to.
func ReadAltLink(f *elf.File) (AltLink, error) {
	if s := f.Section(".gnu_debugaltlink"); s != nil && s.Type != elf.SHT_NOBITS {
		data, err := readSmall(s)
		if err != nil {
			return AltLink{}, err
		}
		i := bytes.IndexByte(data, 0)
		if i <= 0 || i == len(data)-1 {
			return AltLink{}, errors.New(".gnu_debugaltlink: malformed")
		}
		link := AltLink{Path: string(data[:i]), BuildID: hex.EncodeToString(data[i+1:])}
		if !ValidBuildID(link.BuildID) {
			return AltLink{}, errors.New(".gnu_debugaltlink: malformed build ID")
		}
		return link, nil
	}
	if s := f.Section(".debug_sup"); s != nil && s.Type != elf.SHT_NOBITS {
		sup, err := readDebugSup(s)
		if err != nil {
			return AltLink{}, err
		}
		if sup.isSupplementary {
			return AltLink{}, errors.New(".debug_sup: not a reference to a supplementary file")
		}
		return AltLink{Path: sup.name, BuildID: sup.checksum, Sup: true}, nil
	}
	return AltLink{}, ErrNoAltLink
}

func readSmall(s *elf.Section) ([]byte, error) {
	if s.Size > maxAltLinkSection {
		return nil, fmt.Errorf("%s: %d bytes: %w", s.Name, s.Size, ErrTooLarge)
	}
	return io.ReadAll(io.LimitReader(s.Open(), maxAltLinkSection))
}

// AltCandidates is where the alternate file of link is looked for, in
// order: by build ID in each debug directory
// (`<dir>/.build-id/xx/yyyy.debug`), then at the link's own path (Debian's
// `/usr/lib/debug/.dwz/<triplet>/<package>.debug`; a relative path is
// relative to the debug file's directory, debugFileDir). The caller opens
// them as the process sees them (inside its root) and OpenAlt verifies the
// build ID.
func AltCandidates(link AltLink, debugFileDir string, debugDirs []string) []string {
	var out []string
	for _, d := range debugDirs {
		out = append(out, BuildIDPath(d, link.BuildID))
	}
	p := link.Path
	if !path.IsAbs(p) {
		p = path.Join(debugFileDir, p)
	}
	return append(out, path.Clean(p))
}

// Alt is an opened, verified DWZ alternate file: its DWARF and its string
// section.
type Alt struct {
	BuildID string
	Data    *dwarf.Data
	str     []byte
}

// OpenFunc opens a path as the lookup sees it (for a process, inside its
// own root without following links out of it).
type OpenFunc func(path string) (*os.File, error)

// OpenAlt finds, opens and verifies the alternate file of a debug file
// (selfBuildID is the debug file's own build ID). It tries each candidate
// of AltCandidates and keeps the first whose build ID is the link's. The
// alternate's DWARF sections together may not exceed maxSize bytes
// (uncompressed). References do not chain: an alternate file is never
// followed to another (dwz writes none), and a link to the debug file itself
// is refused, so a loop of links ends here.
func OpenAlt(link AltLink, selfBuildID, debugFileDir string, debugDirs []string, open OpenFunc, maxSize int64) (*Alt, error) {
	if link.BuildID == selfBuildID {
		return nil, errors.New("alternate file: the debug file refers to itself")
	}
	var errs []error
	for _, p := range AltCandidates(link, debugFileDir, debugDirs) {
		f, err := open(p)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		alt, err := loadAlt(f, link, maxSize)
		f.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		return alt, nil
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("alternate file %s (build ID %s): %w", link.Path, link.BuildID, os.ErrNotExist)
	}
	return nil, errors.Join(errs...)
}

func loadAlt(r io.ReaderAt, link AltLink, maxSize int64) (*Alt, error) {
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	id, err := altIdentity(ef, link)
	if err != nil {
		return nil, err
	}
	if _, err := ReadAltLink(ef); err == nil {
		return nil, errors.New("an alternate file that refers to another: not followed")
	}
	var total uint64
	for _, s := range ef.Sections {
		if len(s.Name) > 7 && s.Name[:7] == ".debug_" {
			total += s.Size
		}
	}
	if total > uint64(maxSize) {
		return nil, fmt.Errorf("DWARF sections of %d bytes: %w", total, ErrTooLarge)
	}
	d, err := ef.DWARF()
	if err != nil {
		return nil, err
	}
	var str []byte
	if s := ef.Section(".debug_str"); s != nil {
		if str, err = s.Data(); err != nil {
			return nil, err
		}
	}
	return &Alt{BuildID: id, Data: d, str: str}, nil
}

// altIdentity returns the identity of a candidate alternate file when it
// is the one link refers to: its GNU build ID, or, for a .debug_sup link,
// the checksum of its own .debug_sup (marked supplementary).
func altIdentity(ef *elf.File, link AltLink) (string, error) {
	id, err := BuildID(ef)
	if err == nil && id == link.BuildID {
		return id, nil
	}
	if s := ef.Section(".debug_sup"); link.Sup && s != nil && s.Type != elf.SHT_NOBITS {
		sup, err := readDebugSup(s)
		if err != nil {
			return "", err
		}
		if !sup.isSupplementary || sup.checksum != link.BuildID {
			return "", fmt.Errorf(".debug_sup checksum %s (supplementary: %v), want %s", sup.checksum, sup.isSupplementary, link.BuildID)
		}
		return sup.checksum, nil
	}
	if err != nil {
		return "", err
	}
	return "", fmt.Errorf("build ID %s, want %s", id, link.BuildID)
}

// String returns the string at off in the alternate's `.debug_str`
// (DW_FORM_GNU_strp_alt, DW_FORM_strp_sup).
func (a *Alt) String(off uint64) (string, error) {
	if off >= uint64(len(a.str)) {
		return "", fmt.Errorf("alternate string offset %#x out of range", off)
	}
	s := a.str[off:]
	i := bytes.IndexByte(s, 0)
	if i < 0 {
		return "", errors.New("alternate string not terminated")
	}
	return string(s[:i]), nil
}

// maxRefDepth bounds the DW_AT_abstract_origin/DW_AT_specification chain
// followed for a name (a loop in hostile DWARF ends there).
const maxRefDepth = 8

// attrMIPSLinkageName is DW_AT_MIPS_linkage_name, older compilers' linkage
// name.
const attrMIPSLinkageName dwarf.Attr = 0x2007

// Names resolves the names of DWARF entries whose attributes may live in
// a DWZ alternate file. Go's debug/dwarf parses the alternate forms
// without following them: DW_FORM_GNU_ref_alt and DW_FORM_GNU_strp_alt as
// an int64 offset of class ClassReferenceAlt and ClassStringAlt, DWARF 5's
// DW_FORM_ref_sup4/8 as a uint32/uint64 of class ClassReference, and
// DW_FORM_strp_sup as a uint32/uint64 of class ClassString. Names follows
// them into Alt (nil when the file has none: such names are then missing).
type Names struct {
	Main *dwarf.Data
	Alt  *Alt
}

// Name returns an entry's name (DW_AT_name) and its linkage (mangled,
// system) name (DW_AT_linkage_name, DW_AT_MIPS_linkage_name), following
// DW_AT_abstract_origin and DW_AT_specification, in the main file and the
// alternate, at most maxRefDepth references deep.
func (n Names) Name(e *dwarf.Entry) (name, linkage string, err error) {
	inAlt := false
	for depth := 0; e != nil && depth <= maxRefDepth; depth++ {
		if name == "" {
			if name, err = n.str(e, dwarf.AttrName, inAlt); err != nil {
				return name, linkage, err
			}
		}
		if linkage == "" {
			if linkage, err = n.str(e, dwarf.AttrLinkageName, inAlt); err != nil {
				return name, linkage, err
			}
			if linkage == "" {
				if linkage, err = n.str(e, attrMIPSLinkageName, inAlt); err != nil {
					return name, linkage, err
				}
			}
		}
		if name != "" && linkage != "" {
			return name, linkage, nil
		}
		f := Origin(e)
		if f == nil {
			return name, linkage, nil
		}
		if e, inAlt, err = n.follow(f, inAlt); err != nil {
			return name, linkage, err
		}
	}
	if e != nil {
		return name, linkage, errors.New("DWARF reference chain too deep (a loop?)")
	}
	return name, linkage, nil
}

// Origin returns the attribute an entry takes its names from when it has
// none of its own: DW_AT_abstract_origin, else DW_AT_specification (nil
// when it has neither).
func Origin(e *dwarf.Entry) *dwarf.Field {
	if f := e.AttrField(dwarf.AttrAbstractOrigin); f != nil {
		return f
	}
	return e.AttrField(dwarf.AttrSpecification)
}

// str reads a string attribute of an entry of the main file (or of the
// alternate when inAlt).
func (n Names) str(e *dwarf.Entry, a dwarf.Attr, inAlt bool) (string, error) {
	f := e.AttrField(a)
	if f == nil {
		return "", nil
	}
	switch v := f.Val.(type) {
	case string:
		return v, nil
	case int64: // ClassStringAlt
		if f.Class != dwarf.ClassStringAlt {
			return "", nil
		}
		return n.altString(uint64(v))
	case uint32: // DW_FORM_strp_sup
		return n.altString(uint64(v))
	case uint64:
		return n.altString(v)
	}
	return "", nil
}

func (n Names) altString(off uint64) (string, error) {
	if n.Alt == nil {
		return "", errors.New("a name in a DWZ alternate file that was not found")
	}
	return n.Alt.String(off)
}

// follow reads the entry a reference attribute points to, and whether it
// is in the alternate. A plain reference stays in the file its entry is in.
func (n Names) follow(f *dwarf.Field, inAlt bool) (*dwarf.Entry, bool, error) {
	var off dwarf.Offset
	toAlt := inAlt
	switch v := f.Val.(type) {
	case dwarf.Offset: // ClassReference: same file
		off = v
	case int64: // ClassReferenceAlt
		if f.Class != dwarf.ClassReferenceAlt {
			return nil, inAlt, nil
		}
		off, toAlt = dwarf.Offset(v), true
	case uint32: // DW_FORM_ref_sup4
		off, toAlt = dwarf.Offset(v), true
	case uint64: // DW_FORM_ref_sup8
		off, toAlt = dwarf.Offset(v), true
	default:
		return nil, inAlt, nil
	}
	d := n.Main
	if toAlt {
		if n.Alt == nil {
			return nil, toAlt, errors.New("a reference into a DWZ alternate file that was not found")
		}
		d = n.Alt.Data
	}
	r := d.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil {
		return nil, toAlt, err
	}
	if e == nil || e.Offset != off {
		return nil, toAlt, fmt.Errorf("DWARF reference %#x: no entry there", off)
	}
	return e, toAlt, nil
}
