// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package queuestorageextension // import "github.com/nexovue/otelcol-nexovue/extension/queuestorageextension"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/nexovue/otelcol-nexovue/extension/queuestorageextension/internal/metadata"
)

// FullMessage is the warning logged, at most once a minute, while new
// items are refused.
const FullMessage = "queue_storage is full: new data is refused (the senders get a retryable error) until space returns; the queues keep sending and deleting what they hold"

// BoundAboveFreeMessage is the warning logged at start when max_size_mib is
// larger than the free space of the directory's filesystem.
const BoundAboveFreeMessage = "queue_storage: max_size_mib is larger than the free space of the directory's filesystem; the queue will be refused new data when the filesystem fills, before its bound"

// lockName is the file in the directory that the running extension holds
// an exclusive lock on (flock, LockFileEx): two collectors sharing one
// directory would share the queues' indexes and send items twice or lose
// them, so the second one fails to start, naming the directory. Its name
// starts with a dot: not a client's file, not counted against the bound.
const lockName = ".queue_storage.lock"

// fullLogEvery spaces the FullMessage lines.
const fullLogEvery = time.Minute

// Write-failure reasons (the reason attribute).
const (
	reasonNoSpace = "no_space"
	reasonBound   = "bound"
	reasonOther   = "other"
)

type queueStorage struct {
	cfg    *Config
	logger *zap.Logger
	tb     *metadata.TelemetryBuilder
	// freeBytes returns the free space of the directory's filesystem
	// (replaced in tests).
	freeBytes func(dir string) (int64, error)
	// now is the clock of the full line's spacing (replaced in tests).
	now func() time.Time

	lock *os.File // lockName, locked from Start to Shutdown

	mu      sync.Mutex
	used    int64 // bytes on disk of every file in the directory
	clients map[*client]struct{}
	lastLog time.Time
}

var _ storage.Extension = (*queueStorage)(nil)

func newQueueStorage(set extension.Settings, cfg *Config) (*queueStorage, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &queueStorage{cfg: cfg, logger: set.Logger, tb: tb, freeBytes: freeBytes, now: time.Now, clients: map[*client]struct{}{}}, nil
}

// Start creates the directory when create_directory is set, counts the
// bytes its files hold (removing the temporary files a crash left), and
// warns when the bound is larger than the filesystem's free space. It
// writes nothing else: it starts on a full filesystem.
func (e *queueStorage) Start(context.Context, component.Host) error {
	dir := e.cfg.Directory
	if e.cfg.CreateDirectory {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("queue_storage: directory %s: %w", dir, err)
		}
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("queue_storage: directory %s: %w (create_directory creates it)", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("queue_storage: directory %s is not a directory", dir)
	}
	if err := e.lockDirectory(); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("queue_storage: directory %s: %w", dir, err)
	}
	var used int64
	for _, ent := range entries {
		if !ent.Type().IsRegular() || !isClientFile(ent.Name()) {
			continue
		}
		if fi, err := ent.Info(); err == nil {
			used += diskBytes(fi.Size())
		}
	}
	e.mu.Lock()
	e.used = used
	e.mu.Unlock()
	if free, err := e.freeBytes(dir); err == nil && e.cfg.maxBytes() > free+used {
		e.logger.Warn(BoundAboveFreeMessage,
			zap.String("directory", dir),
			zap.Int64("max_size_bytes", e.cfg.maxBytes()),
			zap.Int64("free_bytes", free),
			zap.Int64("queue_bytes", used))
	}
	if err := e.tb.RegisterQueueStorageBytesCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(e.usedBytes())
		return nil
	}); err != nil {
		return err
	}
	return e.tb.RegisterQueueStorageBoundBytesCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(e.cfg.maxBytes())
		return nil
	})
}

// lockDirectory takes the directory's lock, or fails naming the directory
// when another process (a second collector) holds it.
func (e *queueStorage) lockDirectory() error {
	path := filepath.Join(e.cfg.Directory, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("queue_storage: directory %s: lock file: %w", e.cfg.Directory, err)
	}
	if err := lockFile(f); err != nil {
		_ = f.Close()
		if isLocked(err) {
			return fmt.Errorf("queue_storage: directory %s is in use by another process (it holds %s): two collectors must not share one queue directory", e.cfg.Directory, lockName)
		}
		return fmt.Errorf("queue_storage: directory %s: locking %s: %w", e.cfg.Directory, lockName, err)
	}
	e.lock = f
	return nil
}

// Shutdown closes the clients the components left open.
func (e *queueStorage) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	clients := make([]*client, 0, len(e.clients))
	for c := range e.clients {
		clients = append(clients, c)
	}
	e.mu.Unlock()
	var errs []error
	for _, c := range clients {
		errs = append(errs, c.Close(ctx))
	}
	if e.lock != nil {
		errs = append(errs, e.lock.Close()) // closing releases the lock
		e.lock = nil
	}
	e.tb.Shutdown()
	return errors.Join(errs...)
}

