package fs

import (
	"context"
	"errors"
	iofs "io/fs"
	"sync"

	"github.com/zfuse/zfuse/readahead"
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
// without Chunks (readahead.ReadShardIndex). It keeps only the last
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
	ix, err := readahead.ReadShardIndex(ctx, s.store, a, key, size)
	if err == nil {
		s.mu.Lock()
		s.last = lastIndex{key: key, size: size, ix: ix}
		s.mu.Unlock()
	}
	return ix, err
}

// needChunks returns the error of op on n when n's bytes are decoded
// chunks and the Tree has no Chunks to decode them; nil otherwise.
func (t *Tree) needChunks(op string, n *node) error {
	if t.chunks == nil && (n.kind == kindChunk || n.kind == kindNpy) {
		return &iofs.PathError{Op: op, Path: n.key, Err: ErrNoChunks}
	}
	return nil
}
