package readahead

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// zlibArray parses a v2 array of float64 compressed with zlib.
func zlibArray(t testing.TB, shape, chunks []int) *zarr.Array {
	t.Helper()
	meta := fmt.Sprintf(`{"zarr_format": 2, "shape": %s, "chunks": %s, "dtype": "<f8",
		"compressor": {"id": "zlib", "level": 1}, "filters": null, "fill_value": 0, "order": "C"}`,
		ints(shape), ints(chunks))
	a, err := zarr.ParseV2([]byte(meta))
	if err != nil {
		t.Fatal(err)
	}
	if a.PassThrough != nil {
		t.Fatal(a.PassThrough)
	}
	return a
}

func ints(xs []int) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, x)
	}
	b.WriteByte(']')
	return b.String()
}

// chunkData is the decoded content of chunk i: distinct per chunk, and
// compressible.
func chunkData(a *zarr.Array, i int64) []byte {
	b := make([]byte, a.ChunkLen())
	for j := range b {
		b[j] = byte(int64(j/16)*7 + i*131)
	}
	return b
}

func deflate(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w, _ := zlib.NewWriterLevel(&buf, 1)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// counting is a Store that counts reads per key, of whole values and of
// ranges. When gate is set, every read (of gateKey only, when that is
// set) waits for it to be closed.
type counting struct {
	store.Store // the values: List, Stat and Close are its
	gate        chan struct{}
	gateKey     string

	mu    sync.Mutex
	reads map[string]int
}

func (c *counting) ReadKey(ctx context.Context, key string) ([]byte, error) {
	if err := c.count(ctx, key); err != nil {
		return nil, err
	}
	return c.Store.ReadKey(ctx, key)
}

func (c *counting) ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := c.count(ctx, key); err != nil {
		return nil, err
	}
	return c.Store.ReadKeyRange(ctx, key, off, n)
}

