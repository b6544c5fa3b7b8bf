package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// item is an LRU value that knows whether it was dropped, and how often.
type item struct {
	key   string
	size  int64
	drops atomic.Int32
}

func newLRU(maxBytes int64, maxItems int) *LRU[*item] {
	return NewLRU(LRUConfig[*item]{
		MaxBytes: maxBytes,
		MaxItems: maxItems,
		Size:     func(v *item) int64 { return v.size },
		Drop:     func(v *item) { v.drops.Add(1) },
	})
}

// keys returns the keys kept, most recently used first.
func keys(c *LRU[*item]) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ks []string
	for e := c.ll.Front(); e != nil; e = e.Next() {
		ks = append(ks, e.Value.(*lruEntry[*item]).key)
	}
	return ks
}

func TestLRU(t *testing.T) {
	for _, r := range []struct {
		name     string
		maxBytes int64
		maxItems int
		ops      []string // "+k:size" adds, "?k" gets, "-k" removes
		want     []string // keys kept, most recent first
		dropped  []string
	}{
		{"within budget", 10, 0, []string{"+a:3", "+b:3", "+c:3"}, []string{"c", "b", "a"}, nil},
		{"evicts least recent", 10, 0, []string{"+a:4", "+b:4", "+c:4"}, []string{"c", "b"}, []string{"a"}},
		{"a get refreshes", 10, 0, []string{"+a:4", "+b:4", "?a", "+c:4"}, []string{"c", "a"}, []string{"b"}},
		{"count bound", 100, 2, []string{"+a:1", "+b:1", "+c:1"}, []string{"c", "b"}, []string{"a"}},
		{"too big is kept alone until the next add", 10, 0, []string{"+a:4", "+big:20"}, []string{"big"}, []string{"a"}},
		{"then goes", 10, 0, []string{"+big:20", "+a:4"}, []string{"a"}, []string{"big"}},
		{"replace drops the old value", 10, 0, []string{"+a:4", "+a:5"}, []string{"a"}, []string{"a"}},
		{"remove", 10, 0, []string{"+a:4", "+b:4", "-a"}, []string{"b"}, []string{"a"}},
	} {
		t.Run(r.name, func(t *testing.T) {
			c := newLRU(r.maxBytes, r.maxItems)
			items := map[string][]*item{}
			var all []*item
			for _, op := range r.ops {
				switch op[0] {
				case '+':
					k, size, _ := strings.Cut(op[1:], ":")
					n, _ := strconv.ParseInt(size, 10, 64)
					v := &item{key: k, size: n}
					items[k] = append(items[k], v)
					all = append(all, v)
					c.add(k, v)
				case '?':
					c.lookup(op[1:])
				case '-':
					vs := items[op[1:]]
					if !c.Remove(op[1:], vs[len(vs)-1]) {
						t.Errorf("Remove(%s) found nothing", op[1:])
					}
				}
			}
			if got := keys(c); !slices.Equal(got, r.want) {
				t.Errorf("kept %v, want %v", got, r.want)
			}
			var dropped []string
			for _, v := range all {
				switch v.drops.Load() {
				case 0:
				case 1:
					dropped = append(dropped, v.key)
				default:
					t.Errorf("%s dropped %d times", v.key, v.drops.Load())
				}
			}
			if !slices.Equal(dropped, r.dropped) {
				t.Errorf("dropped %v, want %v", dropped, r.dropped)
			}
			var sum int64
			for _, k := range keys(c) {
				for _, v := range items[k] {
					if v.drops.Load() == 0 {
						sum += v.size
					}
				}
			}
			if st := c.Stats(); st.Used != sum || st.Items != int64(len(r.want)) {
				t.Errorf("stats %+v, want %d bytes in %d items", st, sum, len(r.want))
			}
			c.Close()
			for _, v := range all {
				if v.drops.Load() != 1 {
					t.Errorf("after Close %s was dropped %d times, want once", v.key, v.drops.Load())
				}
			}
		})
	}
}

// TestLRURemoveOnlyThatValue: Remove leaves a value that replaced the one
// named.
func TestLRURemoveOnlyThatValue(t *testing.T) {
	c := newLRU(10, 0)
	old, cur := &item{key: "a", size: 1}, &item{key: "a", size: 1}
	c.add("a", old)
	c.add("a", cur)
	if c.Remove("a", old) {
		t.Error("Remove of a replaced value removed something")
	}
	if v, ok := c.lookup("a"); !ok || v != cur {
		t.Errorf("Get = %v, %v; want the current value", v, ok)
	}
}

