package cache

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/singleflight"
)

// A Flight runs at most one load per key at a time and shares its result
// with every caller that asks for that key meanwhile: the load-once helper
// behind every cache of zfuse (decoded chunks, stored values, shard
// indexes). The zero Flight is ready to use; it is safe for concurrent use.
//
// The load runs with the first caller's context values but without its
// cancellation, so that one interrupted reader does not fail the others
// waiting for the same key: a caller whose ctx ends gets ctx.Err() at once,
// and the load goes on for the rest.
type Flight[V any] struct {
	g       singleflight.Group
	forgets atomic.Int64 // Forget calls
}

// Forget makes the next Do for key call load again rather than wait for a
// call already running: the value behind key changed while it ran.
func (f *Flight[V]) Forget(key string) {
	f.forgets.Add(1)
	f.g.Forget(key)
}

// Forgets counts the Forget calls so far. A load during which it changed
// may have loaded a value forgotten meanwhile: a cache does not keep it.
func (f *Flight[V]) Forgets() int64 { return f.forgets.Load() }

// Do returns load's result for key, calling load unless a call for key is
// already running, in which case it waits for that one.
func (f *Flight[V]) Do(ctx context.Context, key string, load func(context.Context) (V, error)) (V, error) {
	ch := f.g.DoChan(key, func() (any, error) {
		return load(context.WithoutCancel(ctx))
	})
	var zero V
	select {
	case r := <-ch:
		if r.Err != nil {
			return zero, r.Err
		}
		return r.Val.(V), nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}
