// Package flight runs at most one load per key at a time and shares its
// result with every caller that asks for that key meanwhile: the load-once
// helper behind every cache of zfuse (decoded chunks, stored values, shard
// indexes, a directory's metadata).
//
// The one fact to know: a caller whose ctx ends gets ctx.Err() at once,
// and the load goes on for the others and for the cache. The load runs
// with the first caller's context values but without its cancellation
// (context.WithoutCancel), rather than until the last waiter leaves,
// because its result is kept: the reader who was interrupted (a FUSE
// request the kernel interrupts on a signal) usually asks again at once.
//
// It imports nothing else of zfuse.
package flight

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// A Group deduplicates the loads of values of type V by key. The zero
// Group is ready to use; it is safe for concurrent use.
type Group[V any] struct {
	forgets atomic.Int64 // Forget calls

	mu    sync.Mutex          // guards calls and each call's counts
	calls map[string]*call[V] // the loads running, by key; a Forget drops one early
}

// A call is one load.
type call[V any] struct {
	done chan struct{} // closed once the fields below are set

	// Set before done is closed, read-only after.
	v      V
	err    error
	panic  *PanicError // load panicked
	shared bool        // more than one caller asked for this load

	// Guarded by Group.mu.
	callers  int  // callers that joined this load
	waiting  int  // callers that have not left it for their ctx
	finished bool // load returned: every caller waiting takes its result
}

// A PanicError is the value a caller panics with when the load it waited
// for panicked: the load's panic value and its stack.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string {
	return fmt.Sprintf("flight: load panicked: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap returns the panic value if it is an error.
func (p *PanicError) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// errGoexit is the error of a load that called runtime.Goexit.
var errGoexit = errors.New("flight: load called runtime.Goexit")

// Forget makes the next Do for key call load again rather than wait for a
// call already running: the value behind key changed while it ran.
func (g *Group[V]) Forget(key string) {
	g.forgets.Add(1)
	g.mu.Lock()
	delete(g.calls, key)
	g.mu.Unlock()
}

// Running reports whether a load for key is running (a Do would wait for
// it, not call load).
func (g *Group[V]) Running(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.calls[key]
	return ok
}

// Forgets counts the Forget calls so far. A load during which it changed
// may have loaded a value forgotten meanwhile: a cache does not keep it.
func (g *Group[V]) Forgets() int64 { return g.forgets.Load() }

// Do returns load's result for key, calling load unless a call for key is
// already running, in which case it waits for that one. If ctx ends first,
// Do returns ctx.Err() at once and the load goes on. If load panics, every
// caller still waiting panics with a *PanicError; with none waiting, the
// load's goroutine does, so that the bug is not lost.
func (g *Group[V]) Do(ctx context.Context, key string, load func(context.Context) (V, error)) (V, error) {
	v, _, err := g.DoShared(ctx, key, load)
	return v, err
}

// DoShared is Do, and reports whether the value may have gone to more than
// one caller (who then must not change it, or must copy it).
func (g *Group[V]) DoShared(ctx context.Context, key string, load func(context.Context) (V, error)) (v V, shared bool, err error) {
	return g.DoNow(ctx, key, nil, load)
}

// DoNow is DoShared for a value that may be at hand: the caller that
// starts the call for key first calls now, in its own goroutine, and only
// where now finds nothing starts load as Do does. now must not block;
// callers that ask for key meanwhile wait for its value as for a load's.
// A value at hand (a chunk decoded ahead, waiting to be taken) then costs
// no goroutine and no wait: a FUSE request served on a thread of its own
// (FUSE over io_uring) that waits for a goroutine parks its thread, two
// context switches and a hand-over of the Go scheduler's P each time.
// Unlike a load's, now's value goes to its caller even if ctx has ended.
func (g *Group[V]) DoNow(ctx context.Context, key string, now func() (V, bool), load func(context.Context) (V, error)) (v V, shared bool, err error) {
	g.mu.Lock()
	c, ok := g.calls[key]
	if !ok {
		if g.calls == nil {
			g.calls = make(map[string]*call[V])
		}
		c = &call[V]{done: make(chan struct{})}
		g.calls[key] = c
	}
	c.callers++
	c.waiting++
	g.mu.Unlock()
	if !ok {
		if now != nil {
			if v, found := g.callNow(key, c, now); found {
				c.v = v
				g.finish(key, c)
				return v, c.shared, nil
			}
		}
		go g.run(context.WithoutCancel(ctx), key, c, load) // ends when load returns
	}

	select {
	case <-c.done:
	case <-ctx.Done():
		g.mu.Lock()
		finished := c.finished
		if !finished {
			c.waiting--
		}
		g.mu.Unlock()
		if !finished {
			var zero V
			return zero, false, ctx.Err()
		}
		<-c.done // closed right after finished is set
	}
	if c.panic != nil {
		panic(c.panic)
	}
	return c.v, c.shared, c.err
}

// callNow calls now for c. If now panics, the callers waiting for c
// panic with a *PanicError, and so does its caller.
func (g *Group[V]) callNow(key string, c *call[V], now func() (V, bool)) (v V, found bool) {
	defer func() {
		if r := recover(); r != nil {
			c.panic = &PanicError{Value: r, Stack: debug.Stack()}
			g.finish(key, c)
			panic(c.panic)
		}
	}()
	return now()
}

// finish publishes c's result (set before: c.v, c.err, c.panic) to its
// callers and frees key for the next call, and returns how many callers
// were still waiting for it.
func (g *Group[V]) finish(key string, c *call[V]) (waiting int) {
	g.mu.Lock()
	if g.calls[key] == c {
		delete(g.calls, key)
	}
	c.shared = c.callers > 1
	c.finished = true
	waiting = c.waiting
	g.mu.Unlock()
	close(c.done)
	return waiting
}

// run calls load for c and publishes its result.
func (g *Group[V]) run(ctx context.Context, key string, c *call[V], load func(context.Context) (V, error)) {
	returned := false
	defer func() {
		if !returned {
			if r := recover(); r != nil {
				c.panic = &PanicError{Value: r, Stack: debug.Stack()}
			} else {
				c.err = errGoexit
			}
		}
		if g.finish(key, c) == 0 && c.panic != nil {
			panic(c.panic)
		}
	}()
	c.v, c.err = load(ctx)
	returned = true
}