// TestLRUDelete: Delete drops whatever value a key holds, once, and frees
// its bytes; deleting a key not kept does nothing.
func TestLRUDelete(t *testing.T) {
	c := newLRU(10, 0)
	a, b := &item{key: "a", size: 4}, &item{key: "b", size: 4}
	c.add("a", a)
	c.add("b", b)
	for _, tc := range []struct {
		key  string
		want bool
	}{{"a", true}, {"a", false}, {"nope", false}} {
		if got := c.Delete(tc.key); got != tc.want {
			t.Errorf("Delete(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
	if a.drops.Load() != 1 || b.drops.Load() != 0 || c.Has("a") || !c.Has("b") || c.Stats().Used != 4 {
		t.Errorf("after Delete(a): drops a %d b %d, kept %v, stats %+v", a.drops.Load(), b.drops.Load(), keys(c), c.Stats())
	}
}

// TestLRUClear: Clear drops every value once, and the LRU keeps what is
// added after.
func TestLRUClear(t *testing.T) {
	c := newLRU(10, 0)
	a, b := &item{key: "a", size: 4}, &item{key: "b", size: 4}
	c.Add("a", a)
	c.Clear()
	c.Add("b", b)
	if a.drops.Load() != 1 || b.drops.Load() != 0 || c.Has("a") || !c.Has("b") || c.Stats().Used != 4 {
		t.Errorf("after Clear and Add(b): drops a %d b %d, kept %v, stats %+v", a.drops.Load(), b.drops.Load(), keys(c), c.Stats())
	}
}

// TestLRUBudget adds, gets and removes from many goroutines and checks that
// the budget holds after every Add but the one value allowed over it, and
// that every value is dropped exactly once by the end.
func TestLRUBudget(t *testing.T) {
	const maxBytes = 64 << 10
	c := newLRU(maxBytes, 50)
	var mu sync.Mutex
	var all []*item
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range 3000 {
				k := fmt.Sprint(r.IntN(200))
				switch r.IntN(3) {
				case 0:
					v := &item{key: k, size: 1 + r.Int64N(8<<10)}
					mu.Lock()
					all = append(all, v)
					mu.Unlock()
					c.add(k, v)
				case 1:
					c.lookup(k)
				case 2:
					if v, ok := c.lookup(k); ok {
						c.Remove(k, v)
					}
				}
				if st := c.Stats(); st.Used > maxBytes+8<<10 || st.Items > 50 {
					t.Errorf("holds %d bytes in %d items", st.Used, st.Items)
				}
			}
		})
	}
	wg.Wait()
	c.Close()
	for _, v := range all {
		if v.drops.Load() != 1 {
			t.Fatalf("a value was dropped %d times", v.drops.Load())
		}
	}
}

// TestLRULoadOnce: concurrent Loads of one key run one load; a caller whose
// context ends leaves, and the others still get the value.
func TestLRULoadOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newLRU(1<<20, 0)
		gate := make(chan struct{})
		var loads atomic.Int32
		load := func(context.Context) (*item, error) {
			loads.Add(1)
			<-gate
			return &item{key: "k", size: 10}, nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var first error
		wg.Go(func() { _, first = c.Load(ctx, "k", load) })
		got := make([]*item, 5)
		for i := range got {
			wg.Go(func() {
				v, err := c.Load(context.Background(), "k", load)
				if err != nil {
					t.Error(err)
				}
				got[i] = v
			})
		}
		synctest.Wait()
		cancel()
		synctest.Wait()
		if !errors.Is(first, context.Canceled) {
			t.Errorf("cancelled caller: %v", first)
		}
		close(gate)
		wg.Wait()
		if loads.Load() != 1 {
			t.Errorf("%d loads, want 1", loads.Load())
		}
		for _, v := range got {
			if v == nil || v != got[0] {
				t.Fatalf("callers got %v", got)
			}
		}
		if v, ok := c.lookup("k"); !ok || v != got[0] {
			t.Errorf("the loaded value is not kept")
		}
		// A failed load is not kept, and the next Load tries again.
		_, err := c.Load(context.Background(), "bad", func(context.Context) (*item, error) { return nil, errors.New("no") })
		if err == nil || c.Has("bad") {
			t.Errorf("failed load: %v, kept %v", err, c.Has("bad"))
		}
		if st := c.Stats(); st.Loads != 2 || st.LoadErrors != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestLRULoadNow: a value now finds is kept as a loaded one, load never
// runs for it, and a Load meanwhile takes it; where now finds nothing,
// load produces the value; a Delete while now runs drops what it found.
func TestLRULoadNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newLRU(1<<20, 0)
		noLoad := func(context.Context) (*item, error) { t.Error("load called"); return nil, nil }
		v := &item{key: "k", size: 10}
		var joined *item
		var wg sync.WaitGroup
		now := func() (*item, bool) {
			wg.Go(func() { joined, _ = c.Load(context.Background(), "k", noLoad) })
			synctest.Wait() // the Load waits for this one
			return v, true
		}
		if got, err := c.LoadNow(context.Background(), "k", now, noLoad); got != v || err != nil {
			t.Errorf("LoadNow: %v, %v; want now's value", got, err)
		}
		wg.Wait()
		if joined != v {
			t.Errorf("a Load meanwhile got %v, want now's value", joined)
		}
		if got, ok := c.lookup("k"); !ok || got != v {
			t.Errorf("now's value is not kept")
		}

		w := &item{key: "l", size: 10}
		got, err := c.LoadNow(context.Background(), "l", func() (*item, bool) { return nil, false }, func(context.Context) (*item, error) { return w, nil })
		if got != w || err != nil || !c.Has("l") {
			t.Errorf("LoadNow with nothing at hand: %v, %v, kept %v; want load's value, kept", got, err, c.Has("l"))
		}
		if st := c.Stats(); st.Loads != 2 {
			t.Errorf("%d loads, want 2", st.Loads)
		}

		x := &item{key: "m", size: 10}
		c.LoadNow(context.Background(), "m", func() (*item, bool) { c.Delete("m"); return x, true }, noLoad)
		if c.Has("m") || x.drops.Load() != 1 {
			t.Errorf("deleted while now ran: kept %v, dropped %d times; want dropped once", c.Has("m"), x.drops.Load())
		}
	})
}

