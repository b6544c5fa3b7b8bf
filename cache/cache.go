// Package cache holds zfuse's byte-budgeted caches. Both load through
// internal/flight's Group: one load per key at a time, shared by every
// reader that wants that key, and outliving any one of them.
//
// Cache is the compressed tier (values as stored). It sits on ristretto
// (TinyLFU admission, sampled LFU eviction), so an offered value may be
// rejected and a kept one evicted at any time; admission keeps a scan
// larger than the budget from evicting the values read again. Its values
// are immutable slices shared by every reader: nobody may write to one, and
// an evicted one is freed by the garbage collector once unreferenced.
//
// LRU is the decoded tier (and the shard-index cache): an exact LRU, so a
// value added stays until it is evicted to make room, removed, replaced or
// closed, and a caller can rely on what it just added. Each value that
// leaves is passed once to the Drop callback, outside the lock: readahead
// releases the tier's reference to its chunk there, and the last reference
// returns the decode buffer to its pool, or the chunk's file to be reused
// or closed.
//
// cache imports nothing else of zfuse but internal/flight, the load-once
// helper, and internal/bytesize, which formats Stats.
package cache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/zfuse/zfuse/internal/bytesize"
	"github.com/zfuse/zfuse/internal/flight"
)

// A Config sizes a Cache.
type Config struct {
	// MaxBytes is the budget: the sum of cap(value) over kept values never
	// exceeds it. Zero or less keeps nothing (Load still shares loads).
	MaxBytes int64
	// ItemBytes is the typical size of a value, used only to size the
	// admission counters (ristretto wants ten per value that fits). Zero
	// means 64 KiB.
	ItemBytes int64
}

// A Cache maps string keys to immutable byte slices within a byte budget.
// A key names one value for the life of the cache (as a chunk key names one
// chunk): every add or load of a key gives a value of the same size, or the
// budget accounting drifts (ristretto updates a cost in place, without
// evicting). It is safe for concurrent use. Close it to stop its goroutines.
type Cache struct {
	rc     *ristretto.Cache[string, []byte] // nil when New's budget was <= 0; owns the budget
	max    atomic.Int64                     // the budget: New's, or as SetMaxBytes changed it
	flight flight.Group[[]byte]             // one load per key at a time

	life   sync.RWMutex // held for reading by each use of rc, for writing by Close
	closed bool         // under life: Close has run

	// Counters, updated atomically.
	hits, misses, loads, loadErrors, rejected atomic.Int64
}

