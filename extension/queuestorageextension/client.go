// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/nexovue/otelcol-nexovue/extension/queuestorageextension"

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// On disk, every key of a client is one file, <client>.<key> (both escaped:
// see escapeName), holding one record or two slots of records:
//
//	record: magic u32 | crc u32 | seq u64 | len u32 | slot u32 | value
//
// crc is CRC-32C of the record from seq to the end of the value; slot is
// the size of each slot in a two-slot file (0 in a one-slot file). A key
// written once (a queue item) is a one-slot file of exactly its record.
// A key written again (the queue's metadata) becomes a two-slot file, each
// slot a whole number of 4 KiB blocks: each later write goes in place into
// the slot that does not hold the newest record, with the next seq, so it
// needs no free block, and a write cut short leaves the other slot whole.
// A read takes the valid record with the highest seq.
const (
	recordHeader = 24
	recordMagic  = 0x5153584e // "NXQS", little-endian
	blockSize    = 4096
	tmpSuffix    = ".tmp"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeRecord writes the record of value with seq into buf (which must
// hold recordHeader+len(value) bytes).
func encodeRecord(buf []byte, seq uint64, slot int64, value []byte) {
	binary.LittleEndian.PutUint32(buf[0:], recordMagic)
	binary.LittleEndian.PutUint64(buf[8:], seq)
	binary.LittleEndian.PutUint32(buf[16:], uint32(len(value)))
	binary.LittleEndian.PutUint32(buf[20:], uint32(slot))
	copy(buf[recordHeader:], value)
	binary.LittleEndian.PutUint32(buf[4:], crc32.Checksum(buf[8:recordHeader+len(value)], castagnoli))
}

// decodeRecord returns the value, seq and slot size of the record at the
// start of b, or ok false when there is none whole.
func decodeRecord(b []byte) (value []byte, seq uint64, slot int64, ok bool) {
	if len(b) < recordHeader || binary.LittleEndian.Uint32(b[0:]) != recordMagic {
		return nil, 0, 0, false
	}
	n := int(binary.LittleEndian.Uint32(b[16:]))
	if n > len(b)-recordHeader {
		return nil, 0, 0, false
	}
	if crc32.Checksum(b[8:recordHeader+n], castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, 0, 0, false
	}
	return b[recordHeader : recordHeader+n], binary.LittleEndian.Uint64(b[8:]), int64(binary.LittleEndian.Uint32(b[20:])), true
}

// decodeFile returns the newest valid record of a file's content.
func decodeFile(b []byte) (value []byte, seq uint64, slot int64, cur int, ok bool) {
	v0, s0, slot0, ok0 := decodeRecord(b)
	// The second slot starts halfway: a two-slot file is two equal slots.
	half := int64(len(b) / 2)
	if ok0 && slot0 == 0 {
		return v0, s0, 0, 0, true
	}
	if len(b)%2 != 0 || half < recordHeader || (ok0 && slot0 != half) {
		return v0, s0, slot0, 0, ok0
	}
	v1, s1, slot1, ok1 := decodeRecord(b[half:])
	ok1 = ok1 && slot1 == half
	switch {
	case ok0 && (!ok1 || s0 >= s1):
		return v0, s0, half, 0, true
	case ok1:
		return v1, s1, half, 1, true
	}
	return nil, 0, 0, 0, false
}

// diskBytes is what a file of size bytes takes on disk, in whole blocks.
func diskBytes(size int64) int64 {
	return (size + blockSize - 1) / blockSize * blockSize
}

// fileState is what the client knows of one key's file.
type fileState struct {
	disk int64 // bytes on disk
	// Of a two-slot file, loaded at its first rewrite (slot 0 until then):
	slot  int64    // slot size
	cur   int      // the slot of the newest record
	seq   uint64   // its seq
	value []byte   // its value
	f     *os.File // open for writing in place
}

// client is the storage.Client of one component: its keys are the files
// <prefix><escaped key> in the extension's directory.
type client struct {
	ext    *queueStorage
	dir    string
	prefix string

	mu     sync.Mutex
	files  map[string]*fileState
	closed bool
}

var _ storage.Client = (*client)(nil)

var errClosed = errors.New("queue_storage: client closed")

// openClient lists the client's files (prefix) in dir and removes the
// temporary files a crash left.
func openClient(ext *queueStorage, dir, prefix string) (*client, error) {
	c := &client{ext: ext, dir: dir, prefix: prefix, files: map[string]*fileState{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, prefix) {
			continue
		}
		if strings.HasSuffix(name, tmpSuffix) {
			c.removeTmp(name)
			continue
		}
		key, ok := unescapeName(name[len(prefix):])
		if !ok {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		c.files[key] = &fileState{disk: diskBytes(info.Size())}
	}
	return c, nil
}

func (c *client) removeTmp(name string) {
	path := filepath.Join(c.dir, name)
	if info, err := os.Stat(path); err == nil && os.Remove(path) == nil {
		c.ext.addUsed(-diskBytes(info.Size()))
	}
}

func (c *client) path(key string) string {
	return filepath.Join(c.dir, c.prefix+escapeName(key))
}

// Get returns the key's value, nil when it has none (or its file holds no
// whole record: a write a crash cut short).
func (c *client) Get(_ context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	return c.get(key)
}

func (c *client) get(key string) ([]byte, error) {
	st := c.files[key]
	if st == nil {
		return nil, nil
	}
	if st.f != nil {
		return append([]byte(nil), st.value...), nil
	}
	b, err := os.ReadFile(c.path(key))
	if errors.Is(err, os.ErrNotExist) {
		delete(c.files, key)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v, _, _, _, ok := decodeFile(b)
	if !ok {
		c.ext.logger.Warn("queue_storage: a file holds no whole record (a write cut short); read as absent",
			zap.String("file", c.path(key)))
		return nil, nil
	}
	return v, nil
}

// Set writes the key's value.
func (c *client) Set(_ context.Context, key string, value []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errClosed
	}
	_, err := c.set(key, value)
	return err
}

// Delete removes the key's file; it never needs free space.
func (c *client) Delete(_ context.Context, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errClosed
	}
	return c.delete(key)
}

// Batch runs ops as one step as far as files allow: deletes first (so that
// a crash between a delete and the metadata written with it leaves at most
// an index pointing at nothing, never a file nothing points at), then the
// gets and sets in order; when a set fails, the sets before it in the batch
// are undone (a rewritten key gets its old value back, in place; a new key
// is removed), so the persistent queue's item and its write index are
// written together or not at all.
func (c *client) Batch(_ context.Context, ops ...*storage.Operation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errClosed
	}
	for _, op := range ops {
		if op.Type == storage.Delete {
			if err := c.delete(op.Key); err != nil {
				return err
			}
		}
	}
	var undo []func()
	for _, op := range ops {
		var err error
		switch op.Type {
		case storage.Get:
			op.Value, err = c.get(op.Key)
		case storage.Set:
			var u func()
			u, err = c.set(op.Key, op.Value)
			if u != nil {
				undo = append(undo, u)
			}
		}
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
			return err
		}
	}
	return nil
}

