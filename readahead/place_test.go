package readahead

import (
	"bytes"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zfuse/zfuse/zarr"
)

// pageCache is a Placer standing in for the kernel's page cache: it keeps
// the bytes it is given, and a reader finds a chunk there without asking
// the Loader. refuse, when set, says which chunks it does not take (files
// the kernel does not know yet).
type pageCache struct {
	refuse func(i int64) bool

	mu         sync.Mutex
	m          map[int64][]byte
	expected   map[int64]bool // Expect'ed chunks
	unexpected int            // chunks offered that were not Expect'ed first
}

func (p *pageCache) Expect(a *zarr.Array, i int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.expected == nil {
		p.expected = map[int64]bool{}
	}
	p.expected[i] = true
}

func (p *pageCache) Place(a *zarr.Array, path string, i int64, data []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.expected[i] {
		p.unexpected++
	}
	if p.refuse != nil && p.refuse(i) {
		return false
	}
	if p.m == nil {
		p.m = map[int64][]byte{}
	}
	p.m[i] = bytes.Clone(data) // data is valid only during the call
	return true
}

// read returns chunk i from the page cache, if it holds it.
func (p *pageCache) read(i int64) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.m[i]
	return b, ok
}

// TestLoaderPlaced: a sequential reader whose chunks are placed ahead of it
// reads most of them without asking the Loader, and readahead still
// follows it to the end: the staged chunks between placed runs report
// where it is. Every byte is right, the placed chunks leave the budget
// once read past, and a Placer that refuses a chunk leaves it staged.
func TestLoaderPlaced(t *testing.T) {
	for _, tt := range []struct {
		name   string
		refuse func(int64) bool
	}{
		{"all", nil},
		{"refused", func(i int64) bool { return i%7 == 3 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := zlibArray(t, []int{400 * 512}, []int{512}) // 400 chunks of 4 KiB
				l := New(Config{Store: fixture(t, a, "temp", nil), DecodedBudget: 1 << 20, ReadaheadBudget: 512 << 10, TTL: 10 * time.Second})
				defer l.Close()
				pc := &pageCache{refuse: tt.refuse}
				l.SetPlacer(pc)
				asked := 0
				for i := range a.NumChunks() {
					synctest.Wait() // the prefetches planned so far are done
					got, ok := pc.read(i)
					if !ok {
						asked++
						if err := readChunk(t, l, a, "temp", i, 1); err != nil {
							t.Fatal(err)
						}
						continue
					}
					if !bytes.Equal(got, chunkData(a, i)) {
						t.Fatalf("placed chunk %d: wrong bytes", i)
					}
				}
				synctest.Wait()
				st := l.Stats()
				t.Logf("%d of %d chunks asked for; %v", asked, a.NumChunks(), st)
				if asked > 80+int(st.PlaceRefused) {
					t.Errorf("the reader asked the Loader for %d of 400 chunks, want at most 80 and those refused (%d)", asked, st.PlaceRefused)
				}
				if pc.unexpected > 0 {
					t.Errorf("%d chunks offered to the Placer without Expect first", pc.unexpected)
				}
				if st.PlacedPeak == 0 || st.PlacedPeak > st.ReadaheadBudget {
					t.Errorf("pushed unread at most %d bytes, budget %d", st.PlacedPeak, st.ReadaheadBudget)
				}
				if st.Placed < 300 || st.PlacedRead < st.Placed-70 {
					t.Errorf("placed %d, known read %d: want most placed and known read", st.Placed, st.PlacedRead)
				}
				if st.PrefetchWaits > 8 {
					t.Errorf("the reader waited for %d prefetches: readahead lost it", st.PrefetchWaits)
				}
				if tt.refuse != nil && st.PlaceRefused == 0 {
					t.Errorf("no chunk refused")
				}
				if st.StoreReads != 400 {
					t.Errorf("%d store reads, want 400: a chunk was read twice or never", st.StoreReads)
				}
				time.Sleep(11 * time.Second) // past the TTL: what was never confirmed expires
				synctest.Wait()
				if st = l.Stats(); st.ReadaheadUsed != 0 || st.PlacedHeld != 0 || st.PlacedRead+st.PlacedExpired != st.Placed {
					t.Errorf("after the TTL: %v; want nothing held, every placed chunk read or expired", st)
				}
			})
		})
	}
}