// count counts a read of key, and waits for the gate, if set.
func (c *counting) count(ctx context.Context, key string) error {
	c.mu.Lock()
	c.reads[key]++
	c.mu.Unlock()
	if c.gate != nil && (c.gateKey == "" || c.gateKey == key) {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// most returns the largest number of reads of any one key.
func (c *counting) most() (key string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.reads {
		if v > n {
			key, n = k, v
		}
	}
	return key, n
}

// fixture stores every chunk of a under path, except those edit says to
// leave out (nil) or to store differently.
func fixture(t testing.TB, a *zarr.Array, path string, edit map[int64][]byte) *counting {
	t.Helper()
	m := fstest.MapFS{}
	for i := range a.NumChunks() {
		v, ok := edit[i]
		if !ok {
			v = deflate(t, chunkData(a, i))
		}
		if v != nil {
			m[join(path, a.ChunkKey(a.Coords(i)))] = &fstest.MapFile{Data: v}
		}
	}
	return &counting{Store: store.FS(m), reads: map[string]int{}}
}

func newLoader(t testing.TB, s store.Store, mod func(*Config)) *Loader {
	cfg := Config{
		Store:            s,
		DecodedBudget:    1 << 20,
		CompressedBudget: 1 << 20,
		ReadaheadBudget:  512 << 10,
	}
	if mod != nil {
		mod(&cfg)
	}
	l := New(cfg)
	t.Cleanup(func() { l.Close() })
	return l
}

// readChunk reads chunk i and checks its bytes.
func readChunk(t testing.TB, l *Loader, a *zarr.Array, path string, i int64, pid uint32) error {
	t.Helper()
	v, err := l.Chunk(context.Background(), Ref{Array: a, Path: path, Coords: a.Coords(i), PID: pid})
	if err == nil && !bytes.Equal(v, chunkData(a, i)) {
		t.Fatalf("chunk %d: wrong bytes", i)
	}
	return err
}

func TestLoaderSequential(t *testing.T) {
	decoders := map[string]func(*zarr.Array) Route{
		"loop": nil,
		"pool": func(a *zarr.Array) Route {
			p := codec.NewPool(2)
			t.Cleanup(func() { p.Close() })
			return Route{Decoder: "cpu", Batch: p.Batch(a.Decoder())}
		},
	}
	for name, dec := range decoders {
		t.Run(name, func(t *testing.T) {
			a := zlibArray(t, []int{200 * 512}, []int{512}) // 200 chunks of 4 KiB
			s := fixture(t, a, "group/temp", nil)
			l := newLoader(t, s, func(c *Config) { c.Decoder = dec })
			for i := range a.NumChunks() {
				if err := readChunk(t, l, a, "group/temp", i, 1); err != nil {
					t.Fatalf("chunk %d: %v", i, err)
				}
			}
			st := l.Stats()
			t.Log(st)
			if st.PrefetchUsed < 180 {
				t.Errorf("%d of 200 reads were prefetched, want >= 180", st.PrefetchUsed)
			}
			if k, n := s.most(); n != 1 {
				t.Errorf("%s read %d times from the store, want once", k, n)
			}
			if st.StoreReads != 200 || st.Reads != 200 {
				t.Errorf("%d reads, %d store reads; want 200 each", st.Reads, st.StoreReads)
			}
			if st.ReadaheadPeak > st.ReadaheadBudget || st.ReadaheadPeak == 0 {
				t.Errorf("readahead peak %d, budget %d", st.ReadaheadPeak, st.ReadaheadBudget)
			}
			d := st.Decode[a.Codecs]
			if d.Chunks != 200 || d.Bytes != 200*a.ChunkLen() || d.Batches >= 100 {
				t.Errorf("decode stats %+v: want 200 chunks in batches", d)
			}
		})
	}
}

func TestLoaderStrided(t *testing.T) {
	// A 50×2×2 grid of 8×8×8 chunks, walked along axis 0 for each of the
	// four (j, k): linear steps of 4, then a jump to the next walk.
	a := zlibArray(t, []int{400, 16, 16}, []int{8, 8, 8})
	s := fixture(t, a, "temp", nil)
	l := newLoader(t, s, nil)
	for j := range 2 {
		for k := range 2 {
			for i := range 50 {
				if err := readChunk(t, l, a, "temp", a.Linear([]int{i, j, k}), 7); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	st := l.Stats()
	t.Log(st)
	if st.PrefetchUsed < 180 {
		t.Errorf("%d of 200 reads were prefetched, want >= 180", st.PrefetchUsed)
	}
	if st.Prefetched != st.PrefetchUsed {
		t.Errorf("prefetched %d chunks, used %d: walks end at the grid's end, nothing should be wasted", st.Prefetched, st.PrefetchUsed)
	}
	if _, n := s.most(); n != 1 {
		t.Errorf("a key was read %d times from the store", n)
	}
}

func TestLoaderRandom(t *testing.T) {
	a := zlibArray(t, []int{200 * 512}, []int{512})
	s := fixture(t, a, "temp", nil)
	l := newLoader(t, s, nil)
	r := rand.New(rand.NewPCG(1, 2))
	const reads = 400
	for range reads {
		if err := readChunk(t, l, a, "temp", r.Int64N(a.NumChunks()), 3); err != nil {
			t.Fatal(err)
		}
	}
	st := l.Stats()
	t.Log(st)
	waste := st.PrefetchedBytes - st.PrefetchUsedBytes // expired or still unread
	if read := int64(reads) * a.ChunkLen(); waste*10 > read {
		t.Errorf("prefetched %d bytes nobody read, %.1f%% of %d bytes read; want <= 10%%", waste, 100*float64(waste)/float64(read), read)
	}
}

func TestLoaderInterleaved(t *testing.T) {
	a := zlibArray(t, []int{200 * 512}, []int{512})
	s := fixture(t, a, "temp", nil)
	l := newLoader(t, s, nil)
	var wg sync.WaitGroup
	for pid := range uint32(2) {
		wg.Go(func() { // two processes scanning one half each, at once
			for i := range int64(100) {
				if err := readChunk(t, l, a, "temp", int64(pid)*100+i, 100+pid); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	st := l.Stats()
	t.Log(st)
	if st.PrefetchUsed < 180 {
		t.Errorf("%d of 200 reads were prefetched, want >= 180", st.PrefetchUsed)
	}
}

func TestLoaderCorrupt(t *testing.T) {
	a := zlibArray(t, []int{100 * 512}, []int{512})
	garbage := make([]byte, 300)
	for i := range garbage {
		garbage[i] = byte(i*i*31 + 7)
	}
	s := fixture(t, a, "temp", map[int64][]byte{
		40: garbage,
		60: deflate(t, chunkData(a, 60)[:1000]), // valid zlib, too short
	})
	for _, name := range []string{"prefetched", "read directly"} {
		t.Run(name, func(t *testing.T) {
			l := newLoader(t, s, nil)
			var order []int64
			if name == "prefetched" {
				for i := range int64(100) {
					order = append(order, i)
				}
			} else {
				order = []int64{60, 40, 5, 40}
			}
			for _, i := range order {
				err := readChunk(t, l, a, "temp", i, 1)
				switch {
				case i == 40 || i == 60:
					if !errors.Is(err, codec.ErrCorrupt) {
						t.Errorf("chunk %d: %v, want ErrCorrupt", i, err)
					}
				case err != nil:
					t.Errorf("chunk %d: %v", i, err)
				}
			}
			st := l.Stats()
			if d := st.Decode[a.Codecs]; d.Errors == 0 {
				t.Errorf("no decode errors counted: %+v", d)
			}
		})
	}
}

func TestLoaderMissing(t *testing.T) {
	a := zlibArray(t, []int{100 * 512}, []int{512})
	s := fixture(t, a, "temp", map[int64][]byte{30: nil, 31: nil})
	l := newLoader(t, s, nil)
	for i := range int64(100) {
		err := readChunk(t, l, a, "temp", i, 1)
		if missing := i == 30 || i == 31; missing != errors.Is(err, fs.ErrNotExist) || (!missing && err != nil) {
			t.Errorf("chunk %d: %v", i, err)
		}
	}
	if st := l.Stats(); st.PrefetchErrors != 0 || st.PrefetchUsed < 90 {
		t.Errorf("missing chunks disturbed readahead: %v, %d prefetch errors", st, st.PrefetchErrors)
	}
}

func TestLoaderCompressedTier(t *testing.T) {
	a := zlibArray(t, []int{100 * 512}, []int{512})
	s := fixture(t, a, "", nil)
	// No decoded tier and no readahead: a second read decodes again, but
	// finds the stored value in the compressed tier.
	l := newLoader(t, s, func(c *Config) { c.DecodedBudget, c.ReadaheadBudget = 0, 0 })
	for range 3 {
		if err := readChunk(t, l, a, "", 7, 1); err != nil {
			t.Fatal(err)
		}
	}
	st := l.Stats()
	if s.reads["7"] != 1 || st.StoreReads != 1 || st.CompressedHits != 2 {
		t.Errorf("store reads %v, stats %v: want one store read and 2 compressed hits", s.reads, st)
	}
	if d := st.Decode[a.Codecs]; d.Chunks != 3 {
		t.Errorf("decoded %d times, want 3 (no decoded tier)", d.Chunks)
	}
	// With a decoded tier, the second read decodes nothing.
	l2 := newLoader(t, s, nil)
	for range 2 {
		if err := readChunk(t, l2, a, "", 8, 1); err != nil {
			t.Fatal(err)
		}
	}
	if st := l2.Stats(); st.DecodedHits != 1 || st.Decode[a.Codecs].Chunks != 1 {
		t.Errorf("decoded tier unused: %v", st)
	}
}

func TestLoaderSharedLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := zlibArray(t, []int{100 * 512}, []int{512})
		s := fixture(t, a, "temp", nil)
		s.gate = make(chan struct{})
		l := New(Config{Store: s, DecodedBudget: 1 << 20, CompressedBudget: 1 << 20, ReadaheadBudget: 1 << 20})
		defer l.Close()

		ctx, cancel := context.WithCancel(context.Background())
		var first error
		var wg sync.WaitGroup
		wg.Go(func() { _, first = l.Chunk(ctx, Ref{Array: a, Path: "temp", Coords: []int{9}, PID: 1}) })
		for pid := range uint32(7) {
			wg.Go(func() {
				if err := readChunk(t, l, a, "temp", 9, 2+pid); err != nil {
					t.Error(err)
				}
			})
		}
		synctest.Wait() // all eight readers wait on one store read
		if _, n := s.most(); n != 1 {
			t.Fatalf("%d store reads for one chunk, want 1", n)
		}
		cancel()
		synctest.Wait()
		if !errors.Is(first, context.Canceled) {
			t.Errorf("cancelled reader: %v", first)
		}
		close(s.gate) // the load goes on for the other seven
		wg.Wait()
		if st := l.Stats(); st.StoreReads != 1 || st.Decode[a.Codecs].Chunks != 1 {
			t.Errorf("stats %v: want one store read and one decode", st)
		}
	})
}

// TestLoaderNoCompressedTierReadsOnce: without a compressed tier, a chunk
// a reader is loading is not read from the store again by a prefetch that
// another reader's pattern plans meanwhile.
func TestLoaderNoCompressedTierReadsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := zlibArray(t, []int{100 * 512}, []int{512})
		s := fixture(t, a, "temp", nil)
		s.gate, s.gateKey = make(chan struct{}), "temp/"+a.ChunkKey([]int{9})
		l := New(Config{Store: s, DecodedBudget: 1 << 20, CompressedBudget: 0, ReadaheadBudget: 1 << 20})
		defer l.Close()
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := readChunk(t, l, a, "temp", 9, 1); err != nil {
				t.Error(err)
			}
		})
		synctest.Wait()           // reader 1 waits on the store for chunk 9
		for i := range int64(9) { // reader 2's sequential pattern plans chunk 9
			if err := readChunk(t, l, a, "temp", i, 2); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		s.mu.Lock()
		n := s.reads[s.gateKey]
		s.mu.Unlock()
		if n != 1 {
			t.Errorf("chunk 9 read %d times from the store, want once", n)
		}
		close(s.gate)
		wg.Wait()
		if err := readChunk(t, l, a, "temp", 9, 2); err != nil {
			t.Error(err)
		}
	})
}

// TestLoaderHandedReadOnce: without a compressed tier, a chunk that a
// read handed whole to the page cache (ReadAt let it go from the decoded
// tier) is not read from the store again by a prefetch that a later
// sequential pattern plans over it: the page cache answers its read. Once
// a read of such a chunk reaches the Loader (the kernel let its pages
// go), readahead plans the others again.
func TestLoaderHandedReadOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a := zlibArray(t, []int{100 * 512}, []int{512})
		s := fixture(t, a, "temp", nil)
		l := New(Config{Store: s, DecodedBudget: 1 << 20, CompressedBudget: 0, ReadaheadBudget: 1 << 20})
		defer l.Close()
		readAt := func(i int64, pid uint32) {
			t.Helper()
			p := make([]byte, a.ChunkLen())
			if n, err := l.ReadAt(ctx, Ref{Array: a, Path: "temp", Coords: a.Coords(i), PID: pid}, p, 0); err != nil || !bytes.Equal(p[:n], chunkData(a, i)) {
				t.Fatalf("chunk %d: %d bytes, %v", i, n, err)
			}
		}
		reads := func(i int64) int {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.reads["temp/"+a.ChunkKey(a.Coords(i))]
		}
		readAt(20, 1) // as a reader looks at a value or two before a scan
		readAt(40, 1)
		for i := range int64(20) { // the scan: its readahead plans 20 and beyond
			readAt(i, 1)
			synctest.Wait()
		}
		if n := reads(20); n != 1 {
			t.Errorf("chunk 20 read %d times from the store, want once: the page cache has it", n)
		}
		if n := reads(21); n != 1 {
			t.Errorf("chunk 21 read %d times from the store, want once, by a prefetch", n)
		}
		// The kernel let the pages of 20 go: its read reaches the Loader.
		// Then another reader's scan plans 40.
		readAt(20, 1)
		for i := int64(36); i < 40; i++ {
			readAt(i, 2)
			synctest.Wait()
		}
		if n := reads(40); n != 2 {
			t.Errorf("chunk 40 read %d times from the store, want twice: a prefetch once the kernel let a chunk go", n)
		}
		if st := l.Stats(); st.HandedLost != 1 {
			t.Errorf("HandedLost = %d, want 1", st.HandedLost)
		}
	})
}

func TestLoaderMoveOnRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := zlibArray(t, []int{100 * 512}, []int{512})
		s := fixture(t, a, "temp", nil)
		l := New(Config{Store: s, DecodedBudget: 1 << 20, CompressedBudget: 1 << 20, ReadaheadBudget: 1 << 20, TTL: 10 * time.Second})
		defer l.Close()
		for i := range int64(3) {
			if err := readChunk(t, l, a, "temp", i, 1); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait() // the prefetch of 3 and 4 is done
		key := join("temp", a.ChunkKey([]int{3}))
		if !l.staging.isReady(key) || l.decoded.Has(key) {
			t.Fatalf("chunk 3 not staged (ready %v) or already in the decoded tier", l.staging.isReady(key))
		}
		if err := readChunk(t, l, a, "temp", 3, 1); err != nil {
			t.Fatal(err)
		}
		if l.staging.isReady(key) || !l.decoded.Has(key) {
			t.Errorf("after its first read chunk 3 is still staged, or not in the decoded tier")
		}
		synctest.Wait() // reading 3 topped the plan up with 5, 6, 7
		st := l.Stats()
		if st.PrefetchUsed != 1 || st.PrefetchWaits != 0 || st.Prefetched != 5 || st.StoreReads != 8 {
			t.Errorf("stats %v", st)
		}
		// Chunk 4 and the top-up it triggers were never read: they expire
		// as waste and leave the budget free.
		synctest.Wait()
		time.Sleep(11 * time.Second)
		synctest.Wait()
		st = l.Stats()
		if st.PrefetchWasted != st.Prefetched-1 || st.PrefetchWasted == 0 || st.ReadaheadUsed != 0 {
			t.Errorf("after the TTL: %v; want every unread chunk wasted, none held", st)
		}
		if st.PrefetchWastedBytes != st.PrefetchWasted*a.ChunkLen() {
			t.Errorf("wasted %d bytes in %d chunks", st.PrefetchWastedBytes, st.PrefetchWasted)
		}
	})
}