// Close closes the client's open files.
func (c *client) Close(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for _, st := range c.files {
		if st.f != nil {
			errs = append(errs, st.f.Close())
			st.f = nil
		}
	}
	c.ext.clientClosed(c)
	return errors.Join(errs...)
}

func (c *client) delete(key string) error {
	st := c.files[key]
	if st == nil {
		return nil
	}
	if st.f != nil {
		_ = st.f.Close()
		st.f = nil
	}
	if err := os.Remove(c.path(key)); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.ext.deleteFailed(key, err)
		return err
	}
	delete(c.files, key)
	c.ext.addUsed(-st.disk)
	return nil
}

// set writes key and returns how to undo it (nil when nothing was written).
func (c *client) set(key string, value []byte) (func(), error) {
	st := c.files[key]
	if st == nil {
		if err := c.create(key, value, false, nil); err != nil {
			return nil, err
		}
		return func() { _ = c.delete(key) }, nil
	}
	if st.f == nil {
		// The key's first rewrite (or the first since a restart): load
		// its file as it is.
		if err := c.load(key, st); err != nil {
			return nil, err
		}
	}
	old := st.value
	if st.f != nil && int64(len(value)) <= st.slot-recordHeader {
		if err := c.rewrite(st, value); err != nil {
			return nil, c.ext.writeFailed(err)
		}
		return func() { _ = c.rewrite(st, old) }, nil
	}
	// A one-slot file, or a value larger than its slots: a new two-slot
	// file replaces it (this write needs free space, the later ones not).
	if err := c.create(key, value, true, st); err != nil {
		return nil, err
	}
	return func() {
		if st := c.files[key]; st != nil && st.f != nil {
			_ = c.rewrite(st, old)
		}
	}, nil
}

