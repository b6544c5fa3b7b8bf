package tree

import (
	"context"
	"errors"
	"io/fs"
	"sync"

	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// A Tree for metadata only.
//
// A Tree whose Config.Chunks is nil lists, stats and reads metadata as any
// other (Arrays, Groups, zfuse compress's plan), but reads no chunk file:
// those reads fail with ErrNoChunks, and fusemount.Mount refuses it.
// Listing a sharded v3 array still needs each shard's index (v3Chunk);
// such a Tree reads them from the store itself (storeIndexes).

// ErrNoChunks means a chunk file was read from a Tree built without
// Config.Chunks, for metadata only.
var ErrNoChunks = errors.New("tree: the tree was built for metadata only (no Config.Chunks): chunk files cannot be read")

// ShardIndexes is what listing a sharded v3 array needs of Config.Chunks:
// shard indexes, which say which inner chunks exist and their stored size.
type ShardIndexes interface {
	// ShardIndex returns the parsed index of the shard of a stored under
	// key, of size bytes (negative: unknown). A missing shard gives an
	// error wrapping fs.ErrNotExist.
	ShardIndex(ctx context.Context, a *zarr.Array, key string, size int64) (*zarr.Index, error)
}

var _ ShardIndexes = (*storeIndexes)(nil)

// storeIndexes reads shard indexes straight from the store, for a Tree
// without Chunks (readahead.ReadShardIndex). It keeps the last
// maxWalkIndexes read, since a listing asks for an index once per inner
// chunk, and the row directories of a "/"-separated array list the same
// shards again. It is safe for concurrent use.
type storeIndexes struct {
	store store.Store // immutable

	mu   sync.Mutex             // guards kept
	kept map[walkKey]walkResult // emptied when full
}

// walkResult is a parsed index, or why it does not parse (store errors
// are not kept).
type walkResult struct {
	ix  *zarr.Index
	err error
}

// walkKey is a shard's key and stored size (negative: unknown).
type walkKey struct {
	key  string
	size int64
}

// maxWalkIndexes bounds storeIndexes (16 bytes per inner chunk each).
const maxWalkIndexes = 256

func (s *storeIndexes) ShardIndex(ctx context.Context, a *zarr.Array, key string, size int64) (*zarr.Index, error) {
	k := walkKey{key, size}
	s.mu.Lock()
	r, ok := s.kept[k]
	s.mu.Unlock()
	if ok {
		return r.ix, r.err
	}
	ix, err := readahead.ReadShardIndex(ctx, s.store, a, key, size)
	var pe *fs.PathError
	if err == nil || errors.As(err, &pe) && pe.Op == "shard" {
		s.mu.Lock()
		if s.kept == nil || len(s.kept) >= maxWalkIndexes {
			s.kept = map[walkKey]walkResult{}
		}
		s.kept[k] = walkResult{ix, err}
		s.mu.Unlock()
	}
	return ix, err
}

// MetadataOnly reports whether the Tree was built without Config.Chunks:
// it reads no chunk file, and cannot be mounted.
func (t *Tree) MetadataOnly() bool { return t.chunks == nil }

// needChunks returns the error of op on n when n's bytes are decoded
// chunks and the Tree has no Chunks to decode them; nil otherwise.
func (t *Tree) needChunks(op string, n *Node) error {
	if t.chunks == nil && (n.kind == kindChunk || n.kind == kindNpy) {
		return &fs.PathError{Op: op, Path: n.key, Err: ErrNoChunks}
	}
	return nil
}