// TestDeleteDuringLoad: a Delete while a load of the key runs (the value
// stored under it changed) makes the next Load load again instead of
// waiting for the running one, and the running load's value, perhaps the
// old one, is not kept; for both tiers.
func TestDeleteDuringLoad(t *testing.T) {
	t.Run("LRU", func(t *testing.T) {
		c := newLRU(1<<20, 0)
		old, fresh := &item{key: "k", size: 4}, &item{key: "k", size: 4}
		deleteDuringLoad(t, c.Load, func() { c.Delete("k") }, old, fresh)
		if v, ok := c.lookup("k"); !ok || v != fresh || old.drops.Load() != 1 {
			t.Errorf("keeps %v (%v), the old value dropped %d times: want the new value kept, the old dropped once", v, ok, old.drops.Load())
		}
	})
	t.Run("Cache", func(t *testing.T) {
		c := newCache(t, 1<<20)
		old, fresh := []byte("old"), []byte("new")
		deleteDuringLoad(t, c.Load, func() { c.Delete("k") }, old, fresh)
		c.wait()
		if v, ok := c.get("k"); !ok || string(v) != "new" {
			t.Errorf("keeps %q (%v), want the new value", v, ok)
		}
	})
}

// deleteDuringLoad runs a Load of "k" that returns old once the test has
// called del, then a Load that must return fresh, before the first ends.
func deleteDuringLoad[V any](t *testing.T, load func(context.Context, string, func(context.Context) (V, error)) (V, error), del func(), old, fresh V) {
	t.Helper()
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan V)
	go func() {
		v, _ := load(context.Background(), "k", func(context.Context) (V, error) {
			close(started)
			<-release
			return old, nil
		})
		done <- v
	}()
	<-started
	del()
	v, err := load(context.Background(), "k", func(context.Context) (V, error) { return fresh, nil })
	if err != nil || !reflect.DeepEqual(v, fresh) {
		t.Fatalf("Load after Delete = %v, %v: want the value loaded again", v, err)
	}
	close(release)
	if v := <-done; !reflect.DeepEqual(v, old) {
		t.Errorf("the running load returned %v, want its own value", v)
	}
}

// TestLRUSetMaxBytes: lowering the budget evicts the least recently used
// values at once, all of them for 0, each dropped once; raising it again
// lets values be kept up to the new budget.
func TestLRUSetMaxBytes(t *testing.T) {
	c := newLRU(10, 0)
	var vs []*item
	for i := range 5 {
		v := &item{key: strconv.Itoa(i), size: 2}
		vs = append(vs, v)
		c.add(v.key, v)
	}
	c.lookup("0") // now the most recently used
	c.SetMaxBytes(5)
	if got, want := keys(c), []string{"0", "4"}; !slices.Equal(got, want) {
		t.Errorf("after SetMaxBytes(5): %v, want %v", got, want)
	}
	if st := c.Stats(); st.Used != 4 || st.Max != 5 || st.Evicted != 3 {
		t.Errorf("stats %+v", st)
	}
	c.SetMaxBytes(0)
	if got := keys(c); len(got) != 0 {
		t.Errorf("after SetMaxBytes(0): %v, want none", got)
	}
	for _, v := range vs {
		if v.drops.Load() != 1 {
			t.Errorf("%s dropped %d times", v.key, v.drops.Load())
		}
	}
	c.SetMaxBytes(6)
	for i := range 4 {
		v := &item{key: "n" + strconv.Itoa(i), size: 2}
		c.add(v.key, v)
	}
	if got, want := keys(c), []string{"n3", "n2", "n1"}; !slices.Equal(got, want) {
		t.Errorf("after SetMaxBytes(6) and four adds: %v, want %v", got, want)
	}
}
