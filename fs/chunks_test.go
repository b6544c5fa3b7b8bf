package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/fstest"
	"testing/synctest"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// gateStore counts reads and holds each one until gate is closed.
type gateStore struct {
	store.Store
	gate  chan struct{}
	reads atomic.Int32
}

func (g *gateStore) ReadKey(ctx context.Context, key string) ([]byte, error) {
	g.reads.Add(1)
	<-g.gate
	return g.Store.ReadKey(ctx, key)
}

// cacheFixture is a 1-D <i4 array of 5 chunks of 8 elements under "a",
// zlib-compressed: chunk 3 is corrupt and chunk 4 missing.
func cacheFixture(t *testing.T) (*zarr.Array, fstest.MapFS, map[string][]byte) {
	a := testArray{path: "a", shape: []int{40}, chunks: []int{8}, dtype: "<i4", order: "C", sep: ".",
		value: func(i []int) float64 { return float64(i[0] * 3) }}
	arr, err := zarr.ParseV2(a.zarray(`{"id": "zlib", "level": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	fsys, raw := fstest.MapFS{}, map[string][]byte{}
	for i := range 4 {
		key := fmt.Sprintf("a/%d", i)
		raw[key] = a.chunk([]int{i})
		fsys[key] = &fstest.MapFile{Data: zlibBytes(t, raw[key])}
	}
	fsys["a/3"] = &fstest.MapFile{Data: []byte("garbage")}
	return arr, fsys, raw
}

func TestDecodedCacheOneLoad(t *testing.T) {
	arr, fsys, raw := cacheFixture(t)
	synctest.Test(t, func(t *testing.T) {
		gs := &gateStore{Store: store.FS(fsys), gate: make(chan struct{})}
		c := NewDecodedCache(gs, 1<<20, 2)
		defer c.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		results := make([][]byte, 8)
		errs := make([]error, 8)
		for i := range 8 {
			rctx := context.Background()
			if i == 0 {
				rctx = ctx // the first reader starts the load, then leaves
			}
			wg.Go(func() { results[i], errs[i] = c.Chunk(rctx, arr, "a", []int{1}, 0) })
			synctest.Wait()
		}
		if n := gs.reads.Load(); n != 1 {
			t.Fatalf("%d store reads for 8 readers of one chunk, want 1", n)
		}
		cancel()
		synctest.Wait()
		if !errors.Is(errs[0], context.Canceled) {
			t.Errorf("canceled reader: %v", errs[0])
		}
		close(gs.gate)
		wg.Wait()
		for i := 1; i < 8; i++ {
			if errs[i] != nil || !bytes.Equal(results[i], raw["a/1"]) {
				t.Errorf("reader %d: %x, %v", i, results[i], errs[i])
			}
		}
		if b, err := c.Chunk(context.Background(), arr, "a", []int{1}, 0); err != nil || !bytes.Equal(b, raw["a/1"]) {
			t.Errorf("cached read: %x, %v", b, err)
		}
		if n := gs.reads.Load(); n != 1 {
			t.Errorf("%d store reads after a cached read, want 1", n)
		}
	})
}

func TestDecodedCacheBudget(t *testing.T) {
	arr, fsys, raw := cacheFixture(t)
	gs := &gateStore{Store: store.FS(fsys), gate: make(chan struct{})}
	close(gs.gate)
	n := arr.ChunkLen()
	c := NewDecodedCache(gs, 2*n, 1)
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	read := func(key string, coord int) {
		t.Helper()
		b, err := c.Chunk(ctx, arr, "a", []int{coord}, 0)
		if err != nil || !bytes.Equal(b, raw[key]) {
			t.Fatalf("%s: %x, %v", key, b, err)
		}
	}
	read("a/0", 0)
	read("a/1", 1)
	read("a/0", 0) // a/0 is now the most recently used
	read("a/2", 2) // evicts a/1
	if used := c.Used(); used != 2*n {
		t.Errorf("used %d, want %d", used, 2*n)
	}
	before := gs.reads.Load()
	read("a/0", 0)
	if gs.reads.Load() != before {
		t.Errorf("a/0 was evicted; want the least recently used (a/1) gone")
	}
	read("a/1", 1)
	if gs.reads.Load() != before+1 {
		t.Errorf("a/1 was still cached")
	}
	// A corrupt chunk fails with the key and a codec error, and is not kept.
	_, err := c.Chunk(ctx, arr, "a", []int{3}, 0)
	if !errors.Is(err, codec.ErrCorrupt) || !strings.Contains(err.Error(), "a/3") {
		t.Errorf("a/3: %v, want codec.ErrCorrupt naming the key", err)
	}
	if _, err := c.Chunk(ctx, arr, "a", []int{4}, 0); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("missing chunk: %v, want ErrNotExist", err)
	}
	if c.Used() != 2*n {
		t.Errorf("failed loads changed the cache: used %d", c.Used())
	}
	// Larger than the whole budget: served, not kept.
	small := NewDecodedCache(gs, n-1, 1)
	t.Cleanup(func() { small.Close() })
	if b, err := small.Chunk(ctx, arr, "a", []int{0}, 0); err != nil || !bytes.Equal(b, raw["a/0"]) || small.Used() != 0 {
		t.Errorf("oversized chunk: %x, %v, used %d", b, err, small.Used())
	}
}

func TestErrno(t *testing.T) {
	ctx := context.Background()
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	for _, r := range []struct {
		err    error
		want   syscall.Errno
		logged string
	}{
		{nil, 0, ""},
		{fmt.Errorf("read x: %w", context.Canceled), syscall.EINTR, ""},
		{&iofs.PathError{Op: "open", Path: "x", Err: iofs.ErrNotExist}, syscall.ENOENT, ""},
		{fmt.Errorf("x: %w", store.ErrOutside), syscall.EACCES, "WARN"},
		{&iofs.PathError{Op: "read", Path: "x", Err: syscall.ENOTDIR}, syscall.ENOTDIR, ""},
		{fmt.Errorf("decode a/3: %w", codec.ErrCorrupt), syscall.EIO, "ERROR"},
		{errors.New("anything else"), syscall.EIO, "ERROR"},
	} {
		logs.buf.Reset()
		if got := errno(ctx, log, "read", "a/3", r.err); got != r.want {
			t.Errorf("errno(%v) = %v, want %v", r.err, got, r.want)
		}
		l := logs.String()
		if r.logged == "" && l != "" || r.logged != "" && !(bytes.Contains([]byte(l), []byte("level="+r.logged)) && bytes.Contains([]byte(l), []byte("key=a/3"))) {
			t.Errorf("errno(%v) logged %q, want level %q with the key", r.err, l, r.logged)
		}
	}
}