func TestLoaderBudgetFull(t *testing.T) {
	a := zlibArray(t, []int{200 * 512}, []int{512})
	s := fixture(t, a, "temp", nil)
	// Room for 3 chunks only: the window is cut, prefetch still helps.
	l := newLoader(t, s, func(c *Config) { c.ReadaheadBudget = 3 * a.ChunkLen() })
	for i := range a.NumChunks() {
		if err := readChunk(t, l, a, "temp", i, 1); err != nil {
			t.Fatal(err)
		}
	}
	st := l.Stats()
	t.Log(st)
	if st.ReadaheadPeak > 3*a.ChunkLen() {
		t.Errorf("readahead held %d bytes, budget %d", st.ReadaheadPeak, 3*a.ChunkLen())
	}
	if st.PrefetchUsed < 100 {
		t.Errorf("only %d reads prefetched with a small budget", st.PrefetchUsed)
	}
	if _, n := s.most(); n != 1 {
		t.Errorf("a key was read %d times from the store", n)
	}
}

func TestLoaderRootAndClose(t *testing.T) {
	a := zlibArray(t, []int{10, 10}, []int{5, 5})
	m := fstest.MapFS{}
	for i := range a.NumChunks() {
		m[a.ChunkKey(a.Coords(i))] = &fstest.MapFile{Data: deflate(t, chunkData(a, i))}
	}
	l := New(Config{Store: store.FS(m), ReadaheadBudget: 1 << 20})
	for i := range a.NumChunks() {
		if err := readChunk(t, l, a, "", i, 1); err != nil {
			t.Fatalf("root array chunk %v: %v", a.Coords(i), err)
		}
	}
	l.Close()
	if _, err := l.Chunk(context.Background(), Ref{Array: a, Path: "", Coords: []int{0, 0}, PID: 1}); !errors.Is(err, ErrClosed) {
		t.Errorf("Chunk after Close: %v", err)
	}
	l.Close() // idempotent
}

