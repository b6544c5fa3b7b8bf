package readahead

import (
	"context"
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
			f, err := l.Open(context.Background(), a, "temp", a.Coords(i), 1)
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
		l.SetBudgets(0, 0, 0)
		st = l.Stats()
		if st.DecodedUsed != 0 || st.CompressedUsed != 0 || st.ReadaheadUsed != 0 ||
			st.DecodedBudget != 0 || st.CompressedBudget != 0 || st.ReadaheadBudget != 0 {
			t.Errorf("after SetBudgets(0, 0, 0): %v; want nothing held", st)
		}
		if st.Memfds != 1 || st.MemfdBytes != a.ChunkLen() {
			t.Errorf("after SetBudgets(0, 0, 0): %d memfds of %d bytes; want the one held open", st.Memfds, st.MemfdBytes)
		}
		if l.bufs.bytes != 0 || l.srcs.bytes != 0 {
			t.Errorf("after SetBudgets(0, 0, 0): the buffer pools hold %d and %d bytes", l.bufs.bytes, l.srcs.bytes)
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
