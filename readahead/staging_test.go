package readahead

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestStagingBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const max = 10_000
		s := newStaging(max, time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { s.run(ctx) })
		var workers sync.WaitGroup
		for w := range 4 {
			workers.Go(func() {
				r := rand.New(rand.NewPCG(uint64(w), 9))
				var mine []*staged
				for range 2000 {
					key := fmt.Sprint(r.IntN(50))
					switch r.IntN(4) {
					case 0, 1:
						size := 1 + r.Int64N(3000)
						if e, res := s.reserve(key, size); res == reserved {
							mine = append(mine, e)
						}
					case 2:
						if len(mine) > 0 {
							e := mine[0]
							mine = mine[1:]
							if r.IntN(8) == 0 {
								s.fill(e, nil, errors.New("failed"), false)
							} else {
								s.fill(e, heapChunk(make([]byte, e.size), nil), nil, false)
							}
						}
					case 3:
						if e := s.take(key); e != nil && r.IntN(2) == 0 {
							time.Sleep(time.Duration(r.IntN(100)) * time.Millisecond)
						}
					}
					if st := s.stats(); st.used > max || st.used < 0 {
						t.Errorf("staging holds %d bytes, budget %d", st.used, max)
					}
					if r.IntN(50) == 0 {
						time.Sleep(time.Duration(r.IntN(400)) * time.Millisecond) // let some expire
					}
				}
				for _, e := range mine {
					s.fill(e, nil, context.Canceled, false)
				}
			})
		}
		workers.Wait()
		time.Sleep(2 * time.Second) // everything left expires
		cancel()
		wg.Wait()
		st := s.stats()
		t.Logf("%+v", st)
		if st.peak > max {
			t.Errorf("peak %d bytes, budget %d", st.peak, max)
		}
		if st.peak < max/2 || st.wasted == 0 || st.taken == 0 {
			t.Errorf("the test did not exercise the budget: %+v", st)
		}
		if st.used != 0 || len(s.entries) != 0 {
			t.Errorf("after expiry %d bytes in %d entries remain", st.used, len(s.entries))
		}
	})
}

func TestStagingExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 10 * time.Second
		s := newStaging(1000, ttl)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go s.run(ctx)
		for i := range 3 {
			e, res := s.reserve(fmt.Sprint(i), 100)
			if res != reserved {
				t.Fatalf("reserve %d: %v", i, res)
			}
			s.fill(e, heapChunk(make([]byte, 100), nil), nil, false)
			time.Sleep(time.Second)
		}
		if !s.isReady("0") {
			t.Fatal("a filled chunk is not ready")
		}
		time.Sleep(ttl - 2*time.Second) // chunk 0 is 10s old, chunk 2 8s
		synctest.Wait()
		if s.isReady("0") || !s.isReady("2") {
			t.Errorf("after %v: chunk 0 ready %v (want expired), chunk 2 ready %v", ttl, s.isReady("0"), s.isReady("2"))
		}
		if e := s.take("2"); e == nil {
			t.Fatal("take of a ready chunk failed")
		}
		time.Sleep(ttl)
		synctest.Wait()
		st := s.stats()
		if st.wasted != 2 || st.wastedBytes != 200 || st.taken != 1 || st.used != 0 {
			t.Errorf("stats %+v: want chunks 0 and 1 wasted, 2 taken, nothing held", st)
		}
	})
}

func TestStagingTakePending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStaging(1000, time.Second)
		e, _ := s.reserve("k", 600)
		if _, res := s.reserve("k", 600); res != present {
			t.Errorf("second reserve of a staged key: %v, want present", res)
		}
		if _, res := s.reserve("other", 600); res != full {
			t.Errorf("reserve past the budget: %v, want full", res)
		}
		if s.isReady("k") {
			t.Error("a pending chunk is ready")
		}
		got := s.take("k") // a reader arrives while it is decoding
		if got != e || s.stats().used != 0 {
			t.Fatalf("take of a pending chunk: %v, used %d", got, s.stats().used)
		}
		var v *chunk
		var err error
		done := make(chan struct{})
		go func() { v, err = got.wait(context.Background()); close(done) }()
		synctest.Wait() // the reader waits for the decode
		s.fill(e, heapChunk([]byte("chunk"), nil), nil, false)
		<-done
		if v == nil || string(v.data) != "chunk" || err != nil {
			t.Errorf("wait = %v, %v", v, err)
		}
		time.Sleep(2 * time.Second)
		s.expire(time.Now())
		if st := s.stats(); st.wasted != 0 || st.taken != 1 {
			t.Errorf("a taken chunk counted as waste: %+v", st)
		}
		// A failed load releases its reservation and is not waste.
		e2, _ := s.reserve("bad", 1000)
		s.fill(e2, nil, errors.New("corrupt"), true)
		if st := s.stats(); st.used != 0 || s.take("bad") != nil {
			t.Errorf("a failed chunk stayed staged: %+v", st)
		}
		// A reader whose context ends stops waiting.
		e3, _ := s.reserve("slow", 10)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.take("slow").wait(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("wait with a cancelled context: %v", err)
		}
		s.fill(e3, nil, context.Canceled, false)
	})
}