func TestLoaderPassThrough(t *testing.T) {
	a, err := zarr.ParseV2([]byte(`{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "|O",
		"compressor": null, "filters": [{"id": "vlen-utf8"}], "fill_value": 0, "order": "C"}`))
	if err != nil {
		t.Fatal(err)
	}
	l := newLoader(t, fixture(t, zlibArray(t, []int{4}, []int{2}), "", nil), nil)
	if _, err := l.Chunk(context.Background(), Ref{Array: a, Path: "", Coords: []int{0}, PID: 1}); !errors.Is(err, codec.ErrNotRaw) {
		t.Errorf("Chunk of a pass-through array: %v, want ErrNotRaw", err)
	}
}

func TestStatsSummary(t *testing.T) {
	a := zlibArray(t, []int{10 * 512}, []int{512})
	l := newLoader(t, fixture(t, a, "temp", nil), nil)
	for i := range int64(10) {
		if err := readChunk(t, l, a, "temp", i, 1); err != nil {
			t.Fatal(err)
		}
	}
	st := l.Stats()
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("stats", "readahead", st)
	var got struct {
		Readahead struct { // LogValue's attribute names
			Reads  int64 `json:"reads"`
			Decode map[string]struct {
				Chunks int64 `json:"chunks"`
			} `json:"decode"`
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Readahead.Reads != 10 || got.Readahead.Decode[a.Codecs].Chunks != 10 {
		t.Errorf("logged %s", buf.Bytes())
	}
	if s := st.String(); !strings.Contains(s, a.Codecs) {
		t.Errorf("String() = %q does not name the codec", s)
	}
}

// TestLoaderUncompressed reads an array stored without compressor or
// filters: its stored values are served as they are (sequentially, so
// through prefetch batches too), and a value of the wrong length is an
// error for that chunk only.
func TestLoaderUncompressed(t *testing.T) {
	a, err := zarr.ParseV2([]byte(`{"zarr_format": 2, "shape": [40, 10], "chunks": [5, 5], "dtype": "<f8",
		"compressor": null, "filters": null, "fill_value": 0, "order": "C"}`))
	if err != nil {
		t.Fatal(err)
	}
	m := fstest.MapFS{}
	for i := range a.NumChunks() {
		m[join("raw", a.ChunkKey(a.Coords(i)))] = &fstest.MapFile{Data: chunkData(a, i)}
	}
	short := a.ChunkKey(a.Coords(9))
	m[join("raw", short)].Data = chunkData(a, 9)[1:]
	l := newLoader(t, store.FS(m), nil)
	for i := range a.NumChunks() {
		err := readChunk(t, l, a, "raw", i, 1)
		if (i == 9) != (err != nil) {
			t.Errorf("chunk %d (%s): err = %v", i, a.ChunkKey(a.Coords(i)), err)
		}
		if i == 9 && !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("short chunk: %v, want ErrCorrupt", err)
		}
	}
}

// mutable is a Store whose values a test replaces while a Loader reads it.
// It cannot list.
type mutable struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *mutable) ReadKey(ctx context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[key]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: key, Err: fs.ErrNotExist}
	}
	return bytes.Clone(b), nil
}

