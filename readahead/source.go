package readahead

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// A chunkRef locates one presented chunk in the store.
type chunkRef struct {
	coords []int
	rel    string // stored key relative to the array
	stored string // key of the stored value holding it: the chunk, or its shard
	inner  int    // entry in the shard index, for a sharded array
	shard  bool   // stored is a shard
	id     string // names the chunk in the decoded tier and staging
}

// ref locates the chunk at coords of the array whose key prefix is path.
func ref(a *zarr.Array, path string, coords []int) chunkRef {
	rel, inner, sharded := a.StoredKey(coords)
	r := chunkRef{coords: coords, rel: rel, stored: join(path, rel), inner: inner, shard: sharded}
	r.id = r.stored
	if sharded {
		// NUL cannot occur in a key, so this names no stored value.
		r.id += "\x00" + strconv.Itoa(inner)
	}
	return r
}

func join(path, rel string) string {
	if path == "" {
		return rel
	}
	return path + "/" + rel
}

// encoded returns what decodes into the chunk r: the chunk's stored value,
// the inner chunk's bytes read from its shard, or, for an array with codecs
// over the whole shard, the whole stored shard. Values come from the
// compressed tier, or the store on a miss (one read per key at a time).
func (l *Loader) encoded(ctx context.Context, a *zarr.Array, r chunkRef) ([]byte, error) {
	switch {
	case !r.shard:
		b, err := l.fetchStored(ctx, r.stored)
		if errors.Is(err, iofs.ErrNotExist) && a.Legacy() && len(r.coords) > 1 {
			// No dimension_separator in the metadata: the chunk may be
			// stored under the nested key (0/0) instead of 0.0.
			nested := strings.TrimSuffix(r.stored, r.rel) + nestedKey(r.coords)
			if b2, err2 := l.fetchStored(ctx, nested); err2 == nil || !errors.Is(err2, iofs.ErrNotExist) {
				return b2, err2
			}
		}
		return b, err
	case a.WholeShard():
		return l.fetchStored(ctx, r.stored)
	}
	ix, err := l.shardIndex(ctx, a, r.stored)
	if err != nil {
		return nil, err
	}
	off, n, err := ix.Entry(r.inner)
	if err != nil {
		return nil, fmt.Errorf("shard %s: %w", r.stored, err)
	}
	return l.compressed.Load(ctx, r.id, func(ctx context.Context) ([]byte, error) {
		l.storeReads.Add(1)
		ctx, stop := l.lifetime(ctx)
		defer stop()
		return store.ReadRange(ctx, l.store, r.stored, off, n)
	})
}

func nestedKey(coords []int) string {
	parts := make([]string, len(coords))
	for i, c := range coords {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, "/")
}

// shardIndexes keeps parsed shard indexes, so that reading the inner chunks
// of a shard one at a time reads its index once.
type shardIndexes struct {
	group singleflight.Group // one load per shard at a time

	mu sync.Mutex             // guards m
	m  map[string]*zarr.Index // by shard key; at most maxShardIndexes
}

// maxShardIndexes bounds the indexes kept (16 bytes per inner chunk each).
const maxShardIndexes = 4096

// shardIndex returns the parsed index of the shard stored under key. A
// missing shard gives an error satisfying errors.Is(err, fs.ErrNotExist):
// all its chunks are missing.
func (l *Loader) shardIndex(ctx context.Context, a *zarr.Array, key string) (*zarr.Index, error) {
	x := &l.shards
	x.mu.Lock()
	ix, ok := x.m[key]
	x.mu.Unlock()
	if ok {
		return ix, nil
	}
	ch := x.group.DoChan(key, func() (any, error) {
		x.mu.Lock()
		ix, ok := x.m[key] // a load may have finished since we looked
		x.mu.Unlock()
		if ok {
			return ix, nil
		}
		ctx, stop := l.lifetime(context.WithoutCancel(ctx))
		defer stop()
		e, err := store.Stat(ctx, l.store, key)
		if err != nil {
			return nil, err
		}
		sh := a.Shard()
		off, n := sh.IndexRange(e.Size)
		l.storeReads.Add(1)
		b, err := store.ReadRange(ctx, l.store, key, off, n)
		if err != nil {
			return nil, err
		}
		ix, err = sh.ParseIndex(b, e.Size)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", key, err)
		}
		x.mu.Lock()
		if x.m == nil {
			x.m = map[string]*zarr.Index{}
		}
		for k := range x.m { // make room: drop any
			if len(x.m) < maxShardIndexes {
				break
			}
			delete(x.m, k)
		}
		x.m[key] = ix
		x.mu.Unlock()
		return ix, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*zarr.Index), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
