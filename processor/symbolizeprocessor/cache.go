// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor"

import (
	"container/list"
	"time"
)

// symtabCache keeps parsed symbols (tables and DWARF lines) by file identity, least recently
// used evicted first, within a budget of bytes (each table's size estimate).
// A table larger than the whole budget is not kept. Files that could not be
// symbolized (or whose table is larger than the budget) are remembered for failureTTL so that a file that is gone, too
// large or not an ELF file is not looked for again at every batch. It is
// not safe for concurrent use.
type symtabCache struct {
	budget, used int
	order        *list.List // of *cacheEntry, most recently used first
	entries      map[string]*list.Element
	failures     map[string]time.Time // identity → when to try again
	now          func() time.Time
}

type cacheEntry struct {
	key string
	tab *symbols
}

const (
	failureTTL = time.Minute
	// maxFailures bounds the remembered failures; past it they are forgotten
	// all at once.
	maxFailures = 4096
)

func newSymtabCache(budget int) *symtabCache {
	return &symtabCache{
		budget:   budget,
		order:    list.New(),
		entries:  map[string]*list.Element{},
		failures: map[string]time.Time{},
		now:      time.Now,
	}
}

// get returns the table of a file identity, and whether the identity is
// known to have failed recently (then tab is nil and there is no use
// looking for the file again yet).
func (c *symtabCache) get(key string) (tab *symbols, failed bool) {
	if e, ok := c.entries[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cacheEntry).tab, false
	}
	if until, ok := c.failures[key]; ok {
		if c.now().Before(until) {
			return nil, true
		}
		delete(c.failures, key)
	}
	return nil, false
}

// add keeps a table, evicting the least recently used ones beyond the
// budget. A table larger than the whole budget is not kept, and its file is
// not read again for failureTTL: it would be parsed again at every batch.
func (c *symtabCache) add(key string, tab *symbols) {
	if e, ok := c.entries[key]; ok {
		c.used -= e.Value.(*cacheEntry).tab.size()
		c.order.Remove(e)
		delete(c.entries, key)
	}
	if tab.size() > c.budget {
		c.fail(key)
		return
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, tab: tab})
	c.used += tab.size()
	c.evict()
}

// holds tells whether the cache keeps tab under key (a batch's symbols
// may have been evicted, or replaced by a second reading, since it got
// them).
func (c *symtabCache) holds(key string, tab *symbols) bool {
	e, ok := c.entries[key]
	return ok && e.Value.(*cacheEntry).tab == tab
}

// grew accounts for bytes tab, kept under key, grew by (memoized names
// and frames); the growth of symbols the cache no longer keeps is not its
// own.
func (c *symtabCache) grew(key string, tab *symbols, n int) {
	if n != 0 && c.holds(key, tab) {
		c.used += n
		c.evict()
	}
}

// evict drops the least recently used tables until the cache is within its
// budget. A large table dropped (an eighth of the budget or more, such as
// a big Go binary's function table) is not read again for failureTTL:
// files whose tables do not fit together would otherwise be read again in
// turn, at every batch.
func (c *symtabCache) evict() {
	for c.used > c.budget {
		e := c.order.Back()
		if e == nil {
			return
		}
		ce := e.Value.(*cacheEntry)
		c.order.Remove(e)
		delete(c.entries, ce.key)
		size := ce.tab.size()
		c.used -= size
		if size >= c.budget/8 {
			c.fail(ce.key)
		}
	}
}

// fail remembers that a file identity could not be symbolized.
func (c *symtabCache) fail(key string) {
	if len(c.failures) >= maxFailures {
		clear(c.failures)
	}
	c.failures[key] = c.now().Add(failureTTL)
}