// GetClient returns the client of one component's storage: its files are
// <kind>_<type>_<name>_<storageName>.<key> in the directory.
func (e *queueStorage) GetClient(_ context.Context, kind component.Kind, id component.ID, storageName string) (storage.Client, error) {
	name := fmt.Sprintf("%s_%s_%s", kindString(kind), id.Type(), id.Name())
	if storageName != "" {
		name += "_" + storageName
	}
	c, err := openClient(e, e.cfg.Directory, escapeName(name)+".")
	if err != nil {
		return nil, fmt.Errorf("queue_storage: directory %s: %w", e.cfg.Directory, err)
	}
	e.mu.Lock()
	e.clients[c] = struct{}{}
	e.mu.Unlock()
	return c, nil
}

func (e *queueStorage) clientClosed(c *client) {
	e.mu.Lock()
	delete(e.clients, c)
	e.mu.Unlock()
}

// isClientFile tells the files of the clients (<kind>_<client>.<key>, or
// that with tmpSuffix) from others in the directory, such as a
// file_storage database or a note left there: only the clients' files
// count against the bound.
func isClientFile(name string) bool {
	name = strings.TrimSuffix(name, tmpSuffix)
	if strings.Count(name, ".") != 1 || strings.HasSuffix(name, ".") {
		return false
	}
	kind, _, ok := strings.Cut(name, "_")
	return ok && clientKinds[kind]
}

// clientKinds are the names kindString gives, which start every client's
// files.
var clientKinds = map[string]bool{"receiver": true, "processor": true, "exporter": true, "extension": true, "connector": true, "other": true}

func kindString(k component.Kind) string {
	switch k {
	case component.KindReceiver:
		return "receiver"
	case component.KindProcessor:
		return "processor"
	case component.KindExporter:
		return "exporter"
	case component.KindExtension:
		return "extension"
	case component.KindConnector:
		return "connector"
	}
	return "other"
}

func (e *queueStorage) usedBytes() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.used
}

func (e *queueStorage) addUsed(delta int64) {
	e.mu.Lock()
	e.used += delta
	e.mu.Unlock()
}

// reserve counts delta more bytes on disk, or refuses them when they would
// take the directory past its bound (a negative delta always succeeds).
func (e *queueStorage) reserve(delta int64) error {
	e.mu.Lock()
	if delta > 0 && e.used+delta > e.cfg.maxBytes() {
		used := e.used
		e.mu.Unlock()
		return e.refuse(reasonBound, fmt.Errorf("%w: queue_storage directory %s holds %d bytes, its bound (max_size_mib %d) leaves no room for %d more",
			storage.ErrStorageFull, e.cfg.Directory, used, e.cfg.MaxSizeMiB, delta))
	}
	e.used += delta
	e.mu.Unlock()
	return nil
}

// writeFailed classifies a failed write and returns the error the queue
// gets: storage.ErrStorageFull (retryable for its callers) when the
// filesystem is full.
func (e *queueStorage) writeFailed(err error) error {
	if isNoSpace(err) {
		return e.refuse(reasonNoSpace, fmt.Errorf("%w: queue_storage directory %s: %w", storage.ErrStorageFull, e.cfg.Directory, err))
	}
	e.tb.QueueStorageWritesFailed.Add(context.Background(), 1, metric.WithAttributes(attribute.String("reason", reasonOther)))
	return fmt.Errorf("queue_storage directory %s: %w", e.cfg.Directory, err)
}

// refuse counts a refused write and logs FullMessage at most once a minute.
func (e *queueStorage) refuse(reason string, err error) error {
	e.tb.QueueStorageWritesFailed.Add(context.Background(), 1, metric.WithAttributes(attribute.String("reason", reason)))
	now := e.now()
	e.mu.Lock()
	logNow := e.lastLog.IsZero() || now.Sub(e.lastLog) >= fullLogEvery
	if logNow {
		e.lastLog = now
	}
	used := e.used
	e.mu.Unlock()
	if logNow {
		free, ferr := e.freeBytes(e.cfg.Directory)
		if ferr != nil {
			free = -1
		}
		e.logger.Warn(FullMessage,
			zap.String("directory", e.cfg.Directory),
			zap.String("reason", reason),
			zap.Int64("free_bytes", free),
			zap.Int64("queue_bytes", used),
			zap.Int64("max_size_bytes", e.cfg.maxBytes()))
	}
	return err
}

func (e *queueStorage) deleteFailed(key string, err error) {
	e.tb.QueueStorageDeletesFailed.Add(context.Background(), 1)
	e.logger.Error("queue_storage: an item could not be deleted", zap.String("directory", e.cfg.Directory),
		zap.String("file", filepath.Base(key)), zap.Error(err))
}