func (s *mutable) ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := store.CheckRange(key, off, n); err != nil {
		return nil, err
	}
	b, err := s.ReadKey(ctx, key)
	if err != nil {
		return nil, err
	}
	return b[min(off, int64(len(b))):min(off+n, int64(len(b)))], nil
}

func (s *mutable) Stat(ctx context.Context, key string) (store.Entry, error) {
	b, err := s.ReadKey(ctx, key)
	return store.Entry{Name: path.Base(key), Size: int64(len(b))}, err
}

func (s *mutable) List(ctx context.Context, dir string) ([]store.Entry, error) {
	return nil, &fs.PathError{Op: "list", Path: dir, Err: store.ErrNotSupported}
}

func (s *mutable) Close() error { return nil }

func (s *mutable) set(key string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = b
}

// TestLoaderForget: a chunk whose stored value changed is served as it
// was from every tier that holds it, until Forget; then the next read
// loads the new value.
func TestLoaderForget(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		pin  bool // without Forget, the old value is still served
	}{
		{"decoded tier", func(c *Config) { c.CompressedBudget, c.ReadaheadBudget = 0, 0 }, true},
		{"compressed tier", func(c *Config) { c.DecodedBudget, c.ReadaheadBudget = 0, 0 }, true},
		{"every tier and readahead", nil, true},
		{"no tier", func(c *Config) { c.DecodedBudget, c.CompressedBudget, c.ReadaheadBudget = 0, 0, 0 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := zlibArray(t, []int{16 * 512}, []int{512})
			s := &mutable{m: map[string][]byte{}}
			for i := range a.NumChunks() {
				s.set(a.ChunkKey(a.Coords(i)), deflate(t, chunkData(a, i)))
			}
			l := newLoader(t, s, tc.cfg)
			read := func(i int64) []byte {
				t.Helper()
				v, err := l.Chunk(t.Context(), Ref{Array: a, Path: "", Coords: a.Coords(i), PID: 1})
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			for i := range int64(4) { // sequential: readahead stages the next ones
				read(i)
			}
			old, new := chunkData(a, 3), chunkData(a, 99)
			s.set(a.ChunkKey(a.Coords(3)), deflate(t, new))
			if got := read(3); tc.pin && !bytes.Equal(got, old) {
				t.Errorf("before Forget: not the chunk as first read")
			}
			l.Forget(Ref{Array: a, Path: "", Coords: a.Coords(3)})
			if got := read(3); !bytes.Equal(got, new) {
				t.Errorf("after Forget: not the new chunk")
			}
			// A prefetched chunk, not read yet, is forgotten too.
			s.set(a.ChunkKey(a.Coords(5)), deflate(t, new))
			l.Forget(Ref{Array: a, Path: "", Coords: a.Coords(5)})
			if got := read(5); !bytes.Equal(got, new) {
				t.Errorf("prefetched chunk after Forget: not the new chunk")
			}
			if st := l.Stats(); st.Forgotten != 2 {
				t.Errorf("Forgotten = %d, want 2", st.Forgotten)
			}
		})
	}
}

