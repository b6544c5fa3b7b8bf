package fusemount

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/tree"
)

// recorder is a tree.Chunks that remembers every call and serves from c.
type recorder struct {
	tree.Chunks

	mu    sync.Mutex
	calls []chunkCall
}

type chunkCall struct {
	op     string // "read" or "open"
	path   string
	coords string
	pid    uint32
}

func (r *recorder) record(op string, c readahead.Ref) {
	r.mu.Lock()
	r.calls = append(r.calls, chunkCall{op, c.Path, c.Array.ChunkKey(c.Coords), c.PID})
	r.mu.Unlock()
}

func (r *recorder) ReadAt(ctx context.Context, c readahead.Ref, p []byte, off int64) (int, error) {
	r.record("read", c)
	return r.Chunks.ReadAt(ctx, c, p, off)
}

func (r *recorder) Open(ctx context.Context, c readahead.Ref) (*readahead.File, error) {
	r.record("open", c)
	return r.Chunks.Open(ctx, c)
}

// take returns the calls since the last take, and how many of each op.
func (r *recorder) take() (calls []chunkCall, reads, opens int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls, r.calls = r.calls, nil
	for _, c := range calls {
		if c.op == "read" {
			reads++
		} else {
			opens++
		}
	}
	return calls, reads, opens
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

// TestChunkReads checks what the mount asks of tree.Chunks on each serving
// path: the array's store directory ("" for a root array), the chunk, the
// reading process; a chunk decoded once however many FUSE reads one open
// makes (O_DIRECT reads of a few bytes each); and what reaches the daemon
// for buffered opens: under passthrough an open and no READ (the kernel
// reads the backing file, named in the OPEN reply), under no-open one READ
// and then nothing at all (no OPEN after the first, the page cache serves),
// under open an OPEN each time and a READ only the first time.
func TestChunkReads(t *testing.T) {
	s := testutil.NewV2Store(t)
	// A second store whose root is an array.
	root := testutil.V2Array{Shape: []int{6, 4}, Chunks: []int{4, 4}, DType: "<i4", Order: "C", Sep: ".",
		Value: func(i []int) float64 { return float64(i[0]*10 + i[1]) }}
	rs := testutil.EmptyV2Store(t)
	rs.Write(t, ".zarray", root.Zarray(`{"id": "zlib", "level": 1}`))
	for i := range 2 {
		raw := root.Chunk([]int{i, 0})
		rs.Write(t, string(rune('0'+i))+".0", testutil.ZlibBytes(t, raw))
		rs.Raw[string(rune('0'+i))+".0"] = raw
	}
	servings(t, func(t *testing.T, serving Serving) {
		for _, c := range []struct {
			s    *testutil.V2Store
			key  string
			path string // as tree.Chunks must get it
		}{
			{s, "temp/1.2", "temp"},
			{s, "group/nested/1/0", "group/nested"},
			{s, "legacy/1/1", "legacy"},
			{rs, "1.0", ""},
		} {
			t.Run(c.key, func(t *testing.T) { checkChunkReads(t, serving, c.s, c.key, c.path) })
		}
	})
}

func checkChunkReads(t *testing.T, serving Serving, s *testutil.V2Store, key, path string) {
	ds, err := store.Dir(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	var logs testutil.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	loader := testLoader(t, ds, nil)
	rec := &recorder{Chunks: loader}
	mnt, srv := mountServing(t, tree.New(tree.Config{Store: ds, Chunks: rec, Log: log}), false, serving, true)
	want := s.Raw[key]
	p := filepath.Join(mnt, filepath.FromSlash(key))
	wantCall := chunkCall{path: path, coords: key[len(path):], pid: uint32(os.Getpid())}
	if path != "" {
		wantCall.coords = key[len(path)+1:]
	}
	decodes := func() int64 {
		var n int64
		for _, d := range loader.Stats().Decode {
			n += d.Chunks
		}
		return n
	}

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
	calls, reads, opens := rec.take()
	for _, c := range calls {
		if c.path != wantCall.path || c.coords != wantCall.coords || c.pid != wantCall.pid {
			t.Errorf("call %+v, want path %q, chunk %q, pid %d", c, wantCall.path, wantCall.coords, wantCall.pid)
		}
	}
	if d := decodes(); d != 1 {
		t.Errorf("%d FUSE reads of one O_DIRECT open decoded the chunk %d times, want once", len(got)/len(buf)+1, d)
	}
	if serving == Passthrough && (opens != 0 || reads == 0) {
		t.Errorf("O_DIRECT open under passthrough: %d opens and %d reads of tree.Chunks, want no open (no handle: see TestPassthroughDirectRelease) and reads", opens, reads)
	}

	before := srv.Stats()
	for i := range 2 {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("buffered read %d: %x, %v", i, got, err)
		}
		if serving == Passthrough {
			// The kernel sends RELEASE after close returns: an open
			// before it is done shares the first open's chunk file.
			waitReleased(t, srv)
		}
		_, reads, opens := rec.take()
		st := srv.Stats()
		daemonReads, daemonOpens := st.ChunkReads-before.ChunkReads, st.Opens-before.Opens
		before = st
		switch serving {
		case Passthrough:
			if opens != 1 || reads != 0 || daemonReads != 0 {
				t.Errorf("buffered open %d: %d opens and %d reads of tree.Chunks, %d READs reached the daemon; want 1 open and no read", i, opens, reads, daemonReads)
			}
		case NoOpen, Open:
			if want := 1 - i; reads != want || daemonReads != int64(want) || opens != 0 {
				t.Errorf("buffered open %d: %d reads of tree.Chunks, %d READs reached the daemon, %d opens; want %d reads, no opens", i, reads, daemonReads, opens, want)
			}
			if wantOpens := int64(0); serving == Open && daemonOpens != 1 || serving == NoOpen && daemonOpens != wantOpens {
				t.Errorf("buffered open %d under %v: %d OPENs reached the daemon", i, serving, daemonOpens)
			}
		}
	}
	if serving == Passthrough && !strings.Contains(logs.String(), "backing=") {
		t.Errorf("no OPEN reply names a backing file:\n%s", logs.String())
	}
}

// waitReleased waits until every chunk file opened with a handle in srv
// has been released.
func waitReleased(t *testing.T, srv *Server) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); srv.Stats().OpenFiles != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d chunk files still open 10 s after their last close", srv.Stats().OpenFiles)
		}
	}
}

func TestMountDevice(t *testing.T) {
	s := testutil.NewV2Store(t)
	tr, _, _ := newTestTree(t, s.Root)
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
