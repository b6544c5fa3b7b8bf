package readahead

import (
	"context"
	"errors"
	iofs "io/fs"
	"sync"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/zarr"
)

// This file is the Loader's prefetch: fetching a planned batch of chunks
// concurrently and decoding it, in parts, into staging.

// A prefetched chunk: its staging entry, and where it is stored.
type prefetched struct {
	e   *staged
	ref chunkRef
}

// prefetch fetches the stored values of batch concurrently and decodes
// them in a few parts, each as one batch as soon as its values are in, so
// decoding overlaps the fetches still in flight (on a remote store a fetch
// is a round trip of milliseconds). Every staged entry is filled, whatever
// happens, so no reader waits for ever.
func (l *Loader) prefetch(a *zarr.Array, batch []prefetched) {
	ctx := l.ctx
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
		l.decodePart(ctx, a, batch[lo:hi], srcs[lo:hi], errs[lo:hi])
	}
	fetches.Wait()
}

// decodeParts is how many parts a prefetch batch is decoded in.
const decodeParts = 4

// decodePart decodes one part of a prefetch batch whose values have been
// fetched (or failed to be) and fills the staging entries.
func (l *Loader) decodePart(ctx context.Context, a *zarr.Array, batch []prefetched, srcs []stored, errs []error) {
	var ok []prefetched
	var okSrcs []stored
	for k, p := range batch {
		if err := errs[k]; err != nil {
			if !errors.Is(err, iofs.ErrNotExist) && ctx.Err() == nil {
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
	for k, p := range ok {
		if err := derrs[k]; err != nil {
			if ctx.Err() == nil {
				l.prefetchErrors.Add(1)
			}
			l.staging.fill(p.e, nil, &iofs.PathError{Op: "decode", Path: p.ref.stored, Err: err}, ctx.Err() == nil)
			continue
		}
		l.staging.fill(p.e, cs[k], nil, false)
	}
}

// isStoreErr reports whether err came from reading the store (worth another
// try by a reader) rather than from the data read (not worth one).
func isStoreErr(err error) bool {
	return !errors.Is(err, codec.ErrCorrupt) && !errors.Is(err, codec.ErrChecksum)
}
