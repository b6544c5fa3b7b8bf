package readahead

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// readFile reads all of f and checks it against chunk i.
func readFile(t testing.TB, f *File, a *zarr.Array, i int64) {
	t.Helper()
	b := make([]byte, f.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("chunk %d: %v", i, err)
	}
	if !bytes.Equal(b, chunkData(a, i)) {
		t.Fatalf("chunk %d: wrong bytes", i)
	}
}

// TestLoaderFiles opens every chunk of a sequential scan as a file (the
// passthrough path): each is a memfd holding the decoded chunk, readahead
// decodes into memfds ahead of the reader, and once every file is closed
// and the Loader too, no memfd is left.
func TestLoaderFiles(t *testing.T) {
	a := zlibArray(t, []int{100 * 512}, []int{512})
	s := fixture(t, a, "temp", nil)
	l := newLoader(t, s, func(c *Config) { c.Files = true; c.DecodedBudget = 8 * a.ChunkLen() })
	var files []*File
	for i := range a.NumChunks() {
		f, err := l.Open(context.Background(), Ref{Array: a, Path: "temp", Coords: a.Coords(i), PID: 1})
		if err != nil {
			t.Fatal(err)
		}
		if f.Fd() < 0 {
			t.Fatalf("chunk %d: no file descriptor", i)
		}
		readFile(t, f, a, i)
		files = append(files, f)
	}
	st := l.Stats()
	if st.PrefetchUsed < 90 || st.Memfds != a.NumChunks()+st.ReadaheadUsed/a.ChunkLen() {
		t.Errorf("stats %v: want prefetched memfds, one per open file plus staged ones", st)
	}
	if st.DecodedUsed > 8*a.ChunkLen() {
		t.Errorf("decoded tier holds %d bytes, budget %d", st.DecodedUsed, 8*a.ChunkLen())
	}
	// Evicted from the tier but open: still readable.
	readFile(t, files[0], a, 0)
	for _, f := range files {
		f.Close()
		f.Close() // idempotent
	}
	if st := l.Stats(); st.Memfds != 8+st.ReadaheadUsed/a.ChunkLen() {
		t.Errorf("after closing every file: %d memfds, want the 8 the tier keeps and the staged ones: %v", st.Memfds, st)
	}
	l.Close()
	if st := l.Stats(); st.Memfds != 0 || st.MemfdBytes != 0 {
		t.Errorf("after Close: %d memfds (%d bytes) left", st.Memfds, st.MemfdBytes)
	}
}

// TestLoaderFilesConcurrent opens, reads and closes chunks from many
// goroutines at once with budgets of a few chunks, so that files are
// evicted while others acquire them: every read is right, and nothing
// leaks.
func TestLoaderFilesConcurrent(t *testing.T) {
	a := zlibArray(t, []int{64 * 512}, []int{512})
	s := fixture(t, a, "temp", nil)
	l := newLoader(t, s, func(c *Config) {
		c.Files = true
		c.DecodedBudget = 2 * a.ChunkLen()
		c.ReadaheadBudget = 3 * a.ChunkLen()
		c.MaxFiles = 2
	})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 3))
			for k := range 200 {
				i := int64(k) % a.NumChunks()
				if r.IntN(2) == 0 {
					i = r.Int64N(a.NumChunks())
				}
				if r.IntN(4) == 0 {
					if err := readChunk(t, l, a, "temp", i, uint32(w)); err != nil {
						t.Error(err)
					}
					continue
				}
				f, err := l.Open(context.Background(), Ref{Array: a, Path: "temp", Coords: a.Coords(i), PID: uint32(w)})
				if err != nil {
					t.Error(err)
					return
				}
				readFile(t, f, a, i)
				f.Close()
			}
		})
	}
	wg.Wait()
	l.Close()
	if st := l.Stats(); st.Memfds != 0 {
		t.Errorf("after Close: %d memfds left: %v", st.Memfds, st)
	}
}

// TestLoaderFilesExpire: prefetched memfds that nobody reads are closed
// when their TTL passes.
func TestLoaderFilesExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := zlibArray(t, []int{100 * 512}, []int{512})
		s := fixture(t, a, "temp", nil)
		l := New(Config{Store: s, Files: true, DecodedBudget: 1 << 20, ReadaheadBudget: 1 << 20, TTL: 10 * time.Second})
		defer l.Close()
		for i := range int64(3) {
			f, err := l.Open(context.Background(), Ref{Array: a, Path: "temp", Coords: a.Coords(i), PID: 1})
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		synctest.Wait()
		st := l.Stats()
		if st.Prefetched == 0 || st.Memfds != 3+st.Prefetched {
			t.Fatalf("stats %v: want 3 kept and the prefetched ones", st)
		}
		time.Sleep(11 * time.Second)
		synctest.Wait()
		if st := l.Stats(); st.Memfds != 3 || st.PrefetchWasted == 0 {
			t.Errorf("after the TTL: %v; want the staged memfds closed", st)
		}
	})
}

