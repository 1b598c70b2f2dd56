// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/nexovue/otelcol-nexovue/extension/queuestorageextension/internal/metadatatest"
)

var exporterID = component.MustNewIDWithName("nexovue", "a")

type fixture struct {
	ext  *queueStorage
	tt   *componenttest.Telemetry
	logs *observer.ObservedLogs
	dir  string
}

// startExt starts the extension on a new directory (or dir when given)
// with the bound maxMiB.
func startExt(t *testing.T, dir string, maxMiB int64, free int64) *fixture {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	core, logs := observer.New(zap.InfoLevel)
	set := metadatatest.NewSettings(tt)
	set.Logger = zap.New(core)
	cfg := &Config{Directory: dir, CreateDirectory: true, MaxSizeMiB: maxMiB}
	ext, err := newQueueStorage(set, cfg)
	require.NoError(t, err)
	ext.freeBytes = func(string) (int64, error) { return free, nil }
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return &fixture{ext: ext, tt: tt, logs: logs, dir: dir}
}

func (f *fixture) client(t *testing.T) storage.Client {
	t.Helper()
	c, err := f.ext.GetClient(context.Background(), component.KindExporter, exporterID, "profiles")
	require.NoError(t, err)
	return c
}

func TestSetGetDeleteAndBytes(t *testing.T) {
	f := startExt(t, "", 1, 1<<40)
	c := f.client(t)
	ctx := context.Background()
	v, err := c.Get(ctx, "0")
	require.NoError(t, err)
	assert.Nil(t, v, "a key never set has no value")

	item := bytes.Repeat([]byte("x"), 5000)
	require.NoError(t, c.Set(ctx, "0", item))
	v, err = c.Get(ctx, "0")
	require.NoError(t, err)
	assert.Equal(t, item, v)
	assert.Equal(t, int64(8192), f.ext.usedBytes(), "5,024 bytes take two blocks")
	assert.Equal(t, []string{lockName, "exporter_nexovue_a_profiles.0"}, dirNames(t, f.dir))

	require.NoError(t, c.Delete(ctx, "0"))
	require.NoError(t, c.Delete(ctx, "0"), "deleting a missing key is no error")
	v, err = c.Get(ctx, "0")
	require.NoError(t, err)
	assert.Nil(t, v)
	assert.Zero(t, f.ext.usedBytes())
	assert.Equal(t, []string{lockName}, dirNames(t, f.dir))
}

// dirNames lists a directory's names, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestRewriteInPlace: from a key's second write on, its file is two slots
// written in place: the same file (inode), the same size, whatever is
// written (up to its slot).
func TestRewriteInPlace(t *testing.T) {
	f := startExt(t, "", 1, 1<<40)
	c := f.client(t)
	ctx := context.Background()
	path := filepath.Join(f.dir, "exporter_nexovue_a_profiles.qmv0")
	require.NoError(t, c.Set(ctx, "qmv0", []byte("first")))
	require.NoError(t, c.Set(ctx, "qmv0", []byte("second")))
	before, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, int64(2*blockSize), before.Size())
	for i := range 50 {
		require.NoError(t, c.Set(ctx, "qmv0", fmt.Appendf(nil, "value %d %s", i, strings.Repeat("m", i*10))))
	}
	after, err := os.Stat(path)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "rewrites must go in place, not through a new file")
	assert.Equal(t, before.Size(), after.Size())
	v, err := c.Get(ctx, "qmv0")
	require.NoError(t, err)
	assert.Equal(t, "value 49 "+strings.Repeat("m", 490), string(v))

	// A value larger than the slot gets a larger file; later rewrites go in
	// place again.
	big := bytes.Repeat([]byte("b"), 3*blockSize)
	require.NoError(t, c.Set(ctx, "qmv0", big))
	require.NoError(t, c.Set(ctx, "qmv0", []byte("small")))
	v, err = c.Get(ctx, "qmv0")
	require.NoError(t, err)
	assert.Equal(t, "small", string(v))

	// Read back by a new client (a restart).
	require.NoError(t, c.Close(ctx))
	c2 := f.client(t)
	v, err = c2.Get(ctx, "qmv0")
	require.NoError(t, err)
	assert.Equal(t, "small", string(v))
	st1, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, c2.Set(ctx, "qmv0", []byte("after restart")))
	st2, err := os.Stat(path)
	require.NoError(t, err)
	assert.True(t, os.SameFile(st1, st2), "after a restart, rewrites go in place too")
	v, err = c2.Get(ctx, "qmv0")
	require.NoError(t, err)
	assert.Equal(t, "after restart", string(v))
}

