package fs

import (
	"container/list"
	"context"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// Chunks serves decoded chunks to the file nodes. zfuse mount uses a
// *readahead.Loader (decoding ahead of each reader); DecodedCache is a
// Tree's default.
type Chunks interface {
	// Chunk returns the decoded chunk at coords in the chunk grid of array
	// a, whose directory in the store is path ("" for an array at the store
	// root), for a read by process pid. The implementation finds where the
	// chunk is stored (a chunk key, or an inner chunk of a shard). The slice
	// has length a.ChunkLen(), is shared by every reader and must not be
	// modified. A missing chunk satisfies errors.Is(err, fs.ErrNotExist).
	Chunk(ctx context.Context, a *zarr.Array, path string, coords []int, pid uint32) ([]byte, error)
}

var (
	_ Chunks = (*readahead.Loader)(nil)
	_ Chunks = (*DecodedCache)(nil)
)

// DecodedCache keeps recently read decoded chunks in an LRU list within a
// byte budget and loads each missing chunk once however many readers ask
// for it at the same time, so the kernel's many small reads of one chunk
// decode it once. It does no readahead. Chunks are found and decoded by a
// readahead.Loader whose own tiers are off, so that both agree on where a
// chunk is stored. Decoded chunks are immutable; evicting one only drops
// the cache's reference. It is safe for concurrent use; Close stops the
// Loader's goroutine.
type DecodedCache struct {
	loader *readahead.Loader  // immutable: reads and decodes one chunk
	max    int64              // immutable: budget in bytes
	group  singleflight.Group // one load per key at a time

	mu    sync.Mutex               // guards the fields below
	used  int64                    // sum of len over entries; used <= max
	lru   list.List                // of *cached, most recently used first
	index map[string]*list.Element // key -> element of lru
}

type cached struct {
	key  string
	data []byte
}

// NewDecodedCache returns a cache of at most budget decoded bytes over s that
// runs at most workers decodes at once.
func NewDecodedCache(s store.Store, budget int64, workers int) *DecodedCache {
	sem := make(chan struct{}, max(workers, 1))
	return &DecodedCache{
		loader: readahead.New(readahead.Config{
			Store:   s,
			Decoder: func(a *zarr.Array) codec.BatchDecoder { return limited{sem, a.Decoder()} },
		}),
		max:   budget,
		index: make(map[string]*list.Element),
	}
}

// Close stops the cache's goroutine. Chunk fails afterwards.
func (c *DecodedCache) Close() error { return c.loader.Close() }

// Chunk returns the decoded chunk at coords, loading it if it is not cached.
// A reader whose ctx ends stops waiting; the load itself goes on for the
// others (and the cache).
func (c *DecodedCache) Chunk(ctx context.Context, a *zarr.Array, path string, coords []int, pid uint32) ([]byte, error) {
	key := join(path, a.ChunkKey(coords)) // the presented key names the chunk
	if b, ok := c.get(key); ok {
		return b, nil
	}
	ch := c.group.DoChan(key, func() (any, error) {
		if b, ok := c.get(key); ok { // a load that just finished
			return b, nil
		}
		b, err := c.loader.Chunk(context.WithoutCancel(ctx), a, path, coords, pid)
		if err != nil {
			return nil, err
		}
		c.add(key, b)
		return b, nil
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

// limited decodes a batch on the caller's goroutine, at most cap(sem)
// decodes at a time over every batch sharing sem.
type limited struct {
	sem chan struct{}
	d   codec.Decoder
}

func (l limited) DecodeBatch(ctx context.Context, jobs []codec.Job) error {
	for i := range jobs {
		j := &jobs[i]
		select {
		case l.sem <- struct{}{}:
		case <-ctx.Done():
			for k := i; k < len(jobs); k++ {
				jobs[k].Err = ctx.Err()
			}
			return ctx.Err()
		}
		j.Dst, j.Err = l.d.Decode(j.Dst[:0], j.Src)
		<-l.sem
	}
	return nil
}
