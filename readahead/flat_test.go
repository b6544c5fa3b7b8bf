package readahead

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/zfuse/zfuse/zarr"
)

// flatOf assembles a's flat layout from the fixture's chunks (chunkData)
// with the region code, independently of Pieces.
func flatOf(a *zarr.Array) []byte {
	whole := zarr.ChunkLayout{Origin: make([]int, len(a.Shape)), Shape: a.Shape, Order: a.Order}
	out := make([]byte, a.FlatLen())
	for i := range a.NumChunks() {
		c := a.Coords(i)
		zarr.CopyBox(out, whole, chunkData(a, i), a.Layout(c), a.ChunkBox(c), a.ItemSize)
	}
	return out
}

// readFlat reads [off, off+n) of a's flat layout through ReadPieces as
// the .npy view does: the pieces of each chunk in one call.
func readFlat(t testing.TB, l *Loader, a *zarr.Array, path string, off, n int64, pid uint32) []byte {
	t.Helper()
	ps := a.Pieces(nil, off, n)
	slices.SortStableFunc(ps, func(x, y zarr.Piece) int { return int(x.Chunk - y.Chunk) })
	out := make([]byte, min(n, a.FlatLen()-off))
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && ps[j].Chunk == ps[i].Chunk {
			j++
		}
		if _, err := l.ReadPieces(context.Background(), Ref{Array: a, Path: path, Coords: a.Coords(ps[i].Chunk), PID: pid}, out, ps[i:j]); err != nil {
			t.Fatalf("[%d, +%d): %v", off, n, err)
		}
		i = j
	}
	return out
}

