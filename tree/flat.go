package tree

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"slices"
	"sync"

	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/zarr"
)

// The flat views (.npy files, netCDF files) share one mapping of byte
// ranges onto chunk pieces: zarr.Array.Pieces cuts a range of an array's
// flat layout into runs of its chunks' bytes, and readFlat copies each
// chunk's runs at once.

// piecesPool holds the slices readFlat maps its ranges into: a 1 MiB read
// of an array in small chunks is thousands of pieces.
var piecesPool = sync.Pool{New: func() any { return new([]zarr.Piece) }}

// readFlat copies the bytes [off, off+len(data)) of the flat layout of a,
// the array whose key prefix in the store is path, into data, for a read
// by pid: the chunks that hold them, each chunk's pieces in one
// Chunks.ReadPieces, chunks that do not exist as the fill value. The range
// must lie within a.FlatLen(). A chunk that fails fails the read.
func (t *Tree) readFlat(ctx context.Context, path string, a *zarr.Array, data []byte, off int64, pid uint32) error {
	buf := piecesPool.Get().(*[]zarr.Piece)
	defer piecesPool.Put(buf)
	ps := a.Pieces((*buf)[:0], off, int64(len(data)))
	*buf = ps
	slices.SortStableFunc(ps, func(p, q zarr.Piece) int { return cmp.Compare(p.Chunk, q.Chunk) })
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && ps[j].Chunk == ps[i].Chunk {
			j++
		}
		_, err := t.chunks.ReadPieces(ctx, readahead.Ref{Array: a, Path: path, Coords: a.Coords(ps[i].Chunk), PID: pid}, data, ps[i:j])
		switch {
		case errors.Is(err, fs.ErrNotExist):
			for _, p := range ps[i:j] {
				a.FillPiece(data[p.At:p.At+p.N], p)
			}
		case err != nil:
			return err
		}
		i = j
	}
	return nil
}
