package fs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// recorder is a Chunks that remembers every call and serves from c.
type recorder struct {
	c Chunks

	mu    sync.Mutex
	calls []chunkCall
}

type chunkCall struct {
	path   string
	coords string
	pid    uint32
}

func (r *recorder) Chunk(ctx context.Context, a *zarr.Array, path string, coords []int, pid uint32) ([]byte, error) {
	r.mu.Lock()
	r.calls = append(r.calls, chunkCall{path, a.ChunkKey(coords), pid})
	r.mu.Unlock()
	return r.c.Chunk(ctx, a, path, coords, pid)
}

func (r *recorder) take() []chunkCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

func TestTgids(t *testing.T) {
	var g tgids
	// A thread of this process, other than the main one.
	tids := make(chan int)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- syscall.Gettid()
	}()
	tid := <-tids
	for _, r := range []struct {
		name string
		tid  uint32
		want uint32
	}{
		{"no caller", 0, 0},
		{"main thread", uint32(os.Getpid()), uint32(os.Getpid())},
		{"another thread", uint32(tid), uint32(os.Getpid())},
		{"again, from the map", uint32(tid), uint32(os.Getpid())},
		{"unknown thread", 1<<22 + 12345, 1<<22 + 12345}, // above pid_max's largest value
	} {
		if got := g.of(r.tid); got != r.want {
			t.Errorf("%s: of(%d) = %d, want %d", r.name, r.tid, got, r.want)
		}
	}
}

// TestChunkReads checks what the mount asks of Chunks: the array's store
// directory ("" for a root array), the chunk, the reading process; one call
// per open however many FUSE reads the open makes (O_DIRECT reads of a few
// bytes each), and none when the page cache still holds the file.
func TestChunkReads(t *testing.T) {
	s := newTestStore(t)
	// A second store whose root is an array.
	root := testArray{shape: []int{6, 4}, chunks: []int{4, 4}, dtype: "<i4", order: "C", sep: ".",
		value: func(i []int) float64 { return float64(i[0]*10 + i[1]) }}
	rs := &testStore{root: t.TempDir(), stored: map[string][]byte{}, raw: map[string][]byte{}}
	rs.write(t, ".zarray", root.zarray(`{"id": "zlib", "level": 1}`))
	for i := range 2 {
		raw := root.chunk([]int{i, 0})
		rs.write(t, string(rune('0'+i))+".0", zlibBytes(t, raw))
		rs.raw[string(rune('0'+i))+".0"] = raw
	}
	for _, c := range []struct {
		s    *testStore
		key  string
		path string // as Chunks must get it
	}{
		{s, "temp/1.2", "temp"},
		{s, "group/nested/1/0", "group/nested"},
		{s, "legacy/1/1", "legacy"},
		{rs, "1.0", ""},
	} {
		t.Run(c.key, func(t *testing.T) {
			ds, err := store.Dir(c.s.root)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ds.Close() })
			dc := NewDecodedCache(ds, 1<<20, 2)
			t.Cleanup(func() { dc.Close() })
			rec := &recorder{c: dc}
			mnt := mountTree(t, New(Config{Store: ds, Chunks: rec}), false)
			want := c.s.raw[c.key]
			p := filepath.Join(mnt, filepath.FromSlash(c.key))

			f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			buf := make([]byte, 5)
			for {
				n, err := f.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			f.Close()
			if !bytes.Equal(got, want) {
				t.Fatalf("O_DIRECT reads: %x, want %x", got, want)
			}
			calls := rec.take()
			wantCall := chunkCall{c.path, c.key[len(c.path):], uint32(os.Getpid())}
			if c.path != "" {
				wantCall.coords = c.key[len(c.path)+1:]
			}
			if len(got) > len(buf) && !slices.Equal(calls, []chunkCall{wantCall}) {
				t.Errorf("%d FUSE reads of one open made calls %v, want one: %v", len(got)/len(buf), calls, wantCall)
			}

			for i := range 2 { // buffered: the second open is served by the page cache
				if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("read %d: %x, %v", i, got, err)
				}
				if calls := rec.take(); len(calls) != 1-i {
					t.Errorf("buffered open %d made calls %v, want %d", i, calls, 1-i)
				}
			}
		})
	}
}

func TestMountDevice(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/x\134y`: `/x\y`, `/plain`: "/plain", `/odd\04`: `/odd\04`} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
	s := newTestStore(t)
	tr, _ := newTestTree(t, s)
	mnt := mountTree(t, tr, false)
	dev, err := mountDevice(mnt)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(mnt, "README.txt"), &st); err != nil {
		t.Fatal(err)
	}
	d := uint64(st.Dev)
	if want := fmt.Sprintf("%d:%d", (d>>8)&0xfff|(d>>32)&^0xfff, d&0xff|(d>>12)&^0xff); dev != want {
		t.Errorf("mountDevice = %s, files in the mount have st_dev %s", dev, want)
	}
	if _, err := mountDevice(t.TempDir()); err == nil {
		t.Errorf("mountDevice of a plain directory: no error")
	}
}