// TestLoaderFlat: reads of an array's flat layout show the policy the
// patterns a flat file is read in: a sequential scan (slab by slab, each
// slab's chunks met in every row) prefetches the next slab, ahead of the
// reader, and no more; a walk down one column through a memory map (one
// small read per row) is a strided walk; random reads prefetch next to
// nothing.
func TestLoaderFlat(t *testing.T) {
	// 128×256 float64 in 8×8 chunks: a grid of 16 slabs of 32 chunks, 512
	// bytes each; a row of the flat layout is 2 KiB.
	a := zlibArray(t, []int{128, 256}, []int{8, 8})
	const row, slab = 256 * 8, 32
	s := fixture(t, a, "temp", nil)
	want := flatOf(a)
	t.Run("sequential", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLoader(t, s, nil)
			const req = 1000 // bytes a read, not a multiple of anything
			next := int64(0) // the next slab whose first row is to be read
			for off := int64(0); off < a.FlatLen(); off += req {
				if got := readFlat(t, l, a, "temp", off, req, 1); !bytes.Equal(got, want[off:off+int64(len(got))]) {
					t.Fatalf("[%d, +%d): wrong bytes", off, req)
				}
				synctest.Wait() // the reader is slower than the decoders
				// Once a slab's first row is read, the next slab is
				// being prefetched, well ahead of the reader: the
				// policy keeps between half its window (one slab) and
				// all of it planned.
				if off+req >= next*8*row+row {
					ahead := min((next+1)*slab+slab/2, a.NumChunks()) - 3
					if p := l.Stats().Prefetched; p < ahead {
						t.Errorf("after the first row of slab %d: %d chunks prefetched, want %d (half the next slab)", next, p, ahead)
					}
					next++
				}
			}
			st := l.Stats()
			t.Log(st)
			if st.StoreReads != a.NumChunks() {
				t.Errorf("%d store reads, want %d: each chunk once", st.StoreReads, a.NumChunks())
			}
			if st.PrefetchUsed < a.NumChunks()-3 {
				t.Errorf("%d of %d chunks were prefetched, want all but the first 3", st.PrefetchUsed, a.NumChunks())
			}
			// Only the first slab's chunks, planned as the first row
			// reads them, can be taken while still decoding.
			if st.PrefetchWaits > slab {
				t.Errorf("the reader waited for %d prefetched chunks, want at most the first slab's %d: the next slab is planned as a slab begins", st.PrefetchWaits, slab)
			}
			if max := (slab + 1) * a.ChunkLen(); st.ReadaheadPeak > max {
				t.Errorf("readahead held %d bytes at most, want at most one slab and the chunk being taken, %d", st.ReadaheadPeak, max)
			}
			if st.ServedDrops != a.NumChunks() {
				t.Errorf("%d chunks dropped once served, want all %d", st.ServedDrops, a.NumChunks())
			}
		})
	})
	t.Run("reordered", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// The kernel's readahead requests, eight at a time, reaching the
			// Loader in reverse order: a reordering of over a hundred chunks.
			l := newLoader(t, s, nil)
			const req, group = 1000, 8
			for off := int64(0); off < a.FlatLen(); off += req * group {
				for k := int64(group - 1); k >= 0; k-- {
					if o := off + k*req; o < a.FlatLen() {
						if got := readFlat(t, l, a, "temp", o, req, 1); !bytes.Equal(got, want[o:o+int64(len(got))]) {
							t.Fatalf("[%d, +%d): wrong bytes", o, req)
						}
					}
				}
			}
			st := l.Stats()
			t.Log(st)
			// Rows of a slab read before its first row find their chunks
			// unplanned when the policy kept only half a slab ahead; the rest
			// are prefetched (without the flat Slack, fewer than half are:
			// each reordering ends the pattern).
			if st.PrefetchUsed < 2*a.NumChunks()/3 || st.StoreReads != a.NumChunks() {
				t.Errorf("%d of %d chunks prefetched, %d store reads; want two thirds at least, each chunk read once", st.PrefetchUsed, a.NumChunks(), st.StoreReads)
			}
			synctest.Wait() // no prefetch left running when the Loader closes
		})
	})
	t.Run("two queues", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// The kernel's readahead reaches the Loader through one queue
			// per CPU: a reader that moved to another CPU has the requests
			// of its next window (queued there) served alternately with
			// those of this one, four slabs behind. The chunks the next
			// window skips past are still read, and are prefetched too.
			l := newLoader(t, s, nil)
			const req, window = 4096, 16 // 2 rows a read, 4 slabs a window
			const w = req * window
			for off := int64(0); off < a.FlatLen(); off += 2 * w {
				for k := int64(0); k < 2*window; k++ {
					o := off + k/2*req
					if k%2 == 1 {
						o += w
					}
					if o >= a.FlatLen() {
						continue
					}
					if got := readFlat(t, l, a, "temp", o, req, 1); !bytes.Equal(got, want[o:o+int64(len(got))]) {
						t.Fatalf("[%d, +%d): wrong bytes", o, req)
					}
					synctest.Wait()
				}
			}
			st := l.Stats()
			t.Log(st)
			if st.StoreReads != a.NumChunks() || st.PrefetchUsed < a.NumChunks()-2*slab {
				t.Errorf("%d of %d chunks prefetched, %d store reads; want all but %d (two slabs), each chunk read once", st.PrefetchUsed, a.NumChunks(), st.StoreReads, 2*slab)
			}
		})
	})
	t.Run("partial", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLoader(t, s, nil)
			const rows = 32 // the first 4 slabs: 128 chunks
			for off := int64(0); off < rows*row; off += 4096 {
				readFlat(t, l, a, "temp", off, min(4096, rows*row-off), 1)
			}
			if st := l.Stats(); st.StoreReads > 4*slab+slab {
				t.Errorf("reading 4 slabs (%d chunks) read %d chunks from the store, want at most one slab more", 4*slab, st.StoreReads)
			}
			synctest.Wait() // no prefetch left running when the Loader closes
		})
	})
	t.Run("column", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLoader(t, s, nil)
			const col = 20 // in the third column of chunks
			for r := range int64(128) {
				off := r*row + col*8
				if got := readFlat(t, l, a, "temp", off, 8, 2); !bytes.Equal(got, want[off:off+8]) {
					t.Fatalf("a[%d, %d]: wrong bytes", r, col)
				}
			}
			st := l.Stats()
			t.Log(st)
			if st.StoreReads != 16 {
				t.Errorf("%d store reads, want 16: the column's chunks, once each", st.StoreReads)
			}
			if st.PrefetchUsed < 13 || st.Prefetched != st.PrefetchUsed {
				t.Errorf("%d chunks prefetched, %d of them used; want the walk (16 chunks) prefetched from its fourth chunk on, none wasted", st.Prefetched, st.PrefetchUsed)
			}
			synctest.Wait() // no prefetch left running when the Loader closes
		})
	})
	t.Run("random", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLoader(t, s, nil)
			r := rand.New(rand.NewPCG(3, 4))
			for range 300 {
				off := r.Int64N(a.FlatLen() - 64)
				if got := readFlat(t, l, a, "temp", off, 64, 3); !bytes.Equal(got, want[off:off+64]) {
					t.Fatalf("[%d, +64): wrong bytes", off)
				}
			}
			st := l.Stats()
			if waste := st.PrefetchedBytes - st.PrefetchUsedBytes; waste > 3*a.ChunkLen() {
				t.Errorf("random reads prefetched %d bytes nobody read", waste)
			}
			synctest.Wait() // no prefetch left running when the Loader closes
		})
	})
}