// TestLoaderArrayGrown: a reader of an array whose metadata was read again
// with a grown shape (zfuse --refresh; a new *zarr.Array at the same path)
// reads its new chunks, out of any pattern, as well as the old ones.
func TestLoaderArrayGrown(t *testing.T) {
	small, grown := zlibArray(t, []int{6 * 512}, []int{512}), zlibArray(t, []int{9 * 512}, []int{512})
	s := fixture(t, grown, "x", nil)
	l := newLoader(t, s, nil)
	for _, tc := range []struct {
		a     *zarr.Array
		reads []int64
	}{
		{small, []int64{5, 0, 3, 1, 4}}, // no pattern: the name order of small is computed
		{grown, []int64{8, 2, 6, 0, 7}},
	} {
		for _, i := range tc.reads {
			if err := readChunk(t, l, tc.a, "x", i, 1); err != nil {
				t.Fatalf("chunk %d of %d: %v", i, tc.a.NumChunks(), err)
			}
		}
	}
}

// TestLoaderServed: Config.Served is told of every read for a reader
// (ReadAt, ReadPieces, Open) with the bytes handed out and the error, a
// missing chunk's too; Chunk, the decoder's own reads, are not reads for
// a reader.
func TestLoaderServed(t *testing.T) {
	a := zlibArray(t, []int{4 * 512}, []int{512})
	s := fixture(t, a, "temp", map[int64][]byte{3: nil})
	var mu sync.Mutex
	var served int64
	var errs []error
	l := newLoader(t, s, func(c *Config) {
		c.Served = func(n int64, err error) {
			mu.Lock()
			defer mu.Unlock()
			served += n
			if err != nil {
				errs = append(errs, err)
			}
		}
	})
	ctx := context.Background()
	ref := func(i int64) Ref { return Ref{Array: a, Path: "temp", Coords: a.Coords(i), PID: 1} }
	p := make([]byte, 100)
	if n, err := l.ReadAt(ctx, ref(0), p, 10); n != 100 || err != nil {
		t.Fatalf("ReadAt: %d, %v", n, err)
	}
	if _, err := l.ReadPieces(ctx, ref(1), p, []zarr.Piece{{Off: 0, N: 30, At: 0}}); err != nil {
		t.Fatal(err)
	}
	f, err := l.Open(ctx, ref(2))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := l.ReadAt(ctx, ref(3), p, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing chunk: %v", err)
	}
	if _, err := l.Chunk(ctx, ref(0)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := int64(100 + 30 + a.ChunkLen()); served != want || len(errs) != 1 || !errors.Is(errs[0], fs.ErrNotExist) {
		t.Errorf("served %d bytes (want %d), errors %v (want the missing chunk's)", served, want, errs)
	}
}
