package readahead

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// TestSetBudgets: a scan fills the decoded tier (memfds), the compressed
// tier and staging; SetBudgets(0, 0, 0) frees every chunk and stored value
// they hold at once (no memfd is left but the one a reader holds open),
// and the scan goes on reading right bytes, decoding without prefetch.
// Raising the budgets again lets the tiers fill and readahead prefetch.
func TestSetBudgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := zlibArray(t, []int{100 * 512}, []int{512}) // 100 chunks of 4 KiB
		s := fixture(t, a, "temp", nil)
		l := New(Config{Store: s, Files: true, DecodedBudget: 16 * a.ChunkLen(), CompressedBudget: 1 << 20,
			ReadaheadBudget: 16 * a.ChunkLen(), TTL: time.Hour})
		defer l.Close()
		open := func(i int64) *File {
			t.Helper()
			f, err := l.Open(context.Background(), Ref{Array: a, Path: "temp", Coords: a.Coords(i), PID: 1})
			if err != nil {
				t.Fatal(err)
			}
			readFile(t, f, a, i)
			return f
		}
		for i := range int64(20) {
			open(i).Close()
		}
		held := open(20) // a reader keeps this one open
		synctest.Wait()  // prefetches done
		st := l.Stats()
		if st.DecodedUsed == 0 || st.CompressedUsed == 0 || st.ReadaheadUsed == 0 {
			t.Fatalf("the scan filled no tier: %v", st)
		}
		t.Logf("before: %d free chunk files of %d bytes", st.MemfdsFree, st.MemfdFreeBytes)
		l.SetBudgets(0, 0, 0)
		st = l.Stats()
		if st.DecodedUsed != 0 || st.CompressedUsed != 0 || st.ReadaheadUsed != 0 ||
			st.DecodedBudget != 0 || st.CompressedBudget != 0 || st.ReadaheadBudget != 0 {
			t.Errorf("after SetBudgets(0, 0, 0): %v; want nothing held", st)
		}
		if st.Memfds != 1 || st.MemfdBytes != a.ChunkLen() {
			t.Errorf("after SetBudgets(0, 0, 0): %d memfds of %d bytes; want the one held open", st.Memfds, st.MemfdBytes)
		}
		if l.bufs.bytes != 0 || l.srcs.bytes != 0 || st.MemfdFreeBytes != 0 {
			t.Errorf("after SetBudgets(0, 0, 0): the buffer pools hold %d and %d bytes, free chunk files %d", l.bufs.bytes, l.srcs.bytes, st.MemfdFreeBytes)
		}
		readFile(t, held, a, 20)
		held.Close()
		prefetched := st.Prefetched
		for i := int64(21); i < 40; i++ {
			open(i).Close()
		}
		synctest.Wait()
		// The decoded tier keeps the chunk added last until the next one
		// comes (its readers are still taking it), over budget or not.
		if st := l.Stats(); st.Prefetched != prefetched || st.Memfds > 1 {
			t.Errorf("with no budgets: %d prefetched (was %d), %d memfds; want no prefetch and at most the last chunk kept", st.Prefetched, prefetched, st.Memfds)
		}
		l.SetBudgets(16*a.ChunkLen(), 1<<20, 16*a.ChunkLen())
		for i := int64(40); i < 60; i++ {
			open(i).Close()
		}
		synctest.Wait()
		if st := l.Stats(); st.Prefetched == prefetched || st.DecodedUsed == 0 || st.CompressedUsed == 0 || st.ReadaheadUsed == 0 {
			t.Errorf("after raising the budgets again: %v; want the tiers filling and prefetch", st)
		}
	})
}

// TestStagingSetMax: lowering staging's budget releases decoded chunks
// waiting unread, the oldest first, until what is staged fits; chunks
// still loading and placed ones (their bytes gone to the page cache) keep
// their reservations.
func TestStagingSetMax(t *testing.T) {
	s := newStaging(100, time.Hour)
	var chunks []*chunk
	fill := func(key string) *staged {
		e, res := s.reserve(key, 10)
		if res != reserved {
			t.Fatalf("reserve %s: %v", key, res)
		}
		c := heapChunk(make([]byte, 10), nil)
		chunks = append(chunks, c)
		s.fill(e, c, nil, false)
		return e
	}
	s.place(fill("placed")) // the oldest
	for i := range 4 {
		fill(fmt.Sprint(i))
	}
	pending, _ := s.reserve("loading", 10)
	s.setMax(30)
	st := s.stats()
	// placed and loading hold 20; of the four decoded, the oldest three go.
	if st.used != 20+10 || st.max != 30 || st.wasted != 3 {
		t.Errorf("after setMax(30): %+v", st)
	}
	for i, c := range chunks {
		want := int64(0) // released: placed (0) and the three oldest decoded (1-3)
		if i == 4 {
			want = 1 // the newest decoded one stays
		}
		if c.refs.Load() != want {
			t.Errorf("chunk %d has %d references, want %d", i, c.refs.Load(), want)
		}
	}
	if _, res := s.reserve("more", 1); res != full {
		t.Errorf("a reservation over the lowered budget: %v", res)
	}
	if e := s.take("3"); e == nil {
		t.Error("the newest decoded chunk is gone")
	}
	s.fill(pending, heapChunk(make([]byte, 10), nil), nil, false)
	s.setMax(0)
	s.clear()
}

// TestSetBudgetsWhileReading: SetBudgets runs beside readers that plan
// (the memory-pressure watcher lowers and raises budgets while a mount
// serves); under -race, planning read the readahead budget unlocked.
func TestSetBudgetsWhileReading(t *testing.T) {
	a := zlibArray(t, []int{200 * 512}, []int{512})
	s := fixture(t, a, "temp", nil)
	l := New(Config{Store: s, DecodedBudget: 16 * a.ChunkLen(), ReadaheadBudget: 16 * a.ChunkLen(), TTL: time.Hour})
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range int64(200) {
			if _, err := l.Chunk(context.Background(), Ref{Array: a, Path: "temp", Coords: a.Coords(i), PID: 1}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		default:
		}
		l.SetBudgets(int64(16-i%8)*a.ChunkLen(), 0, int64(16-i%8)*a.ChunkLen())
	}
}
