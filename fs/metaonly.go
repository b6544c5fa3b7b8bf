package fs

import (
	"context"
	"errors"
	iofs "io/fs"
	"sync"

	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// A Tree for metadata only.
//
// A Tree whose Config.Chunks is nil lists, stats and reads metadata as any
// other (Arrays, Groups, zfuse compress's plan), but reads no chunk file:
// those reads fail with ErrNoChunks, and Mount refuses it. Listing a
// sharded v3 array still needs each shard's index (v3Chunk); such a Tree
// reads them from the store itself (storeIndexes).

// ErrNoChunks means a chunk file was read from a Tree built without
// Config.Chunks, for metadata only.
var ErrNoChunks = errors.New("fs: the tree was built for metadata only (no Config.Chunks): chunk files cannot be read")

// ShardIndexes is what listing a sharded v3 array needs of Config.Chunks:
// shard indexes, which say which inner chunks exist and their stored size.
type ShardIndexes interface {
	// ShardIndex returns the parsed index of the shard of a stored under
	// key, of size bytes (negative: unknown). A missing shard gives an
	// error wrapping fs.ErrNotExist.
	ShardIndex(ctx context.Context, a *zarr.Array, key string, size int64) (*zarr.Index, error)
}

var (
	_ ShardIndexes = Chunks(nil)
	_ ShardIndexes = (*storeIndexes)(nil)
)

// storeIndexes reads shard indexes straight from the store, for a Tree
// without Chunks: with the store's range read (or, when codecs wrap the
// whole shard, the whole shard) and zarr's parser. It keeps only the last
// index read, since a listing asks for it once per inner chunk in a row. It
// is safe for concurrent use.
type storeIndexes struct {
	store store.Store // immutable

	mu   sync.Mutex // guards last
	last lastIndex
}

// lastIndex is the index last read, of the shard stored under key with
// size bytes.
type lastIndex struct {
	key  string
	size int64
	ix   *zarr.Index
}

func (s *storeIndexes) ShardIndex(ctx context.Context, a *zarr.Array, key string, size int64) (*zarr.Index, error) {
	s.mu.Lock()
	l := s.last
	s.mu.Unlock()
	if l.ix != nil && l.key == key && l.size == size {
		return l.ix, nil
	}
	ix, err := readIndex(ctx, s.store, a, key, size)
	if err == nil {
		s.mu.Lock()
		s.last = lastIndex{key: key, size: size, ix: ix}
		s.mu.Unlock()
	}
	return ix, err
}

// readIndex reads and parses the index of a's shard stored under key, of
// size bytes (negative: stat it). An index that does not parse gives a
// *fs.PathError with Op "shard", as readahead.Loader.ShardIndex does.
func readIndex(ctx context.Context, s store.Store, a *zarr.Array, key string, size int64) (*zarr.Index, error) {
	sh := a.Shard()
	var b []byte
	if a.WholeShard() {
		src, err := s.ReadKey(ctx, key)
		if err != nil {
			return nil, err
		}
		if src, err = a.UnwrapShard(src); err != nil {
			return nil, &iofs.PathError{Op: "shard", Path: key, Err: err}
		}
		size = int64(len(src))
		off, n := sh.IndexRange(size)
		b = src[off : off+n]
	} else {
		if size < 0 {
			e, err := store.Stat(ctx, s, key)
			if err != nil {
				return nil, err
			}
			size = e.Size
		}
		off, n := sh.IndexRange(size)
		var err error
		if b, err = store.ReadRange(ctx, s, key, off, n); err != nil {
			return nil, err
		}
	}
	ix, err := sh.ParseIndex(b, size)
	if err != nil {
		return nil, &iofs.PathError{Op: "shard", Path: key, Err: err}
	}
	return ix, nil
}

// needChunks returns the error of op on n when n's bytes are decoded
// chunks and the Tree has no Chunks to decode them; nil otherwise.
func (t *Tree) needChunks(op string, n *node) error {
	if t.chunks == nil && (n.kind == kindChunk || n.kind == kindNpy) {
		return &iofs.PathError{Op: op, Path: n.key, Err: ErrNoChunks}
	}
	return nil
}
