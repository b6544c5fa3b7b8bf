package readahead

import (
	"context"
	"runtime"
	"testing"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/zarr"
)

// TestReadAllocs: a sequential reader of prefetched chunks, as a cold scan
// of a mount is, costs the garbage collector next to nothing in steady
// state: stored values and decoded chunks are read into, and decoded
// into, buffers used again, so the bytes allocated per chunk are a tiny
// fraction of the chunk (they were its stored size at least: a fresh stored
// value for every chunk).
func TestReadAllocs(t *testing.T) {
	a, s := benchStore(t, 1024, 1<<14, true) // 64 KiB chunks, ~35 KiB stored
	pool := codec.NewPool(2)
	t.Cleanup(func() { pool.Close() })
	l := New(Config{Store: s, Decoder: func(a *zarr.Array) Route { return Route{Decoder: "cpu", Batch: pool.Batch(a.Decoder())} },
		DecodedBudget: 8 << 20, ReadaheadBudget: 4 << 20})
	t.Cleanup(func() { l.Close() })
	ctx := context.Background()
	buf := make([]byte, a.ChunkLen())
	var i int64
	read := func() {
		n, err := l.ReadAt(ctx, Ref{Array: a, Path: "", Coords: a.Coords(i), PID: 1}, buf, 0)
		if err != nil || int64(n) != a.ChunkLen() {
			t.Fatalf("chunk %d: %d bytes, %v", i, n, err)
		}
		i++
	}
	for range 512 { // the pools fill, the window grows to its widest
		read()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	allocs := testing.AllocsPerRun(256, read)
	runtime.ReadMemStats(&after)
	perChunk := float64(after.TotalAlloc-before.TotalAlloc) / 257
	t.Logf("per 64 KiB chunk: %.1f allocations, %.0f bytes", allocs, perChunk)
	if st := l.Stats(); st.PrefetchUsed < 200 {
		t.Fatalf("only %d of the reads were prefetched: the test measures no steady state", st.PrefetchUsed)
	}
	// Measured: 3-5 KB (4-12 KB under -race, where scheduling spreads the
	// decodes and a pool now and then runs dry), against ~97 KB before.
	if perChunk > float64(a.ChunkLen())/4 {
		t.Errorf("%.0f bytes allocated per chunk of %d, want at most 1/4 of it", perChunk, a.ChunkLen())
	}
}