// TestLoaderReadDrops: ReadAt hands out a chunk in pieces, as the kernel's
// READs do, and the decoded tier lets it go once all of it has been handed
// out (the page cache has it then); Chunk keeps it.
func TestLoaderReadDrops(t *testing.T) {
	a := zlibArray(t, []int{10 * 512}, []int{512}) // 4 KiB chunks
	s := fixture(t, a, "temp", nil)
	l := newLoader(t, s, func(c *Config) { c.ReadaheadBudget = 0 })
	ctx := context.Background()
	n := a.ChunkLen()
	var got []byte
	for off := int64(0); off < n; off += 1000 {
		b := make([]byte, 1000)
		k, err := l.ReadAt(ctx, Ref{Array: a, Path: "temp", Coords: []int{4}, PID: 1}, b, off)
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		got = append(got, b[:k]...)
		key := join("temp", a.ChunkKey([]int{4}))
		if held := l.decoded.Has(key); held != (off+1000 < n) {
			t.Errorf("after %d of %d bytes, decoded tier holds the chunk: %v", off+int64(k), n, held)
		}
	}
	if !bytes.Equal(got, chunkData(a, 4)) {
		t.Fatal("Read pieces differ from the chunk")
	}
	if st := l.Stats(); st.ServedDrops != 1 || st.Decode[a.Codecs].Chunks != 1 || st.DecodedUsed != 0 {
		t.Errorf("stats %v: want one decode and one drop", st)
	}
	if k, err := l.ReadAt(ctx, Ref{Array: a, Path: "temp", Coords: []int{4}, PID: 1}, make([]byte, 100), n); !errors.Is(err, io.EOF) || k != 0 {
		t.Errorf("read past the end: %d bytes, %v", k, err)
	}
	if err := readChunk(t, l, a, "temp", 5, 1); err != nil {
		t.Fatal(err)
	}
	if !l.decoded.Has(join("temp", a.ChunkKey([]int{5}))) {
		t.Error("Chunk did not keep the chunk")
	}
}

// TestLoaderNameOrder reads a 2-D array's chunks in the order a walk of
// its directory in listing order meets them ("0.0", "0.1", "0.10", ...):
// no pattern in grid order, a sequential one in name order, so readahead
// serves almost every read. A random order gets no prefetch.
func TestLoaderNameOrder(t *testing.T) {
	a := zlibArray(t, []int{4 * 64, 25 * 64}, []int{64, 64}) // a 4x25 grid of 32 KiB chunks
	s := fixture(t, a, "temp", nil)
	l := newLoader(t, s, func(c *Config) { c.ReadaheadBudget = 16 * a.ChunkLen() })
	var names []string
	for i := range a.NumChunks() {
		names = append(names, a.ChunkKey(a.Coords(i)))
	}
	slices.Sort(names)
	if strings.Join(names[:4], " ") != "0.0 0.1 0.10 0.11" {
		t.Fatalf("listing order starts %v", names[:4])
	}
	for _, name := range names {
		c, ok := a.ParseChunkKey(name)
		if !ok {
			t.Fatal(name)
		}
		if err := readChunk(t, l, a, "temp", a.Linear(c), 1); err != nil {
			t.Fatal(err)
		}
	}
	st := l.Stats()
	t.Log(st)
	if st.PrefetchUsed < 90 || st.PrefetchWasted != 0 {
		t.Errorf("a walk in listing order: %d of 100 reads prefetched, %d wasted; want >= 90, 0", st.PrefetchUsed, st.PrefetchWasted)
	}

	l2 := newLoader(t, s, nil)
	for _, i := range rand.New(rand.NewPCG(5, 5)).Perm(int(a.NumChunks())) {
		if err := readChunk(t, l2, a, "temp", int64(i), 1); err != nil {
			t.Fatal(err)
		}
	}
	if st := l2.Stats(); st.Prefetched > 10 {
		t.Errorf("random order prefetched %d chunks", st.Prefetched)
	}
}

// TestLoaderStoredFiles: with Files, a chunk stored uncompressed in a
// local store is opened as its stored file (nothing decoded, nothing
// prefetched), and a stored file of the wrong size is a corrupt chunk.
func TestLoaderStoredFiles(t *testing.T) {
	a, err := zarr.ParseV2([]byte(`{"zarr_format": 2, "shape": [40, 10], "chunks": [5, 5], "dtype": "<f8",
		"compressor": null, "filters": null, "fill_value": 0, "order": "C", "dimension_separator": "."}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "raw"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range a.NumChunks() {
		b := chunkData(a, i)
		if i == 9 {
			b = b[1:]
		}
		if err := os.WriteFile(filepath.Join(dir, "raw", a.ChunkKey(a.Coords(i))), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := store.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	l := newLoader(t, ds, func(c *Config) { c.Files = true })
	for i := range a.NumChunks() {
		f, err := l.Open(context.Background(), Ref{Array: a, Path: "raw", Coords: a.Coords(i), PID: 1})
		if i == 9 {
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Errorf("short stored chunk: %v, want ErrCorrupt", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		readFile(t, f, a, i)
		f.Close()
	}
	st := l.Stats()
	if st.StoredOpens != a.NumChunks()-1 || st.Prefetched != 0 || st.Memfds != 0 {
		t.Errorf("stats %v: want every chunk but the short one opened as stored, no prefetch, no memfd", st)
	}
}
