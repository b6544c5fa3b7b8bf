package cache

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"

	"github.com/zfuse/zfuse/internal/flight"
)

// An LRUConfig sizes an LRU.
type LRUConfig[V any] struct {
	// MaxBytes bounds the sum of Size over kept values, MaxItems their
	// number (zero or less: no bound on the number). The value added
	// last is kept even when it alone exceeds MaxBytes, until the next
	// Add: the callers of the Load that produced it are still taking it.
	MaxBytes int64
	MaxItems int
	// Size returns the bytes a value counts for.
	Size func(V) int64
	// Drop, if set, is called once for each value that leaves the cache
	// (evicted, removed, replaced, or at Close), after it has left and
	// outside the cache's lock: the place to release what it holds.
	Drop func(V)
}

// An LRU keeps values within a byte budget, evicting the least recently
// used, exactly: unlike Cache every value added is kept at once, and a
// value leaves only to make room, so a caller can rely on what it just
// added (a decoded chunk the kernel is about to read) being there. It is
// the decoded tier; Cache, with its admission policy, is the tier of
// values as stored. Values are immutable. An LRU is safe for concurrent
// use.
type LRU[V comparable] struct {
	cfg    LRUConfig[V]    // immutable
	flight flight.Group[V] // one load per key at a time

	mu       sync.Mutex               // guards the fields below
	maxBytes int64                    // the budget: cfg.MaxBytes, or as SetMaxBytes changed it
	used     int64                    // sum of Size over entries
	ll       list.List                // of *lruEntry[V], most recently used first
	m        map[string]*list.Element // key -> element of ll

	// Counters, updated atomically.
	hits, misses, loads, loadErrors, evicted atomic.Int64
}

type lruEntry[V any] struct {
	key  string
	v    V
	size int64
}

// NewLRU returns an empty LRU.
func NewLRU[V comparable](cfg LRUConfig[V]) *LRU[V] {
	return &LRU[V]{cfg: cfg, maxBytes: cfg.MaxBytes, m: map[string]*list.Element{}}
}

// lookup returns the value kept under key and marks it recently used.
func (c *LRU[V]) lookup(key string) (V, bool) {
	c.mu.Lock()
	e, ok := c.m[key]
	var v V
	if ok {
		c.ll.MoveToFront(e)
		v = e.Value.(*lruEntry[V]).v
	}
	c.mu.Unlock()
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return v, ok
}

// Has reports whether a value is kept under key, without counting a hit or
// a miss or changing the eviction order.
func (c *LRU[V]) Has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[key]
	return ok
}

// Loading reports whether a Load is producing the value of key: a caller
// that would produce it too (a prefetch) need not, a Load will find it.
func (c *LRU[V]) Loading(key string) bool { return c.flight.Running(key) }

// Add keeps v under key, as a Load that produced it would: for a value
// made elsewhere than in a Load.
func (c *LRU[V]) Add(key string, v V) { c.add(key, v) }

// add keeps v under key, replacing any value there, and evicts the least
// recently used values until the budget holds (v itself excepted).
func (c *LRU[V]) add(key string, v V) {
	size := c.cfg.Size(v)
	var gone []V
	c.mu.Lock()
	if e, ok := c.m[key]; ok {
		old := c.ll.Remove(e).(*lruEntry[V])
		c.used -= old.size
		gone = append(gone, old.v)
	}
	c.m[key] = c.ll.PushFront(&lruEntry[V]{key: key, v: v, size: size})
	c.used += size
	gone = c.evictLocked(1, gone)
	c.mu.Unlock()
	c.dropAll(gone)
}

// evictLocked evicts the least recently used values, keeping at least
// keep, until the budget holds, and returns them appended to gone.
func (c *LRU[V]) evictLocked(keep int, gone []V) []V {
	for c.ll.Len() > keep && (c.used > c.maxBytes || (c.cfg.MaxItems > 0 && c.ll.Len() > c.cfg.MaxItems)) {
		old := c.ll.Remove(c.ll.Back()).(*lruEntry[V])
		delete(c.m, old.key)
		c.used -= old.size
		gone = append(gone, old.v)
		c.evicted.Add(1)
	}
	return gone
}

// SetMaxBytes changes the byte budget to n, evicting the least recently
// used values (every one, if need be) until they fit it: the process
// needs the memory back (memory pressure).
func (c *LRU[V]) SetMaxBytes(n int64) {
	c.mu.Lock()
	c.maxBytes = n
	gone := c.evictLocked(0, nil)
	c.mu.Unlock()
	c.dropAll(gone)
}