// TestTornRewriteKeepsOlderValue: a rewrite cut short (its slot's bytes
// garbled) leaves the value before it.
func TestTornRewriteKeepsOlderValue(t *testing.T) {
	f := startExt(t, "", 1, 1<<40)
	c := f.client(t)
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "qmv0", []byte("one")))
	require.NoError(t, c.Set(ctx, "qmv0", []byte("two")))   // slot 0 of the new file
	require.NoError(t, c.Set(ctx, "qmv0", []byte("three"))) // slot 1
	require.NoError(t, c.Close(ctx))

	path := filepath.Join(f.dir, "exporter_nexovue_a_profiles.qmv0")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	half := len(b) / 2
	b[half+recordHeader] ^= 0xff // the newest record's first byte of value
	require.NoError(t, os.WriteFile(path, b, 0o600))

	c2 := f.client(t)
	v, err := c2.Get(ctx, "qmv0")
	require.NoError(t, err)
	assert.Equal(t, "two", string(v))

	// A one-slot file cut short reads as absent.
	require.NoError(t, c2.Set(ctx, "7", []byte("item seven")))
	require.NoError(t, c2.Close(ctx))
	item := filepath.Join(f.dir, "exporter_nexovue_a_profiles.7")
	b, err = os.ReadFile(item)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(item, b[:len(b)-3], 0o600))
	c3 := f.client(t)
	v, err = c3.Get(ctx, "7")
	require.NoError(t, err)
	assert.Nil(t, v)
	assert.Equal(t, 1, f.logs.FilterMessageSnippet("holds no whole record").Len())
}

// TestBoundRefusesAndBatchUndoes: a new item past max_size_mib is refused
// with storage.ErrStorageFull and counted; the metadata written in the same
// batch gets its old value back; once an item is deleted the next fits.
func TestBoundRefusesAndBatchUndoes(t *testing.T) {
	f := startExt(t, "", 1, 1<<40)
	c := f.client(t)
	ctx := context.Background()
	item := bytes.Repeat([]byte("i"), 256<<10-recordHeader) // 256 KiB on disk
	require.NoError(t, c.Set(ctx, "qmv0", []byte("meta 0")))
	require.NoError(t, c.Set(ctx, "qmv0", []byte("meta 0"))) // two slots: 8 KiB
	for i := range 3 {
		require.NoError(t, c.Batch(ctx, storage.SetOperation("qmv0", fmt.Appendf(nil, "meta %d", i+1)), storage.SetOperation(fmt.Sprint(i), item)))
	}
	assert.Equal(t, int64(3*256<<10+2*blockSize), f.ext.usedBytes())

	err := c.Batch(ctx, storage.SetOperation("qmv0", []byte("meta 4")), storage.SetOperation("3", item))
	require.ErrorIs(t, err, storage.ErrStorageFull)
	assert.Contains(t, err.Error(), "max_size_mib 1")
	v, err := c.Get(ctx, "qmv0")
	require.NoError(t, err)
	assert.Equal(t, "meta 3", string(v), "the batch's metadata must be undone with its item")
	v, err = c.Get(ctx, "3")
	require.NoError(t, err)
	assert.Nil(t, v)
	metadatatest.AssertEqualQueueStorageWritesFailed(t, f.tt, []metricdata.DataPoint[int64]{
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "bound"))},
	}, metricdatatest.IgnoreTimestamp())
	assert.Equal(t, 1, f.logs.FilterMessage(FullMessage).Len())
	metadatatest.AssertEqualQueueStorageBytes(t, f.tt, []metricdata.DataPoint[int64]{{Value: 3*256<<10 + 2*blockSize}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualQueueStorageBoundBytes(t, f.tt, []metricdata.DataPoint[int64]{{Value: 1 << 20}}, metricdatatest.IgnoreTimestamp())

	// A second refusal within the minute is counted, not logged again; one
	// a minute later is logged again.
	require.ErrorIs(t, c.Set(ctx, "3", item), storage.ErrStorageFull)
	assert.Equal(t, 1, f.logs.FilterMessage(FullMessage).Len())
	later := time.Now().Add(fullLogEvery)
	f.ext.now = func() time.Time { return later }
	require.ErrorIs(t, c.Set(ctx, "3", item), storage.ErrStorageFull)
	require.ErrorIs(t, c.Set(ctx, "3", item), storage.ErrStorageFull)
	assert.Equal(t, 2, f.logs.FilterMessage(FullMessage).Len())
	metadatatest.AssertEqualQueueStorageWritesFailed(t, f.tt, []metricdata.DataPoint[int64]{
		{Value: 4, Attributes: attribute.NewSet(attribute.String("reason", "bound"))},
	}, metricdatatest.IgnoreTimestamp())

	// Sending an item deletes it (deletes first, then the metadata): room again.
	require.NoError(t, c.Batch(ctx, storage.SetOperation("qmv0", []byte("meta 5")), storage.DeleteOperation("0")))
	require.NoError(t, c.Batch(ctx, storage.SetOperation("qmv0", []byte("meta 6")), storage.SetOperation("3", item)))
}

// TestNoSpaceIsStorageFull: the filesystem's ENOSPC (and EDQUOT) become
// storage.ErrStorageFull, counted as no_space; other errors are not.
func TestNoSpaceIsStorageFull(t *testing.T) {
	f := startExt(t, "", 1, 12345)
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		err := f.ext.writeFailed(&os.PathError{Op: "write", Path: "x", Err: errno})
		require.ErrorIs(t, err, storage.ErrStorageFull)
		require.ErrorIs(t, err, errno)
	}
	err := f.ext.writeFailed(&os.PathError{Op: "write", Path: "x", Err: syscall.EIO})
	require.False(t, errors.Is(err, storage.ErrStorageFull))
	metadatatest.AssertEqualQueueStorageWritesFailed(t, f.tt, []metricdata.DataPoint[int64]{
		{Value: 2, Attributes: attribute.NewSet(attribute.String("reason", "no_space"))},
		{Value: 1, Attributes: attribute.NewSet(attribute.String("reason", "other"))},
	}, metricdatatest.IgnoreTimestamp())
	logged := f.logs.FilterMessage(FullMessage).All()
	require.Len(t, logged, 1)
	assert.Equal(t, f.dir, logged[0].ContextMap()["directory"])
	assert.Equal(t, int64(12345), logged[0].ContextMap()["free_bytes"])
}

