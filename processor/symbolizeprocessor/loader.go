// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor"

import (
	"sync"

	"go.uber.org/zap"
)

// maxPendingLoads bounds the files waiting to be read; past it a newly
// seen file is left for a later batch.
const maxPendingLoads = 256

// loadRequest is a mapping's file to read: its identity, its name, and the
// processes that map it; full: its debug files and DWARF too (the second
// reading), else its symbol table alone (the first).
type loadRequest struct {
	key   string
	id    fileIdentity
	name  string
	procs []procRef
	full  bool
}

// loader reads newly seen files one at a time in a goroutine of its own,
// so that reading and indexing a large file never holds up a batch that
// does not need it (nor the processor's lock): a batch that needs a file
// being read waits for it, outside the lock, at most load_wait (then goes
// out without its names: later ones get them). One file at a time bounds the memory of the
// sections being read to one file's. A file is read twice: first its symbol
// table alone (milliseconds: the next batch has its names), then, once no
// other file waits for its first reading, its debug files and DWARF (which
// takes up to a second for a libc), which replace it in the cache; so a
// start-up that sees hundreds of files names them all before it indexes
// their DWARF. The goroutine starts with the first
// file asked for and ends at the processor's shutdown.
type loader struct {
	p      *symbolizeProcessor
	queue  chan loadRequest // first readings
	second chan loadRequest // second readings
	quit   chan struct{}
	done   sync.WaitGroup // the goroutine
	work   sync.WaitGroup // requests not finished
	mu     sync.Mutex     // guards waiting, started, stopped
	// waiting holds the files asked for and not read in full yet, each
	// with a channel closed when its last reading is over (its symbols,
	// or its failure, are then in the cache).
	waiting map[string]chan struct{}
	started bool // the goroutine runs (from the first file asked for)
	stopped bool
	// beforeLoad, when set (by tests), is called before each reading.
	beforeLoad func(loadRequest)
}

func newLoader(p *symbolizeProcessor) *loader {
	l := &loader{
		p:       p,
		queue:   make(chan loadRequest, maxPendingLoads),
		second:  make(chan loadRequest, maxPendingLoads),
		quit:    make(chan struct{}),
		waiting: map[string]chan struct{}{},
	}
	return l
}

// pending tells whether a file identity is queued or being read.
func (l *loader) pending(key string) bool {
	return l.finished(key) != nil
}

// finished returns the channel closed when a file asked for has been read in
// full (both readings, or the one that failed or ended it), nil when the
// file is not waiting.
func (l *loader) finished(key string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting[key]
}

// enqueue asks for a file to be read, unless it is already asked for or
// the queue is full (a later batch asks again).
func (l *loader) enqueue(req loadRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.waiting[req.key]; ok || l.stopped {
		return
	}
	if !l.started {
		l.started = true
		l.done.Add(1)
		go l.run()
	}
	l.work.Add(1)
	select {
	case l.queue <- req:
		l.waiting[req.key] = make(chan struct{})
	default:
		l.work.Done()
	}
}

func (l *loader) run() {
	defer l.done.Done()
	for {
		var req loadRequest
		select { // first readings first
		case <-l.quit:
			return
		case req = <-l.queue:
		default:
			select {
			case <-l.quit:
				return
			case req = <-l.queue:
			case req = <-l.second:
			}
		}
		if l.beforeLoad != nil {
			l.beforeLoad(req)
		}
		syms, failures := l.load(req)
		l.p.loaded(req, syms, failures)
		again := false
		l.mu.Lock()
		if syms != nil && !req.full && !l.p.limits.symtabOnly && !syms.goBinary {
			req.full = true
			select {
			case l.second <- req:
				l.work.Add(1)
				again = true
			default: // too many waiting: the symbol table stays
			}
		}
		if !again {
			if ch, ok := l.waiting[req.key]; ok {
				close(ch)
				delete(l.waiting, req.key)
			}
		}
		l.mu.Unlock()
		l.work.Done()
	}
}

// load reads one file; a panic on the way (a reader's bug on a hostile
// file) is a failure of that file, never the agent's end.
func (l *loader) load(req loadRequest) (syms *symbols, failures []string) {
	defer func() {
		if p := recover(); p != nil {
			l.p.logger.Warn("reading a mapping's file failed",
				zap.String("mapping", req.name), zap.String("identity", req.key), zap.Any("panic", p))
			syms, failures = nil, []string{reasonMalformed}
		}
	}()
	return l.p.loadMapping(req)
}

// wait returns when every file asked for so far has been read.
func (l *loader) wait() {
	l.work.Wait()
}

// stop ends the goroutine, after the file it reads.
func (l *loader) stop() {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.stopped = true
	close(l.quit)
	l.mu.Unlock()
	l.done.Wait()
	// Batches waiting for files that will not be read go on.
	l.mu.Lock()
	for key, ch := range l.waiting {
		close(ch)
		delete(l.waiting, key)
	}
	l.mu.Unlock()
}