// Remove drops the value under key if it is v (a later Add may have
// replaced it), and reports whether it did.
func (c *LRU[V]) Remove(key string, v V) bool {
	c.mu.Lock()
	e, ok := c.m[key]
	if !ok || e.Value.(*lruEntry[V]).v != v {
		c.mu.Unlock()
		return false
	}
	c.ll.Remove(e)
	delete(c.m, key)
	c.used -= e.Value.(*lruEntry[V]).size
	c.mu.Unlock()
	c.dropAll([]V{v})
	return true
}

// Delete drops the value under key, whatever it is, and reports whether
// there was one: the value stored under key changed (zfuse --refresh). A
// Load running meanwhile returns what it loaded to its callers but does not
// keep it (it is dropped at once), and the next Load loads again.
func (c *LRU[V]) Delete(key string) bool {
	c.flight.Forget(key)
	c.mu.Lock()
	e, ok := c.m[key]
	if !ok {
		c.mu.Unlock()
		return false
	}
	c.ll.Remove(e)
	delete(c.m, key)
	x := e.Value.(*lruEntry[V])
	c.used -= x.size
	c.mu.Unlock()
	c.dropAll([]V{x.v})
	return true
}

// Load returns the value under key, calling load to produce it on a miss,
// once for all concurrent callers (see package flight), and keeps what it loads.
func (c *LRU[V]) Load(ctx context.Context, key string, load func(context.Context) (V, error)) (V, error) {
	return c.LoadNow(ctx, key, nil, load)
}

// LoadNow is Load, but on a miss it first calls now, which must not block,
// in the caller's goroutine, and calls load only where now finds nothing
// (flight.Group.DoNow): a value at hand, such as a chunk decoded ahead, is
// kept as a loaded one is, with no goroutine started and no wait.
func (c *LRU[V]) LoadNow(ctx context.Context, key string, now func() (V, bool), load func(context.Context) (V, error)) (V, error) {
	if v, ok := c.lookup(key); ok {
		return v, nil
	}
	var atHand func() (V, bool)
	if now != nil {
		atHand = func() (V, bool) {
			if v, ok := c.kept(key); ok {
				return v, true
			}
			forgets := c.flight.Forgets()
			v, ok := now()
			if ok {
				c.loads.Add(1)
				c.keep(key, v, forgets)
			}
			return v, ok
		}
	}
	v, _, err := c.flight.DoNow(ctx, key, atHand, func(ctx context.Context) (V, error) {
		if v, ok := c.kept(key); ok {
			return v, nil
		}
		c.loads.Add(1)
		forgets := c.flight.Forgets()
		v, err := load(ctx)
		if err != nil {
			c.loadErrors.Add(1)
			return v, err
		}
		c.keep(key, v, forgets)
		return v, nil
	})
	return v, err
}

// kept returns the value under key, if any, as lookup does but without
// counting a hit or a miss: a load for key may have finished since the
// caller's lookup.
func (c *LRU[V]) kept(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		return e.Value.(*lruEntry[V]).v, true
	}
	var zero V
	return zero, false
}

// keep adds v, produced for key, unless a Delete came since the Forgets
// count was forgets: then v may be what it meant to drop, and is dropped.
func (c *LRU[V]) keep(key string, v V, forgets int64) {
	if c.flight.Forgets() != forgets {
		c.dropAll([]V{v})
		return
	}
	c.add(key, v)
}

// Close drops every value.
func (c *LRU[V]) Close() { c.Clear() }

// Clear drops every value; the LRU stays in use.
func (c *LRU[V]) Clear() {
	c.mu.Lock()
	var gone []V
	for e := c.ll.Front(); e != nil; e = e.Next() {
		gone = append(gone, e.Value.(*lruEntry[V]).v)
	}
	c.ll.Init()
	clear(c.m)
	c.used = 0
	c.mu.Unlock()
	c.dropAll(gone)
}

func (c *LRU[V]) dropAll(vs []V) {
	if c.cfg.Drop == nil {
		return
	}
	for _, v := range vs {
		c.cfg.Drop(v)
	}
}

// Stats returns the counters and the bytes kept. Rejected is always 0:
// an LRU keeps what it is given.
func (c *LRU[V]) Stats() Stats {
	c.mu.Lock()
	used, n, maxBytes := c.used, c.ll.Len(), c.maxBytes
	c.mu.Unlock()
	return Stats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Loads: c.loads.Load(), LoadErrors: c.loadErrors.Load(),
		Evicted: c.evicted.Load(), Used: used, Max: max(maxBytes, 0), Items: int64(n),
	}
}
