package readahead

import (
	"context"
	"errors"
	"io/fs"
	"sync"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/zarr"
)

// This file is the Loader's prefetch: fetching a planned batch of chunks
// concurrently and decoding it, in parts, into staging.

// A prefetched chunk: its staging entry, where it is stored, its linear
// index, and whether to place it once decoded (SetPlacer).
type prefetched struct {
	e     *staged
	ref   chunkRef
	i     int64
	place bool
}

// prefetch fetches the stored values of batch concurrently and decodes
// them in a few parts, each as one batch as soon as its values are in, so
// decoding overlaps the fetches still in flight (on a remote store a fetch
// is a round trip of milliseconds). Every staged entry is filled, whatever
// happens, so no reader waits for ever.
func (l *Loader) prefetch(a *zarr.Array, path string, batch []prefetched) {
	ctx := l.ctx
	if pl := l.placer.Load(); pl != nil {
		for _, p := range batch {
			if p.place {
				pl.p.Expect(a, p.i)
			}
		}
	}
	srcs := make([]stored, len(batch))
	errs := make([]error, len(batch))
	ready := make([]chan struct{}, len(batch)) // closed when srcs[k], errs[k] are set
	for k := range ready {
		ready[k] = make(chan struct{})
	}
	var fetches sync.WaitGroup
	fetches.Go(func() {
		for k, p := range batch {
			select {
			case l.fetch <- struct{}{}:
			case <-ctx.Done():
				errs[k] = ctx.Err()
				close(ready[k])
				continue
			}
			fetches.Go(func() {
				defer close(ready[k])
				defer func() { <-l.fetch }()
				srcs[k], errs[k] = l.encoded(ctx, a, p.ref)
			})
		}
	})
	size := (len(batch) + decodeParts - 1) / decodeParts
	for lo := 0; lo < len(batch); lo += size {
		hi := min(lo+size, len(batch))
		for k := lo; k < hi; k++ {
			<-ready[k]
		}
		l.decodePart(ctx, a, path, batch[lo:hi], srcs[lo:hi], errs[lo:hi])
	}
	fetches.Wait()
}

// decodeParts is how many parts a prefetch batch is decoded in.
const decodeParts = 4

// decodePart decodes one part of a prefetch batch whose values have been
// fetched (or failed to be) and fills the staging entries.
func (l *Loader) decodePart(ctx context.Context, a *zarr.Array, path string, batch []prefetched, srcs []stored, errs []error) {
	var ok []prefetched
	var okSrcs []stored
	for k, p := range batch {
		if err := errs[k]; err != nil {
			if !errors.Is(err, fs.ErrNotExist) && ctx.Err() == nil {
				l.prefetchErrors.Add(1)
				l.log.Debug("prefetch failed", "key", p.ref.stored, "err", err)
			}
			// A corrupt shard index is the chunk's own fault, as a
			// corrupt chunk is: a reader gets the error as it is.
			l.staging.fill(p.e, nil, err, ctx.Err() == nil && !isStoreErr(err))
			continue
		}
		ok = append(ok, p)
		okSrcs = append(okSrcs, srcs[k])
	}
	if len(ok) == 0 {
		return
	}
	refs := make([]chunkRef, len(ok))
	for k, p := range ok {
		refs[k] = p.ref
	}
	cs, derrs := l.decode(ctx, a, refs, okSrcs)
	pl := l.placer.Load()
	for k, p := range ok {
		if err := derrs[k]; err != nil {
			if ctx.Err() == nil {
				l.prefetchErrors.Add(1)
			}
			l.staging.fill(p.e, nil, &fs.PathError{Op: "decode", Path: p.ref.stored, Err: err}, ctx.Err() == nil)
			continue
		}
		c := cs[k]
		if !p.place || pl == nil || c.data == nil {
			l.staging.fill(p.e, c, nil, false)
			continue
		}
		// Staged first, so that a reader who asks meanwhile is served and
		// never waits on the placing; placed with a reference of its own,
		// so that such a reader's release cannot recycle the bytes.
		c.acquire()
		l.staging.fill(p.e, c, nil, false)
		l.places.add(toPlace{pl.p, a, path, p.i, p.e, c})
	}
}

// A toPlace is a decoded chunk waiting for its turn to be placed, with a
// reference of its own.
type toPlace struct {
	p    Placer
	a    *zarr.Array
	path string
	i    int64
	e    *staged
	c    *chunk
}

// placeQueue hands decoded chunks to one goroutine that places them in the
// order they were decoded (the order readers read them), so that decoding
// the next part of a batch never waits for the pushes of this one. It is
// bounded by staging: every chunk in it holds a reservation.
type placeQueue struct {
	mu   sync.Mutex
	q    []toPlace
	wake chan struct{} // a token when q is not empty
}

func (q *placeQueue) add(t toPlace) {
	q.mu.Lock()
	q.q = append(q.q, t)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run places the queued chunks until ctx ends; then it releases the rest.
func (l *Loader) placeChunks(ctx context.Context) {
	q := &l.places
	for {
		q.mu.Lock()
		todo := q.q
		q.q = nil
		q.mu.Unlock()
		for _, t := range todo {
			switch {
			case ctx.Err() != nil || !l.staging.unread(t.e):
				// A reader has it already: its pages would come too late.
			case t.p.Place(t.a, t.path, t.i, t.c.data):
				l.handedWhole(t.e.key, t.e.size)
				l.staging.place(t.e)
			default:
				l.placeRefused.Add(1)
			}
			t.c.release()
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
			q.mu.Lock()
			todo, q.q = q.q, nil
			q.mu.Unlock()
			for _, t := range todo {
				t.c.release()
			}
			return
		}
	}
}

// isStoreErr reports whether err came from reading the store (worth another
// try by a reader) rather than from the data read (not worth one).
func isStoreErr(err error) bool {
	return !errors.Is(err, codec.ErrCorrupt) && !errors.Is(err, codec.ErrChecksum)
}
