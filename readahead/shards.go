package readahead

import (
	"context"
	"io/fs"
	"log/slog"

	"github.com/zfuse/zfuse/cache"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// shardIndexes keeps the parsed indexes of shards, and why an index did
// not parse, so that listing a sharded array and reading its inner chunks
// one at a time read each shard's index once: the presented tree asks the
// Loader's ShardIndex when it lists, and the Loader itself when it reads.
// It is safe for concurrent use.
type shardIndexes struct {
	store    store.Store  // immutable
	log      *slog.Logger // immutable
	changing bool         // immutable: Config.Changing
	// kept holds the results by shard key, at most maxShardIndexes.
	kept *cache.LRU[indexResult]

	reads func() // counts a store read (the Loader's counter)
	// fetch returns a whole stored shard through the compressed tier (the
	// Loader's fetchStored), which its first chunk read then finds there.
	fetch func(ctx context.Context, key string) ([]byte, error)
}

func newShardIndexes(s store.Store, log *slog.Logger, changing bool, reads func(), fetch func(context.Context, string) ([]byte, error)) shardIndexes {
	kept := cache.NewLRU(cache.LRUConfig[indexResult]{MaxItems: maxShardIndexes, Size: func(indexResult) int64 { return 0 }})
	return shardIndexes{store: s, log: log, changing: changing, kept: kept, reads: reads, fetch: fetch}
}

// indexResult is a parsed index, or why the shard's index does not parse,
// and, when the store may change, the shard's entry (size and version) as
// it was before the index was read.
type indexResult struct {
	ix    *zarr.Index
	err   error
	entry store.Entry
}

// maxShardIndexes bounds the indexes kept (16 bytes per inner chunk each).
const maxShardIndexes = 4096

// forget drops the index of the shard stored under key.
func (c *shardIndexes) forget(key string) { c.kept.Delete(key) }

// index returns the parsed index of the shard of array a stored under key,
// whose size is size bytes (negative: unknown, stat it). A shard whose
// index does not parse gives an error wrapping the reason
// (codec.ErrChecksum, codec.ErrCorrupt), logged once and kept; a missing
// shard one wrapping fs.ErrNotExist; store errors are not kept. If ctx ends
// first it returns ctx.Err() and the load goes on.
func (c *shardIndexes) index(ctx context.Context, a *zarr.Array, key string, size int64) (*zarr.Index, error) {
	r, err := c.result(ctx, a, key, size)
	if err != nil {
		return nil, err
	}
	return r.ix, r.err
}

// result is index with the shard's entry. Store errors are not kept.
func (c *shardIndexes) result(ctx context.Context, a *zarr.Array, key string, size int64) (indexResult, error) {
	return c.kept.Load(ctx, key, func(ctx context.Context) (indexResult, error) {
		return c.load(ctx, a, key, size)
	})
}

// unchanged reports whether the shard stored under key is still the
// version r's index was read from: where the store may change, an inner
// chunk read after its index could come from a newer shard, and its
// bytes would be cut at the old index's offsets.
func (c *shardIndexes) unchanged(ctx context.Context, key string, r indexResult) (bool, error) {
	if !c.changing {
		return true, nil
	}
	e, err := c.store.Stat(ctx, key)
	if err != nil {
		return false, err
	}
	return e.Size == r.entry.Size && e.Version == r.entry.Version, nil
}

// ReadShardIndex reads and parses the index of a's shard stored under
// key, of size bytes (negative: unknown, stat it), and keeps nothing: for a
// walk that reads no chunk (a tree.Tree without Chunks); a Loader keeps
// them (ShardIndex). An index that does not parse gives a *fs.PathError
// with Op "shard".
func ReadShardIndex(ctx context.Context, s store.Store, a *zarr.Array, key string, size int64) (*zarr.Index, error) {
	c := shardIndexes{store: s, reads: func() {}, fetch: func(ctx context.Context, key string) ([]byte, error) {
		return s.ReadKey(ctx, key)
	}}
	r, err := c.read(ctx, a, key, size)
	if err != nil {
		return nil, err
	}
	return r.ix, r.err
}

// load is read, logging an index that does not parse.
func (c *shardIndexes) load(ctx context.Context, a *zarr.Array, key string, size int64) (indexResult, error) {
	r, err := c.read(ctx, a, key, size)
	if err == nil && r.err != nil {
		c.log.WarnContext(ctx, "shard index unreadable: its chunks fail with EIO", "key", key, "err", r.err)
	}
	return r, err
}

// read reads and parses a shard's index: a range read, or the whole shard
// when codecs over the whole shard must be undone first. Store errors are
// returned; parse errors are the result.
func (c *shardIndexes) read(ctx context.Context, a *zarr.Array, key string, size int64) (indexResult, error) {
	sh := a.Shard()
	var b []byte
	var err error
	var entry store.Entry
	if a.WholeShard() {
		var src []byte
		if src, err = c.fetch(ctx, key); err != nil {
			return indexResult{}, err
		}
		if src, err = a.UnwrapShard(src); err == nil {
			size = int64(len(src))
			off, n := sh.IndexRange(size)
			b = src[off : off+n]
		}
	} else {
		if size < 0 || c.changing {
			e, err := c.store.Stat(ctx, key)
			if err != nil {
				return indexResult{}, err
			}
			size, entry = e.Size, e
		}
		off, n := sh.IndexRange(size)
		c.reads()
		if b, err = c.store.ReadKeyRange(ctx, key, off, n); err != nil {
			return indexResult{}, err
		}
	}
	var ix *zarr.Index
	if err == nil {
		ix, err = sh.ParseIndex(b, size)
	}
	if err != nil {
		err = &fs.PathError{Op: "shard", Path: key, Err: err}
	}
	return indexResult{ix: ix, err: err, entry: entry}, nil
}
