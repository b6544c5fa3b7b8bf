package readahead

import (
	"context"
	"errors"
	"io"
	"io/fs"

	"github.com/zfuse/zfuse/zarr"
)

// Reads of an array's flat layout: the whole array in one buffer, in its
// order (zarr.Array.Pieces), as zfuse's .npy view serves it.
//
// A scan of the flat layout does not visit chunks one after the other: in
// C order it meets every chunk of a slab (the chunks sharing a first
// coordinate) in each row, and then meets them all again in the next row,
// so recording every read would show the policy the same few chunks over
// and over, out of order, and no pattern. But it meets each chunk's first
// run (zarr.Array.RunLen: the first row of the chunk's elements along the
// contiguous axis) exactly once, and in chunk-grid order: a sequential
// scan meets the first runs of chunks 0, 1, 2, ... (slab by slab), a walk
// down one column of a 2-D array through a memory map (a[:, i]) those of
// one chunk per slab, a stride of one slab. So a flat read is recorded
// for readahead when it covers the first run of its chunk, and only
// served otherwise; the policy then sees those patterns as it sees them
// for chunk files. (In order F a scan meets the first runs in F order of
// the grid: the policy sees a walk along axis 0, column of chunks by
// column, and finds the pattern again at the top of each.)
//
// A flat scan needs the chunks of the next slab ahead of it, and no more:
// reading a slab's first row reads every chunk of the slab, so the
// policy's window for a flat reader is at most one slab (and at least
// its MinWindow), not MaxWindow, unless the store's latency widened the
// window (policyFor): then a slab is no longer enough to keep the store
// busy. The kernel reads a flat file ahead of
// its reader in many requests at once (zfuse sets its readahead to 16
// MiB), which reach the Loader in any order, so a flat reader's reads
// arrive reordered by up to that many bytes of chunks: its Slack covers
// flatReorder bytes, where a chunk file reader's covers a few chunks, and
// a read past the plan leaves the chunks it skipped planned (Backfill):
// their reads are on the way, queued behind others. Nor
// does a flat reader get a name order: it names no chunk files.

// ReadPieces copies the pieces ps of the decoded chunk at coords of array
// a (path as for Chunk) into p, piece k's ps[k].N bytes from chunk offset
// ps[k].Off to p[ps[k].At:], for a read by pid of a's flat layout whose
// reply the kernel keeps in its page cache. ps are the pieces of one
// chunk that zarr.Array.Pieces gave, in the order it gave them; p must
// hold them. The read counts for readahead as the package comment says,
// and once ReadPieces has handed out every byte of the chunk that lies
// inside the array, the decoded tier lets it go, as ReadAt does. It
// returns the bytes copied; errors are those of Chunk.
func (l *Loader) ReadPieces(ctx context.Context, r Ref, p []byte, ps []zarr.Piece) (n int, err error) {
	if l.onServed != nil {
		defer func() { l.onServed(int64(n), err) }()
	}
	a := r.Array
	if len(ps) == 0 {
		return 0, nil
	}
	how := unrecorded
	if ps[0].Off < a.RunLen() {
		how = flatRead
	}
	l.lostByKernel(r)
	c, id, err := l.get(ctx, r, how)
	if err != nil {
		return 0, err
	}
	defer c.release()
	for _, pc := range ps {
		k, err := c.readAt(p[pc.At:pc.At+pc.N], pc.Off)
		n += k
		if err != nil && !errors.Is(err, io.EOF) {
			return n, &fs.PathError{Op: "chunk", Path: id, Err: err}
		}
	}
	if c.served.Add(int64(n)) >= inside(a, r.Coords) {
		l.handOver(id, c)
	}
	return n, nil
}

// inside returns the bytes of the chunk at coords that lie inside the
// array: all of them but for edge chunks.
func inside(a *zarr.Array, coords []int) int64 {
	b := a.ChunkBox(coords)
	n := int64(a.ItemSize)
	for i := range b.Lo {
		n *= int64(b.Hi[i] - b.Lo[i])
	}
	return n
}

// flatReorder is how far, in bytes of chunks, a flat reader's reads may
// reach the Loader out of order: twice the kernel readahead zfuse sets.
const flatReorder = 32 << 20

// flatPolicy is p, the policy of a's readers (policyFor), for a reader of
// a's flat layout: a window of at most one slab of a's chunk grid (the
// chunks that share a first coordinate; the last, in order F), unless p's
// was widened for the store's latency (widened: then p's), and at least
// p's MinWindow; a Slack of flatReorder bytes of chunks, and at least p's;
// and Backfill, since every read within the Slack comes.
func flatPolicy(p Policy, a *zarr.Array, widened bool) Policy {
	p = p.withDefaults()
	slab := a.NumChunks()
	if g := a.Grid(); len(g) > 0 {
		axis := 0
		if a.Order == "F" {
			axis = len(g) - 1
		}
		slab /= max(int64(g[axis]), 1)
	}
	if !widened {
		p.MaxWindow = max(min(p.MaxWindow, slab), p.MinWindow)
	}
	p.Slack = max(p.Slack, flatReorder/max(a.ChunkLen(), 1))
	p.Backfill = true
	return p
}
