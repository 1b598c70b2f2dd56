// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package debugfile // import "github.com/nexovue/otelcol-nexovue/internal/debugfile"

import (
	"container/list"
	"os"
	"strconv"
	"strings"
	"sync"
)

// MaxHeldFiles bounds the files Held keeps open.
const MaxHeldFiles = 512

// Held is the collector's one registry of held executables: the profiling
// receiver (its ExecutableReporter hook) holds each executable file the
// profiler opens, and the symbolize processor reads a file from it when
// the process that mapped it has exited (its /proc entries gone) or its
// container stopped. Both run in the same collector process.
var Held = NewHeldFiles(MaxHeldFiles)

// HeldFiles keeps files open by identity (the eBPF profiler's file id), at
// most max of them, the least recently held or used closed first.
type HeldFiles struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *heldFile, most recent first
	byID  map[string]*list.Element
}

type heldFile struct {
	id, path string
	f        *os.File
}

// NewHeldFiles returns a registry of at most max open files.
func NewHeldFiles(max int) *HeldFiles {
	return &HeldFiles{max: max, order: list.New(), byID: map[string]*list.Element{}}
}

// Hold keeps f open under id (lower-cased), path being the file's path as
// its process saw it. A file already held under id is kept and f closed.
func (h *HeldFiles) Hold(id, path string, f *os.File) {
	id = strings.ToLower(id)
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.byID[id]; ok {
		h.order.MoveToFront(e)
		f.Close()
		return
	}
	h.byID[id] = h.order.PushFront(&heldFile{id: id, path: path, f: f})
	for h.order.Len() > h.max {
		e := h.order.Back()
		hf := e.Value.(*heldFile)
		h.order.Remove(e)
		delete(h.byID, hf.id)
		hf.f.Close()
	}
}

// Open returns a new descriptor of the file held under id (its own offset;
// the caller closes it) and the file's path as its process saw it. The
// caller still verifies the file's identity.
func (h *HeldFiles) Open(id string) (*os.File, string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.byID[strings.ToLower(id)]
	if !ok {
		return nil, "", false
	}
	h.order.MoveToFront(e)
	hf := e.Value.(*heldFile)
	// Reopening through /proc/self/fd gives an open file description of
	// its own, even for a file deleted since.
	f, err := os.Open("/proc/self/fd/" + strconv.Itoa(int(hf.f.Fd())))
	if err != nil {
		return nil, "", false
	}
	return f, hf.path, true
}

// Len is the number of files held.
func (h *HeldFiles) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.order.Len()
}
