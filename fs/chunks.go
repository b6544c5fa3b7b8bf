package fs

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// Chunks serves decoded chunks to the file nodes. DecodedCache implements
// it; the readahead Loader will replace it with the same method.
type Chunks interface {
	// Chunk returns the decoded bytes of the chunk stored under key, which
	// lies at coords in a's chunk grid, for a read by process pid. The slice
	// has length a.ChunkLen(), is shared by every reader and must not be
	// modified. A missing chunk satisfies errors.Is(err, fs.ErrNotExist).
	Chunk(ctx context.Context, a *zarr.Array, key string, coords []int, pid uint32) ([]byte, error)
}

// DecodedCache keeps recently read decoded chunks within a byte budget and
// loads each missing chunk once however many readers ask for it at the same
// time, so the kernel's many small reads of one chunk decode it once.
// Decoded chunks are immutable; evicting one only drops the cache's
// reference. It is safe for concurrent use.
type DecodedCache struct {
	store store.Store        // immutable
	max   int64              // immutable: budget in bytes
	sem   chan struct{}      // one token per running decode
	group singleflight.Group // one load per key at a time

	mu    sync.Mutex               // guards the fields below
	used  int64                    // sum of len over entries; used <= max
	lru   list.List                // of *cached, most recently used first
	index map[string]*list.Element // key -> element of lru
}

type cached struct {
	key  string
	data []byte
}

var _ Chunks = (*DecodedCache)(nil)

// NewDecodedCache returns a cache of at most budget decoded bytes over s that
// runs at most workers decodes at once.
func NewDecodedCache(s store.Store, budget int64, workers int) *DecodedCache {
	return &DecodedCache{
		store: s,
		max:   budget,
		sem:   make(chan struct{}, max(workers, 1)),
		index: make(map[string]*list.Element),
	}
}

// Chunk returns the decoded chunk at key, loading it if it is not cached.
// A reader whose ctx ends stops waiting; the load itself goes on for the
// others (and the cache).
func (c *DecodedCache) Chunk(ctx context.Context, a *zarr.Array, key string, _ []int, _ uint32) ([]byte, error) {
	if b, ok := c.get(key); ok {
		return b, nil
	}
	ch := c.group.DoChan(key, func() (any, error) {
		return c.load(context.WithoutCancel(ctx), a, key)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]byte), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// load reads and decodes one chunk and caches it.
func (c *DecodedCache) load(ctx context.Context, a *zarr.Array, key string) ([]byte, error) {
	if b, ok := c.get(key); ok { // a load that just finished
		return b, nil
	}
	src, err := c.store.ReadKey(ctx, key)
	if err != nil {
		return nil, err
	}
	c.sem <- struct{}{}
	b, err := a.DecodeChunk(make([]byte, 0, a.ChunkLen()), src)
	<-c.sem
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", key, err)
	}
	c.add(key, b)
	return b, nil
}

func (c *DecodedCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.index[key]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cached).data, true
}

// add caches b under key, evicting the least recently used entries to stay
// within the budget. Chunks larger than the whole budget are not kept.
func (c *DecodedCache) add(key string, b []byte) {
	n := int64(len(b))
	if n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.index[key]; ok {
		return
	}
	for c.used+n > c.max {
		e := c.lru.Back()
		v := c.lru.Remove(e).(*cached)
		delete(c.index, v.key)
		c.used -= int64(len(v.data))
	}
	c.index[key] = c.lru.PushFront(&cached{key: key, data: b})
	c.used += n
}

// Used returns the bytes currently cached.
func (c *DecodedCache) Used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
