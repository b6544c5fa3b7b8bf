package tree

import (
	"context"

	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/zarr"
)

// Chunks serves decoded chunks to the file nodes: a *readahead.Loader,
// which finds where each chunk is stored, decodes it (and its neighbours
// ahead of the reader) and keeps it as long as the serving path needs.
type Chunks interface {
	// ReadAt copies the bytes of the decoded chunk r from off into p, as
	// io.ReaderAt does, for a read by process r.PID whose reply the kernel
	// keeps in its page cache. A missing chunk satisfies errors.Is(err, fs.ErrNotExist).
	ReadAt(ctx context.Context, r readahead.Ref, p []byte, off int64) (int, error)
	// ReadPieces copies the pieces ps of the decoded chunk r into
	// p, each ps[k].N bytes from chunk offset ps[k].Off to p[ps[k].At:],
	// for a read by r.PID of the array's flat layout (a .npy file, whose
	// reply the kernel keeps in its page cache). ps are the pieces of one
	// chunk, in the order zarr.Array.Pieces gave them. It returns the
	// bytes copied; errors are those of ReadAt.
	ReadPieces(ctx context.Context, r readahead.Ref, p []byte, ps []zarr.Piece) (int, error)
	// Open returns the chunk as an open file, for an open by r.PID of a file
	// the kernel reads itself (FUSE passthrough). The caller closes it.
	Open(ctx context.Context, r readahead.Ref) (*readahead.File, error)
	// ShardIndexes: listing a sharded array and reading its chunks read
	// each index once, for both.
	ShardIndexes
	// Forget drops every copy kept of the chunk r (r.PID is not used):
	// its stored value changed (Config.Refresh). Files Open
	// returned stay valid.
	Forget(r readahead.Ref)
	// SetFiles says whether chunks should be decoded into files (memfds)
	// for Open, rather than onto the heap for Read: Tree.SetServing calls
	// it once the mount has chosen its serving path.
	SetFiles(on bool)
	// SetPlacer gives the Chunks where to put prefetched chunks before
	// their first read: on the page-cache serving paths, the kernel's page
	// cache. Tree.SetServing calls it once the mount has chosen its
	// serving path.
	SetPlacer(p readahead.Placer)
}

var _ Chunks = (*readahead.Loader)(nil)

// Open returns the decoded chunk that the chunk file n (IsChunk) serves,
// as an open file for process pid to read itself (FUSE passthrough). The
// caller closes it. A chunk that turns out missing is an I/O error, as in
// ReadAt.
func (t *Tree) Open(ctx context.Context, n *Node, pid uint32) (*readahead.File, error) {
	if err := t.needChunks("open", n); err != nil {
		return nil, err
	}
	f, err := t.chunks.Open(ctx, n.ref(pid))
	return f, presentedErr(n, err)
}

// Forget drops every decoded copy kept of what the file n served, which
// has changed in the store (Config.Refresh): its chunk, or, for a .npy
// file, the chunks of its array, for a netCDF file those of its
// variables. Files Open returned stay valid.
func (t *Tree) Forget(n *Node) {
	switch n.kind {
	case kindChunk:
		t.chunks.Forget(n.ref(0))
	case kindNpy:
		t.forgetNpy(n)
	case kindNc:
		t.forgetNc(n)
	}
}

// SetServing tells the Chunks how a mount serves the Tree, once it has
// chosen: with passthrough, chunk files are opened (Open) as the files
// their chunks are decoded into (memfds), which the kernel reads itself;
// otherwise they are read (ReadAt) through the kernel's page cache, into
// which p puts prefetched chunks before their first read. Under AsNpy no
// chunk is a file of its own: .npy files are read through the page cache,
// from chunks on the heap, and no chunk has a page cache of its own to be
// placed in (npy.go); so under AsNc (nc.go). A mount calls it once,
// before it serves.
func (t *Tree) SetServing(passthrough bool, p readahead.Placer) {
	flat := t.asNpy || t.asNc
	t.chunks.SetFiles(passthrough && !flat)
	if !passthrough && !flat {
		t.chunks.SetPlacer(p)
	}
}