// New returns an empty cache with the budget cfg.MaxBytes.
func New(cfg Config) (*Cache, error) {
	c := &Cache{}
	c.max.Store(max(cfg.MaxBytes, 0))
	if cfg.MaxBytes <= 0 {
		return c, nil
	}
	item := cfg.ItemBytes
	if item <= 0 {
		item = 64 << 10
	}
	counters := min(max(10*(cfg.MaxBytes/item), 1000), 10_000_000)
	rc, err := ristretto.NewCache(&ristretto.Config[string, []byte]{
		NumCounters: counters,
		MaxCost:     cfg.MaxBytes,
		BufferItems: 64, // ristretto's recommended Get buffer size
		// Cost is exactly what we pass (cap of the value), not plus
		// ristretto's per-item overhead, so MaxCost is a byte budget.
		IgnoreInternalCost: true,
		// Metrics gives CostAdded and CostEvicted: the bytes kept.
		Metrics:  true,
		OnReject: func(*ristretto.Item[[]byte]) { c.rejected.Add(1) },
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c.rc = rc
	return c, nil
}

// lookup returns the value kept under key. The value is shared: do not modify
// it. A Get also tells the admission policy that key is wanted.
func (c *Cache) lookup(key string) ([]byte, bool) {
	v, ok := c.get(key)
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return v, ok
}

func (c *Cache) get(key string) ([]byte, bool) {
	if !c.enter() {
		return nil, false
	}
	defer c.life.RUnlock()
	return c.rc.Get(key)
}

// enter reports whether the cache keeps values and is not closed, and then
// holds the read lock that makes Close wait until the caller's call of rc
// is done (RUnlock): ristretto must not be used while it closes.
func (c *Cache) enter() bool {
	if c.rc == nil {
		return false
	}
	c.life.RLock()
	if c.closed {
		c.life.RUnlock()
		return false
	}
	return true
}

// has reports whether a value is kept under key, without counting a hit or
// a miss and without telling the admission policy.
func (c *Cache) has(key string) bool {
	if !c.enter() {
		return false
	}
	defer c.life.RUnlock()
	_, ok := c.rc.GetTTL(key)
	return ok
}

// add offers v to the cache under key. The cache takes v as it is (it must
// not be modified afterwards). Adding is asynchronous: the value becomes
// visible to get a little later (at the latest after wait), and it may be
// dropped or rejected by the admission policy. add reports false if it was
// dropped at once.
func (c *Cache) add(key string, v []byte) bool {
	if !c.enter() {
		return false
	}
	defer c.life.RUnlock()
	return c.rc.Set(key, v, int64(cap(v)))
}

// Delete drops the value under key, if one is kept: the value stored under
// key changed (zfuse --refresh). A Load running meanwhile does not keep what
// it loaded, and the next Load loads again.
func (c *Cache) Delete(key string) {
	c.flight.Forget(key)
	if c.enter() {
		defer c.life.RUnlock()
		c.rc.Wait()
		c.rc.Del(key)
	}
}

// wait blocks until every earlier add has been applied (kept or rejected).
func (c *Cache) wait() {
	if c.enter() {
		defer c.life.RUnlock()
		c.rc.Wait()
	}
}

// Load returns the value under key, calling load to produce it on a miss.
// Concurrent callers for the same key share one call of load, which runs
// with ctx's values but without its cancellation: a caller whose ctx ends
// returns ctx.Err() at once, and the load goes on for the others. A value
// that loads without error is offered to the cache before it is returned.
// load must return a value that nobody modifies afterwards.
func (c *Cache) Load(ctx context.Context, key string, load func(context.Context) ([]byte, error)) ([]byte, error) {
	if v, ok := c.lookup(key); ok {
		return v, nil
	}
	return c.flight.Do(ctx, key, func(ctx context.Context) ([]byte, error) {
		// A load for key may have finished between our Get and Do.
		if v, ok := c.get(key); ok {
			return v, nil
		}
		c.loads.Add(1)
		forgets := c.flight.Forgets()
		v, err := load(ctx)
		if err != nil {
			c.loadErrors.Add(1)
			return nil, err
		}
		if c.flight.Forgets() != forgets {
			return v, nil // perhaps what a Delete meanwhile meant to drop
		}
		if c.add(key, v) {
			// Make v visible before this load is forgotten, so that the
			// next reader finds it instead of loading again.
			c.wait()
		}
		return v, nil
	})
}

// SetMaxBytes changes the budget to n (a cache made without one keeps
// nothing, still). Lowering it drops every value kept, at once: the
// process needs the memory back (memory pressure), and ristretto would
// only evict as values are added.
func (c *Cache) SetMaxBytes(n int64) {
	if !c.enter() {
		return
	}
	defer c.life.RUnlock()
	n = max(n, 0)
	old := c.max.Swap(n)
	c.rc.UpdateMaxCost(max(n, 1)) // ristretto: 1 byte keeps nothing, 0 would be no limit
	if n < old && c.usedLocked() > 0 {
		c.rc.Clear()
	}
}

// used returns the bytes kept: the sum of cap(value) over kept values, as
// the eviction policy accounts them. It never exceeds Max. (ristretto stores
// an admitted value just before it drops the victims that made room for it,
// so for an instant its map may hold both.)
func (c *Cache) used() int64 {
	if !c.enter() {
		return 0
	}
	defer c.life.RUnlock()
	return c.usedLocked()
}

// usedLocked is used, for a caller that entered.
func (c *Cache) usedLocked() int64 {
	// Read the additions first: every eviction that made room for an
	// addition counted here happened before it, so the difference never
	// overstates what was kept at some instant.
	added := c.rc.Metrics.CostAdded()
	evicted := c.rc.Metrics.CostEvicted()
	return int64(added - evicted)
}

// Close stops the cache's goroutines and drops every value. Afterwards Get
// misses, add drops, and Load loads every time.
func (c *Cache) Close() {
	if c.rc == nil {
		return
	}
	c.life.Lock()
	defer c.life.Unlock()
	if !c.closed {
		c.closed = true
		c.rc.Close()
	}
}

// Stats are a cache's counters since New.
type Stats struct {
	Hits       int64 // lookups that found a value (Get, and Load before loading)
	Misses     int64 // lookups that did not
	Loads      int64 // calls of a load function (shared loads count once)
	LoadErrors int64 // loads that returned an error
	Rejected   int64 // values offered but not kept: dropped or refused by admission
	Evicted    int64 // values removed to make room
	Used, Max  int64 // bytes kept, and the budget
	Items      int64 // values kept (LRU only)
}

// Stats returns the counters. It is safe to call at any time.
func (c *Cache) Stats() Stats {
	s := Stats{
		Hits:       c.hits.Load(),
		Misses:     c.misses.Load(),
		Loads:      c.loads.Load(),
		LoadErrors: c.loadErrors.Load(),
		Used:       c.used(),
		Max:        c.max.Load(),
	}
	if c.enter() {
		m := c.rc.Metrics
		s.Rejected = c.rejected.Load() + int64(m.SetsDropped())
		s.Evicted = int64(m.KeysEvicted())
		c.life.RUnlock()
	}
	return s
}

// String summarises s in one line, sizes in binary units.
func (s Stats) String() string {
	return fmt.Sprintf("used %s of %s, hits %d, misses %d, loads %d (%d failed), rejected %d, evicted %d",
		bytesize.Format(s.Used), bytesize.Format(s.Max), s.Hits, s.Misses, s.Loads, s.LoadErrors, s.Rejected, s.Evicted)
}