// load reads a file for rewriting: a two-slot file is opened for writing
// in place; a one-slot file is left for create to replace.
func (c *client) load(key string, st *fileState) error {
	path := c.path(key)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	v, seq, slot, cur, ok := decodeFile(b)
	if !ok {
		return nil
	}
	st.seq, st.value, st.cur = seq, append([]byte(nil), v...), cur
	if slot == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	st.f, st.slot = f, slot
	return nil
}

// rewrite writes value in place into the slot that does not hold the
// newest record: the file's blocks are all written already, so this needs
// no free space.
func (c *client) rewrite(st *fileState, value []byte) error {
	buf := make([]byte, recordHeader+len(value))
	next := 1 - st.cur
	encodeRecord(buf, st.seq+1, st.slot, value)
	if _, err := st.f.WriteAt(buf, int64(next)*st.slot); err != nil {
		return err
	}
	st.cur, st.seq, st.value = next, st.seq+1, append(st.value[:0:0], value...)
	return nil
}

// create writes key's file anew: one slot, or two (twoSlot) each a whole
// number of blocks with room for twice the value. It replaces old's file
// (through a temporary file renamed over it) when old is not nil.
func (c *client) create(key string, value []byte, twoSlot bool, old *fileState) error {
	size := int64(recordHeader + len(value))
	var slot int64
	if twoSlot {
		slot = diskBytes(recordHeader + 2*int64(len(value)) + 64)
		size = 2 * slot
	}
	disk := diskBytes(size)
	oldDisk := int64(0)
	if old != nil {
		oldDisk = old.disk
	}
	if err := c.ext.reserve(disk - oldDisk); err != nil {
		return err
	}
	var seq uint64 = 1
	if old != nil {
		seq = old.seq + 1
	}
	buf := make([]byte, size) // the second slot's zeros are written too: its blocks are allocated now
	encodeRecord(buf, seq, slot, value)
	path := c.path(key)
	target := path
	if old != nil {
		target = path + tmpSuffix
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err == nil {
		_, err = f.Write(buf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && target != path {
			if old.f != nil {
				// Windows renames nothing over an open file; the
				// next rewrite reopens it if the rename fails.
				_ = old.f.Close()
				old.f = nil
			}
			err = os.Rename(target, path)
		}
	}
	if err != nil {
		_ = os.Remove(target)
		c.ext.addUsed(-(disk - oldDisk))
		return c.ext.writeFailed(err)
	}
	st := &fileState{disk: disk}
	if twoSlot {
		wf, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			st.f, st.slot, st.seq, st.value = wf, slot, seq, append([]byte(nil), value...)
		}
	}
	c.files[key] = st
	return nil
}

// escapeName keeps [A-Za-z0-9_-] and writes every other byte as %XX, so
// that a name never holds a path separator or a dot.
func escapeName(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-' {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[ch>>4])
		b.WriteByte(hex[ch&15])
	}
	return b.String()
}

func unescapeName(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			if s[i] == '.' {
				return "", false
			}
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		hi, lo := unhex(s[i+1]), unhex(s[i+2])
		if hi < 0 || lo < 0 {
			return "", false
		}
		b.WriteByte(byte(hi<<4 | lo))
		i += 2
	}
	return b.String(), true
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
