// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newSymtabCache(1000)
	a, b, d := &symbols{tab: &symtab{size: 400}}, &symbols{tab: &symtab{size: 400}}, &symbols{tab: &symtab{size: 400}}
	c.add("a", a)
	c.add("b", b)
	got, _ := c.get("a") // a is now the most recently used
	assert.Same(t, a, got)
	c.add("d", d) // over budget: b goes
	got, _ = c.get("b")
	assert.Nil(t, got)
	got, _ = c.get("a")
	assert.Same(t, a, got)
	assert.Equal(t, 800, c.used)

	c.grew("a", a, 300) // memoized names: over budget, d goes
	got, _ = c.get("d")
	assert.Nil(t, got)
	assert.Equal(t, 700, c.used)
	// Symbols the cache no longer keeps under their key (evicted, or
	// replaced by a second reading) grow outside its count.
	c.grew("b", b, 300)
	c.grew("a", d, 300)
	assert.Equal(t, 700, c.used)
	assert.True(t, c.holds("a", a))
	assert.False(t, c.holds("a", d))

	c.add("huge", &symbols{tab: &symtab{size: 1001}}) // larger than the budget: not kept, not read again soon
	got, failed := c.get("huge")
	assert.Nil(t, got)
	assert.True(t, failed)
	assert.Equal(t, 700, c.used)
}

func TestCacheRemembersFailures(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newSymtabCache(1000)
	c.now = func() time.Time { return now }
	c.fail("x")
	_, failed := c.get("x")
	assert.True(t, failed)
	now = now.Add(failureTTL)
	_, failed = c.get("x")
	assert.False(t, failed, "tried again after failureTTL")
}

// TestCacheLargeEvictedNotReloadedSoon: two large tables that do not fit
// together are not read again in turn at every batch: the one dropped
// stays out for failureTTL; a small one dropped may come back at once.
func TestCacheLargeEvictedNotReloadedSoon(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newSymtabCache(1000)
	c.now = func() time.Time { return now }
	c.add("small", &symbols{tab: &symtab{size: 100}})
	c.add("a", &symbols{tab: &symtab{size: 600}})
	c.add("b", &symbols{tab: &symtab{size: 600}}) // small and a go
	_, failed := c.get("a")
	assert.True(t, failed, "a large table dropped is not read again soon")
	_, failed = c.get("small")
	assert.False(t, failed, "a small one may be")
	now = now.Add(failureTTL)
	_, failed = c.get("a")
	assert.False(t, failed, "read again after failureTTL")
}
