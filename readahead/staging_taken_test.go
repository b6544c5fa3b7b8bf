package readahead

import (
	"fmt"
	"runtime"
	"testing"
	"time"
	"weak"
)

// TestStagingLetsTakenGo: a chunk taken from staging is the reader's; staging
// keeps no reference to it, so once the reader (and the decoded tier) let
// go, the collector frees it, long before its TTL. It used to stay in the
// expiry list until then: under a sustained scan, a TTL's worth of
// prefetched chunks (hundreds of MiB in the soak test) beyond every budget.
func TestStagingLetsTakenGo(t *testing.T) {
	s := newStaging(1<<30, time.Hour)
	const n, size = 64, 1 << 20
	var taken []weak.Pointer[byte]
	for i := range n {
		key := fmt.Sprint(i)
		e, res := s.reserve(key, size)
		if res != reserved {
			t.Fatalf("reserve %s: %v", key, res)
		}
		s.fill(e, heapChunk(make([]byte, size), nil), nil, false)
		e = s.take(key)
		v, err := e.wait(t.Context())
		if err != nil || len(v.data) != size {
			t.Fatalf("take %s: %v, %v", key, v, err)
		}
		taken = append(taken, weak.Make(&v.data[0]))
	}
	runtime.GC()
	held := 0
	for _, p := range taken {
		if p.Value() != nil {
			held++
		}
	}
	// The last few may still be in the expiry list (it is compacted when
	// half of it is gone); all of them must not.
	if held > n/2 {
		t.Errorf("%d of %d taken chunks (1 MiB each) still held after a collection", held, n)
	}
	if st := s.stats(); st.used != 0 {
		t.Errorf("staging accounts %d bytes after every chunk was taken", st.used)
	}
}
