package flight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// A rig is a Group and the gate its loads wait at.
type rig struct {
	g       Group[int]
	n       atomic.Int32  // loads started
	ended   atomic.Bool   // a load's ctx had ended when it was released
	release chan struct{} // closed to let the loads return
}

func newRig() *rig { return &rig{release: make(chan struct{})} }

// load returns a load that counts itself in n, waits for release, records
// whether its ctx had ended then, and returns v, err.
func (r *rig) load(v int, err error) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		r.n.Add(1)
		<-r.release
		r.ended.Store(ctx.Err() != nil)
		return v, err
	}
}

func TestDedup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		const callers = 8
		got := make([]int, callers)
		shared := make([]bool, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				v, s, err := r.g.DoShared(t.Context(), "k", r.load(42, nil))
				if err != nil {
					t.Errorf("caller %d: %v", i, err)
				}
				got[i], shared[i] = v, s
			})
		}
		synctest.Wait() // every caller waits for the one load
		if c := r.n.Load(); c != 1 {
			t.Errorf("%d loads for %d callers of one key, want 1", c, callers)
		}
		close(r.release)
		wg.Wait()
		for i := range callers {
			if got[i] != 42 || !shared[i] {
				t.Errorf("caller %d got %d, shared %v; want 42, shared", i, got[i], shared[i])
			}
		}
		// The load is over: the next Do loads again, unshared.
		v, s, err := r.g.DoShared(t.Context(), "k", func(context.Context) (int, error) { return 7, nil })
		if v != 7 || s || err != nil {
			t.Errorf("Do after the load: %d, shared %v, %v; want 7, unshared, nil", v, s, err)
		}
	})
}

func TestKeysIndependent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		var wg sync.WaitGroup
		for _, k := range []string{"a", "b"} {
			wg.Go(func() { r.g.Do(t.Context(), k, r.load(1, nil)) })
		}
		synctest.Wait()
		if c := r.n.Load(); c != 2 {
			t.Errorf("%d loads for two keys, want 2", c)
		}
		close(r.release)
		wg.Wait()
	})
}

// TestCallerCancel: the caller whose ctx ends returns at once, while the
// load, whose own ctx does not end, goes on and serves the others.
func TestCallerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		type key struct{}
		ctx, cancel := context.WithCancel(context.WithValue(t.Context(), key{}, "v"))
		left := make(chan error, 1)
		go func() {
			_, err := r.g.Do(ctx, "k", func(ctx context.Context) (int, error) {
				if ctx.Value(key{}) != "v" {
					t.Errorf("the load lost the first caller's context values")
				}
				return r.load(42, nil)(ctx)
			})
			left <- err
		}()
		synctest.Wait()
		other := make(chan int, 1)
		go func() {
			v, err := r.g.Do(t.Context(), "k", r.load(-1, nil))
			if err != nil {
				t.Errorf("the caller that stayed: %v", err)
			}
			other <- v
		}()
		synctest.Wait()
		cancel()
		synctest.Wait() // the load is still blocked
		select {
		case err := <-left:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled caller got %v, want context.Canceled", err)
			}
		default:
			t.Fatalf("the cancelled caller still waits for the load")
		}
		close(r.release)
		if v := <-other; v != 42 {
			t.Errorf("the caller that stayed got %d, want 42 (the first load's value)", v)
		}
		if r.n.Load() != 1 || r.ended.Load() {
			t.Errorf("%d loads, load's ctx ended %v; want 1 load whose ctx did not end", r.n.Load(), r.ended.Load())
		}
	})
}

// TestAllLeave: when every caller left, the load still finishes (for the
// cache it fills), and a caller arriving meanwhile joins it.
func TestAllLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		finished := make(chan struct{})
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			r.g.Do(ctx, "k", func(ctx context.Context) (int, error) {
				defer close(finished)
				return r.load(42, nil)(ctx)
			})
		}()
		synctest.Wait()
		cancel()
		synctest.Wait()
		late := make(chan int, 1)
		go func() {
			v, _ := r.g.Do(t.Context(), "k", r.load(-1, nil))
			late <- v
		}()
		synctest.Wait()
		close(r.release)
		<-finished
		if v := <-late; v != 42 || r.n.Load() != 1 || r.ended.Load() {
			t.Errorf("late caller got %d after %d loads (ctx ended %v); want 42 from the one load, ctx alive", v, r.n.Load(), r.ended.Load())
		}
	})
}

func TestError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		errBad := errors.New("bad value")
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if _, err := r.g.Do(t.Context(), "k", r.load(0, errBad)); !errors.Is(err, errBad) {
					t.Errorf("Do: %v, want the load's error", err)
				}
			})
		}
		synctest.Wait()
		close(r.release)
		wg.Wait()
		if r.n.Load() != 1 {
			t.Errorf("%d loads, want 1", r.n.Load())
		}
	})
}

func TestPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		errBoom := errors.New("boom")
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				defer func() {
					p, ok := recover().(*PanicError)
					if !ok || !errors.Is(p, errBoom) || len(p.Stack) == 0 {
						t.Errorf("a caller of a panicking load panicked with %v, want a *PanicError of boom with a stack", p)
					}
				}()
				r.g.Do(t.Context(), "k", func(context.Context) (int, error) {
					<-r.release
					panic(errBoom)
				})
				t.Errorf("Do returned from a panicking load")
			})
		}
		synctest.Wait()
		close(r.release)
		wg.Wait()
		// The key is free again.
		if v, err := r.g.Do(t.Context(), "k", func(context.Context) (int, error) { return 1, nil }); v != 1 || err != nil {
			t.Errorf("Do after a panic: %d, %v", v, err)
		}
	})
}

// TestForget: after Forget, a caller starts a load of its own rather than
// wait for the one running, and Forgets tells the running one.
func TestForget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig()
		before := r.g.Forgets()
		first := make(chan int, 1)
		go func() {
			v, _ := r.g.Do(t.Context(), "k", r.load(1, nil))
			first <- v
		}()
		synctest.Wait()
		r.g.Forget("k")
		second := make(chan int, 1)
		go func() {
			v, _ := r.g.Do(t.Context(), "k", r.load(2, nil))
			second <- v
		}()
		synctest.Wait()
		if r.n.Load() != 2 || r.g.Forgets() != before+1 {
			t.Errorf("%d loads after a Forget, Forgets %d→%d; want 2 loads, one Forget", r.n.Load(), before, r.g.Forgets())
		}
		close(r.release)
		if a, b := <-first, <-second; a != 1 || b != 2 {
			t.Errorf("got %d and %d, want 1 (the load forgotten) and 2", a, b)
		}
	})
}

// TestNow: a value now finds is its caller's at once, even with its ctx
// ended, and load never runs; callers that ask meanwhile share it; where
// now finds nothing, load runs as for Do.
func TestNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group[int]
		noLoad := func(context.Context) (int, error) { t.Error("load called"); return 0, nil }
		ended, cancel := context.WithCancel(t.Context())
		cancel()
		if v, s, err := g.DoNow(ended, "k", func() (int, bool) { return 42, true }, noLoad); v != 42 || s || err != nil {
			t.Errorf("DoNow with the value at hand: %d, shared %v, %v; want 42, unshared, nil", v, s, err)
		}

		var joined int
		var joinedShared bool
		var wg sync.WaitGroup
		now := func() (int, bool) {
			wg.Go(func() {
				joined, joinedShared, _ = g.DoNow(t.Context(), "k", func() (int, bool) { t.Error("now called twice"); return 0, false }, noLoad)
			})
			synctest.Wait() // the second caller waits for this call
			return 7, true
		}
		if v, s, err := g.DoNow(t.Context(), "k", now, noLoad); v != 7 || !s || err != nil {
			t.Errorf("DoNow: %d, shared %v, %v; want 7, shared, nil", v, s, err)
		}
		wg.Wait()
		if joined != 7 || !joinedShared {
			t.Errorf("a caller during now got %d, shared %v; want 7, shared", joined, joinedShared)
		}

		v, _, err := g.DoNow(t.Context(), "k", func() (int, bool) { return 0, false }, func(context.Context) (int, error) { return 9, nil })
		if v != 9 || err != nil {
			t.Errorf("DoNow with nothing at hand: %d, %v; want load's 9", v, err)
		}
	})
}

// TestNowPanic: now's panic reaches its caller and every caller waiting
// for the same key, and the key is free again.
func TestNowPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group[int]
		var waiter any
		var wg sync.WaitGroup
		now := func() (int, bool) {
			wg.Go(func() {
				defer func() { waiter = recover() }()
				g.Do(t.Context(), "k", func(context.Context) (int, error) { return 0, nil })
			})
			synctest.Wait()
			panic("boom")
		}
		func() {
			defer func() {
				if _, ok := recover().(*PanicError); !ok {
					t.Error("DoNow: no *PanicError from its now")
				}
			}()
			g.DoNow(t.Context(), "k", now, func(context.Context) (int, error) { return 0, nil })
		}()
		wg.Wait()
		if _, ok := waiter.(*PanicError); !ok {
			t.Errorf("a caller waiting: %v, want a *PanicError", waiter)
		}
		if g.Running("k") {
			t.Error("the call is still running after now panicked")
		}
	})
}
