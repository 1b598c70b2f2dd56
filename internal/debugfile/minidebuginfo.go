// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile // import "github.com/nexovue/otelcol-nexovue/internal/debugfile"

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"

	"github.com/ulikunitz/xz/lzma"
)

// MiniDebugInfoSection is the section that holds MiniDebugInfo: an
// xz-compressed ELF file with the symbols the stripped file lacks.
const MiniDebugInfoSection = ".gnu_debugdata"

var (
	// ErrNoMiniDebugInfo is returned by MiniDebugInfo for a file without a
	// `.gnu_debugdata` section.
	ErrNoMiniDebugInfo = errors.New("no .gnu_debugdata section")
	// ErrTooLarge is returned when data would grow past its size cap (a
	// decompression bomb, or a file larger than allowed).
	ErrTooLarge = errors.New("larger than the size cap")
)

// MiniDebugInfo returns the ELF file embedded, xz-compressed, in f's
// `.gnu_debugdata` section, decompressed. maxSize caps both the compressed
// section and the decompressed file: the memory it takes is at most about
// twice maxSize (the output and an LZMA2 dictionary no larger than it),
// whatever the stream's headers claim. A stream that would decompress past
// maxSize gives ErrTooLarge; a malformed one an error. The returned bytes
// are an ELF file (check with elf.NewFile) whose symbol table names the
// stripped file's functions, at the same addresses.
func MiniDebugInfo(f *elf.File, maxSize int64) ([]byte, error) {
	s := f.Section(MiniDebugInfoSection)
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, ErrNoMiniDebugInfo
	}
	if s.Size > uint64(maxSize) {
		return nil, fmt.Errorf("%s: compressed %d bytes: %w", MiniDebugInfoSection, s.Size, ErrTooLarge)
	}
	comp, err := io.ReadAll(io.LimitReader(s.Open(), maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MiniDebugInfoSection, err)
	}
	out, err := DecompressXZ(comp, maxSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MiniDebugInfoSection, err)
	}
	return out, nil
}

// xz container constants (https://tukaani.org/xz/xz-file-format.txt).
var xzMagic = []byte{0xfd, '7', 'z', 'X', 'Z', 0}

const (
	xzFilterLZMA2 = 0x21
	xzFlagCompSz  = 0x40
	xzFlagUncSz   = 0x80
)

// DecompressXZ decompresses the first stream of an xz file, at most
// maxSize bytes of output (more gives ErrTooLarge). It reads the xz
// container itself and hands each block's LZMA2 data to the lzma package
// with a dictionary capped at min(the block's declared dictionary,
// maxSize): github.com/ulikunitz/xz's own Reader allocates the dictionary a
// header declares (up to 1.5 GiB) before reading any data. Only the LZMA2
// filter is accepted (what xz writes by default, and MiniDebugInfo uses);
// each block's check (CRC32, CRC64 or SHA-256) is verified.
func DecompressXZ(data []byte, maxSize int64) ([]byte, error) {
	if len(data) < 12 || !bytes.Equal(data[:6], xzMagic) {
		return nil, errors.New("xz: not an xz stream")
	}
	if data[6] != 0 || crc32.ChecksumIEEE(data[6:8]) != binary.LittleEndian.Uint32(data[8:12]) {
		return nil, errors.New("xz: bad stream header")
	}
	checkType := data[7] & 0x0f
	if data[7]&0xf0 != 0 {
		return nil, errors.New("xz: bad stream flags")
	}
	r := bytes.NewReader(data[12:])
	out := &capBuffer{max: maxSize}
	for {
		hs, err := r.ReadByte()
		if err != nil {
			return nil, errors.New("xz: truncated")
		}
		if hs == 0 {
			break // the index: every block has been read
		}
		hdr := make([]byte, (int(hs)+1)*4)
		hdr[0] = hs
		if _, err := io.ReadFull(r, hdr[1:]); err != nil {
			return nil, errors.New("xz: truncated block header")
		}
		dictSize, err := xzBlockDict(hdr)
		if err != nil {
			return nil, err
		}
		dictCap := min(dictSize, maxSize)
		dictCap = max(dictCap, lzma.MinDictCap)
		lz, err := lzma.Reader2Config{DictCap: int(dictCap)}.NewReader2(r)
		if err != nil {
			return nil, fmt.Errorf("xz: %w", err)
		}
		start := len(out.b)
		if _, err := io.Copy(out, lz); err != nil {
			if errors.Is(err, ErrTooLarge) {
				return nil, fmt.Errorf("xz: decompressed past %d bytes: %w", maxSize, ErrTooLarge)
			}
			return nil, fmt.Errorf("xz: %w", err)
		}
		// Block padding to a multiple of 4 bytes of the stream, then the check.
		consumed := int64(len(data)-12) - int64(r.Len())
		if pad := (4 - consumed%4) % 4; pad > 0 {
			if _, err := r.Seek(pad, io.SeekCurrent); err != nil {
				return nil, errors.New("xz: truncated block")
			}
		}
		if err := xzCheck(r, checkType, out.b[start:]); err != nil {
			return nil, err
		}
	}
	return out.b, nil
}