// TestLoaderFlatAtOnce: a read takes a chunk decoded ahead in its own
// goroutine, without waiting for another (cache.LRU.LoadNow), as a FUSE
// request on a thread of its own must to keep that thread from parking: a
// read whose ctx has ended already still gets the bytes, where one that
// waited for a goroutine would leave with ctx.Err(). GOMAXPROCS(1) keeps
// such a goroutine from running before the read gives up.
func TestLoaderFlatAtOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	a := zlibArray(t, []int{128, 256}, []int{8, 8})
	s := fixture(t, a, "temp", nil)
	want := flatOf(a)
	synctest.Test(t, func(t *testing.T) {
		l := newLoader(t, s, nil)
		const row = 256 * 8
		for off := int64(0); off < 8*row; off += 1000 { // slab 0: slab 1 is prefetched
			readFlat(t, l, a, "temp", off, min(1000, 8*row-off), 1)
		}
		synctest.Wait()
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		const off = 8 * row // slab 1's first chunk's first run
		ps := a.Pieces(nil, off, 64)
		p := make([]byte, 64)
		n, err := l.ReadPieces(ended, Ref{Array: a, Path: "temp", Coords: a.Coords(ps[0].Chunk), PID: 1}, p, ps)
		if err != nil || n != 64 || !bytes.Equal(p, want[off:off+64]) {
			t.Errorf("a chunk decoded ahead, read with its ctx ended: %d bytes, %v; want its 64 bytes", n, err)
		}
	})
}

// TestLoaderFlatMissing: a chunk that is not stored is an error wrapping
// fs.ErrNotExist for the caller to fill (the .npy view reads it as the
// fill value); the other chunks read.
func TestLoaderFlatMissing(t *testing.T) {
	a := zlibArray(t, []int{16, 16}, []int{8, 8})
	s := fixture(t, a, "temp", map[int64][]byte{1: nil})
	l := newLoader(t, s, nil)
	p := make([]byte, 128)
	ps := a.Pieces(nil, 0, 128) // row 0, chunks 0 and 1
	if len(ps) != 2 {
		t.Fatalf("pieces %v", ps)
	}
	if _, err := l.ReadPieces(context.Background(), Ref{Array: a, Path: "temp", Coords: a.Coords(1), PID: 1}, p, ps[1:]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing chunk: %v, want fs.ErrNotExist", err)
	}
	if n, err := l.ReadPieces(context.Background(), Ref{Array: a, Path: "temp", Coords: a.Coords(0), PID: 1}, p, ps[:1]); err != nil || n != 64 || !bytes.Equal(p[:64], chunkData(a, 0)[:64]) {
		t.Errorf("chunk 0: %d bytes, %v", n, err)
	}
}
