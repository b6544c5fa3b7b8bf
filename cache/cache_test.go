package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

func newCache(t testing.TB, max int64) *Cache {
	t.Helper()
	c, err := New(Config{MaxBytes: max, ItemBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// kept sums cap(value) over the values ristretto holds right now: an
// independent check of Used.
func kept(c *Cache) (n int64, count int) {
	c.rc.IterValues(func(v []byte) bool {
		n += int64(cap(v))
		count++
		return false
	})
	return n, count
}

// valueFor gives each key one value for ever (as chunk keys have): its size
// depends on the key only, and a few keys are larger than the whole budget.
func valueFor(key int, max int64) []byte {
	r := rand.New(rand.NewPCG(uint64(key), 7))
	n := 1 + r.IntN(24<<10)
	if key%97 == 0 {
		n = int(max) + 1 // can never fit
	}
	v := make([]byte, n)
	v[0] = byte(key)
	return v
}

func TestBudgetNeverExceeded(t *testing.T) {
	const max = 256 << 10
	c := newCache(t, max)
	var (
		wg      sync.WaitGroup
		stop    atomic.Bool
		maxSeen atomic.Int64
	)
	wg.Go(func() { // watch Used while the others run
		for !stop.Load() {
			if u := c.used(); u > maxSeen.Load() {
				maxSeen.Store(u)
			}
		}
	})
	// Rounds of concurrent random traffic; between rounds, when nothing is
	// in flight, the values actually held must fit the budget too.
	for round := range 5 {
		var workers sync.WaitGroup
		for w := range 4 {
			workers.Go(func() {
				r := rand.New(rand.NewPCG(uint64(w), uint64(round)))
				for range 600 {
					k := r.IntN(400)
					key := fmt.Sprint(k)
					switch r.IntN(3) {
					case 0:
						if v, ok := c.lookup(key); ok && (v[0] != byte(k) || len(v) != len(valueFor(k, max))) {
							t.Errorf("Get(%s): wrong value", key)
						}
					case 1:
						c.add(key, valueFor(k, max))
					case 2:
						v, err := c.Load(context.Background(), key, func(context.Context) ([]byte, error) {
							return valueFor(k, max), nil
						})
						if err != nil || v[0] != byte(k) {
							t.Errorf("Load(%s) = %v, %v", key, v[:1], err)
						}
					}
				}
			})
		}
		workers.Wait()
		c.wait()
		if n, _ := kept(c); n > max || n != c.used() {
			t.Errorf("round %d: kept %d bytes, Used %d, budget %d", round, n, c.used(), max)
		}
	}
	stop.Store(true)
	wg.Wait()

	n, count := kept(c)
	s := c.Stats()
	t.Logf("kept %d values, %d bytes; max Used seen %d; %v", count, n, maxSeen.Load(), s)
	if maxSeen.Load() > max || s.Used > max || n > max {
		t.Errorf("budget %d exceeded: Used peaked at %d, now %d, kept %d", max, maxSeen.Load(), s.Used, n)
	}
	if n != s.Used {
		t.Errorf("Used = %d, but the kept values hold %d bytes", s.Used, n)
	}
	if n < max/2 {
		t.Errorf("kept only %d of %d bytes: the cache is not being used", n, max)
	}
	if s.Evicted == 0 || s.Rejected == 0 {
		t.Errorf("a full cache under random load should evict and reject: %v", s)
	}
}

func TestLoadShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, 1<<20)
		defer c.Close()
		release := make(chan struct{})
		var calls atomic.Int32
		load := func(ctx context.Context) ([]byte, error) {
			calls.Add(1)
			<-release
			return []byte("value"), nil
		}
		const readers = 8
		got := make([][]byte, readers)
		var wg sync.WaitGroup
		for i := range readers {
			wg.Go(func() {
				v, err := c.Load(context.Background(), "k", load)
				if err != nil {
					t.Errorf("reader %d: %v", i, err)
				}
				got[i] = v
			})
		}
		synctest.Wait() // every reader is blocked on the one load
		if n := calls.Load(); n != 1 {
			t.Fatalf("%d loads running for one key, want 1", n)
		}
		close(release)
		wg.Wait()
		for i, v := range got {
			if string(v) != "value" {
				t.Errorf("reader %d got %q", i, v)
			}
		}
		// The loaded value was kept: the next reader does not load.
		if v, err := c.Load(context.Background(), "k", load); err != nil || string(v) != "value" || calls.Load() != 1 {
			t.Errorf("Load after load = %q, %v with %d loads; want a hit", v, err, calls.Load())
		}
		if s := c.Stats(); s.Loads != 1 || s.Hits != 1 {
			t.Errorf("stats %v: want 1 load and 1 hit", s)
		}
	})
}

func TestLoadReaderLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, 1<<20)
		defer c.Close()
		release := make(chan struct{})
		var loadCtx context.Context
		load := func(ctx context.Context) ([]byte, error) {
			loadCtx = ctx
			<-release
			return []byte("value"), ctx.Err()
		}
		ctx, cancel := context.WithCancel(context.Background())
		var first error
		var wg sync.WaitGroup
		wg.Go(func() { _, first = c.Load(ctx, "k", load) }) // starts the load
		synctest.Wait()
		var others [3][]byte
		for i := range others {
			wg.Go(func() {
				v, err := c.Load(context.Background(), "k", load)
				if err != nil {
					t.Errorf("reader %d: %v", i, err)
				}
				others[i] = v
			})
		}
		synctest.Wait()
		cancel()
		synctest.Wait() // the first reader has left; the others still wait
		if !errors.Is(first, context.Canceled) {
			t.Errorf("cancelled reader got %v, want context.Canceled", first)
		}
		if loadCtx.Err() != nil {
			t.Errorf("the shared load saw the reader's cancellation: %v", loadCtx.Err())
		}
		close(release)
		wg.Wait()
		for i, v := range others {
			if string(v) != "value" {
				t.Errorf("reader %d got %q", i, v)
			}
		}
	})
}

func TestLoadErrorNotKept(t *testing.T) {
	c := newCache(t, 1<<20)
	boom := errors.New("boom")
	var calls int
	load := func(context.Context) ([]byte, error) { calls++; return nil, boom }
	for range 2 {
		if _, err := c.Load(context.Background(), "k", load); !errors.Is(err, boom) {
			t.Errorf("Load = %v, want %v", err, boom)
		}
	}
	if calls != 2 {
		t.Errorf("%d loads, want 2: errors must not be cached", calls)
	}
	if s := c.Stats(); s.LoadErrors != 2 || s.Used != 0 {
		t.Errorf("stats %v", s)
	}
}

func TestDisabled(t *testing.T) {
	c := newCache(t, 0)
	var calls int
	load := func(context.Context) ([]byte, error) { calls++; return []byte("v"), nil }
	for range 2 {
		if v, err := c.Load(context.Background(), "k", load); err != nil || string(v) != "v" {
			t.Fatalf("Load = %q, %v", v, err)
		}
	}
	if c.add("x", []byte("x")) || c.has("k") || calls != 2 || c.used() != 0 {
		t.Errorf("a zero budget kept something: calls %d, used %d", calls, c.used())
	}
}

func TestHasDoesNotCount(t *testing.T) {
	c := newCache(t, 1<<20)
	c.add("k", []byte("v"))
	c.wait()
	if !c.has("k") || c.has("other") {
		t.Fatal("Has is wrong")
	}
	if s := c.Stats(); s.Hits != 0 || s.Misses != 0 {
		t.Errorf("Has counted a lookup: %v", s)
	}
	if v, ok := c.lookup("k"); !ok || string(v) != "v" {
		t.Errorf("Get = %q, %v", v, ok)
	}
}

func BenchmarkLoadHit(b *testing.B) {
	c := newCache(b, 64<<20)
	v := make([]byte, 1<<20)
	c.add("k", v)
	c.wait()
	load := func(context.Context) ([]byte, error) { return v, nil }
	b.ReportAllocs() // a hit shares the value: no bytes move, so no SetBytes
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Load(context.Background(), "k", load); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSetMaxBytes: lowering the budget drops what is kept at once, and
// nothing beyond the new budget is kept after; raising it keeps values
// again. A cache made without a budget keeps nothing whatever it is set to.
func TestSetMaxBytes(t *testing.T) {
	c := newCache(t, 256<<10)
	load := func(key string, n int) {
		t.Helper()
		if _, err := c.Load(context.Background(), key, func(context.Context) ([]byte, error) { return make([]byte, n), nil }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 16 {
		load(fmt.Sprint(i), 8<<10)
	}
	c.wait()
	if n, _ := kept(c); n == 0 {
		t.Fatal("nothing kept before SetMaxBytes")
	}
	c.SetMaxBytes(16 << 10)
	if n, count := kept(c); n != 0 || c.used() != 0 {
		t.Errorf("after SetMaxBytes(16KiB): %d values of %d bytes kept, Used %d; want none", count, n, c.used())
	}
	if st := c.Stats(); st.Max != 16<<10 {
		t.Errorf("Max = %d", st.Max)
	}
	for i := range 16 {
		load("b"+fmt.Sprint(i), 8<<10)
	}
	c.wait()
	if n, _ := kept(c); n > 16<<10 || n != c.used() {
		t.Errorf("kept %d bytes (Used %d) under a budget of 16 KiB", n, c.used())
	}
	c.SetMaxBytes(256 << 10)
	for i := range 16 {
		load("c"+fmt.Sprint(i), 8<<10)
	}
	c.wait()
	if n, _ := kept(c); n <= 16<<10 {
		t.Errorf("kept %d bytes after raising the budget back to 256 KiB", n)
	}

	off := newCache(t, 0)
	off.SetMaxBytes(1 << 20)
	if _, err := off.Load(context.Background(), "k", func(context.Context) ([]byte, error) { return make([]byte, 10), nil }); err != nil {
		t.Fatal(err)
	}
	if st := off.Stats(); st.Used != 0 || st.Max != 0 {
		t.Errorf("a cache made without a budget: %+v", st)
	}
}