// capBuffer is an output that refuses to grow past max bytes, and whose
// capacity never exceeds max: everything it allocates, growth included,
// stays under 2×max.
type capBuffer struct {
	b   []byte
	max int64
}

func (c *capBuffer) Write(p []byte) (int, error) {
	need := int64(len(c.b)) + int64(len(p))
	if need > c.max {
		return 0, ErrTooLarge
	}
	if need > int64(cap(c.b)) {
		grown := min(max(2*int64(cap(c.b)), need, 64<<10), c.max)
		nb := make([]byte, len(c.b), grown)
		copy(nb, c.b)
		c.b = nb
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// xzBlockDict validates a block header and returns its LZMA2 dictionary
// size.
func xzBlockDict(hdr []byte) (int64, error) {
	n := len(hdr)
	if crc32.ChecksumIEEE(hdr[:n-4]) != binary.LittleEndian.Uint32(hdr[n-4:]) {
		return 0, errors.New("xz: bad block header checksum")
	}
	flags := hdr[1]
	if flags&0x3c != 0 {
		return 0, errors.New("xz: bad block flags")
	}
	if flags&0x03 != 0 {
		return 0, errors.New("xz: filter chains other than LZMA2 alone are not supported")
	}
	b := bytes.NewReader(hdr[2 : n-4])
	if flags&xzFlagCompSz != 0 {
		if _, err := binary.ReadUvarint(b); err != nil {
			return 0, errors.New("xz: bad block header")
		}
	}
	if flags&xzFlagUncSz != 0 {
		if _, err := binary.ReadUvarint(b); err != nil {
			return 0, errors.New("xz: bad block header")
		}
	}
	id, err1 := binary.ReadUvarint(b)
	propsLen, err2 := binary.ReadUvarint(b)
	if err1 != nil || err2 != nil || id != xzFilterLZMA2 || propsLen != 1 {
		return 0, errors.New("xz: filters other than LZMA2 are not supported")
	}
	code, err := b.ReadByte()
	if err != nil {
		return 0, errors.New("xz: bad block header")
	}
	dict, err := lzma.DecodeDictCap(code)
	if err != nil {
		return 0, fmt.Errorf("xz: %w", err)
	}
	return dict, nil
}

// xzCheck reads a block's check and verifies it against the block's data.
func xzCheck(r *bytes.Reader, checkType byte, block []byte) error {
	var h hash.Hash
	size := 0
	switch checkType {
	case 0x00:
	case 0x01:
		h, size = crc32.NewIEEE(), 4
	case 0x04:
		h, size = crc64.New(crc64.MakeTable(crc64.ECMA)), 8
	case 0x0a:
		h, size = sha256.New(), 32
	default:
		return fmt.Errorf("xz: unsupported check type %#x", checkType)
	}
	want := make([]byte, size)
	if _, err := io.ReadFull(r, want); err != nil {
		return errors.New("xz: truncated check")
	}
	if h == nil {
		return nil
	}
	h.Write(block)
	got := h.Sum(nil)
	if size <= 8 { // CRC32 and CRC64 are stored little-endian
		for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
			got[i], got[j] = got[j], got[i]
		}
	}
	if !bytes.Equal(got, want) {
		return errors.New("xz: block check mismatch")
	}
	return nil
}