// TestStartCountsAndWarns: at start the extension counts the files already
// in its directory, removes temporary ones, and warns when the bound is
// above the free space, naming the directory and both sizes.
func TestStartCountsAndWarns(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "exporter_nexovue_a_profiles.1"), make([]byte, 10000), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "exporter_nexovue_a_profiles.qmv0.tmp"), make([]byte, 10), 0o600))
	// Not a file of the extension's (file_storage's database): not counted.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "exporter_nexovue__profiles"), make([]byte, 50000), 0o600))
	// Nor is a file with one dot that no client names (a note left there).
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), make([]byte, 50000), 0o600))
	f := startExt(t, dir, 2, 1<<20)
	assert.Equal(t, int64(12288+4096), f.ext.usedBytes())
	warned := f.logs.FilterMessage(BoundAboveFreeMessage).All()
	require.Len(t, warned, 1)
	assert.Equal(t, dir, warned[0].ContextMap()["directory"])
	assert.Equal(t, int64(2<<20), warned[0].ContextMap()["max_size_bytes"])
	assert.Equal(t, int64(1<<20), warned[0].ContextMap()["free_bytes"])

	f.client(t)
	_, err := os.Stat(filepath.Join(dir, "exporter_nexovue_a_profiles.qmv0.tmp"))
	require.ErrorIs(t, err, os.ErrNotExist, "a temporary file a crash left is removed")
	assert.Equal(t, int64(12288), f.ext.usedBytes())

	roomy := startExt(t, t.TempDir(), 2, 3<<20)
	assert.Zero(t, roomy.logs.FilterMessage(BoundAboveFreeMessage).Len())
}

func TestEscapeName(t *testing.T) {
	for _, s := range []string{"qmv0", "12", "a/b", "..", "$x.y%z", ""} {
		e := escapeName(s)
		assert.NotContains(t, e, "/")
		assert.NotContains(t, e, ".")
		back, ok := unescapeName(e)
		require.True(t, ok, s)
		assert.Equal(t, s, back)
	}
	_, ok := unescapeName("bad%4")
	assert.False(t, ok)
}

// TestDirectoryLocked: a second extension (a second collector) on the same
// directory fails to start, naming the directory, while the first runs;
// once the first stops, it starts.
func TestDirectoryLocked(t *testing.T) {
	dir := t.TempDir()
	first := startExt(t, dir, 2, 1<<30)
	cfg := &Config{Directory: dir, CreateDirectory: true, MaxSizeMiB: 2}
	second, err := newQueueStorage(metadatatest.NewSettings(componenttest.NewTelemetry()), cfg)
	require.NoError(t, err)
	err = second.Start(context.Background(), componenttest.NewNopHost())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "queue_storage: directory "+dir+" is in use by another process")
	assert.Zero(t, second.usedBytes())

	require.NoError(t, first.ext.Shutdown(context.Background()))
	require.NoError(t, second.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, second.Shutdown(context.Background()))
	_, err = os.Stat(filepath.Join(dir, lockName))
	require.NoError(t, err, "the lock file stays: removing it could let two processes lock two files")
}
