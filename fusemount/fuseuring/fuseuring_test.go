package fuseuring

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/internal/testutil"
)

// sizes of the test files: empty, under a page, a page, a request's worth,
// several requests, several MiB.
var sizes = []int{0, 1, 4095, 4096, 65536, 128<<10 + 3, 1 << 20, 3<<20 + 5}

// content is file i's bytes.
func content(i int) []byte {
	b := make([]byte, sizes[i])
	for j := range b {
		b[j] = byte(i*7 + j*13 + j>>9)
	}
	return b
}

type testRoot struct {
	fusefs.Inode
	gate *gateFile
}

func (r *testRoot) OnAdd(ctx context.Context) {
	for i := range sizes {
		ch := r.NewPersistentInode(ctx, &fusefs.MemRegularFile{Data: content(i), Attr: fuse.Attr{Mode: 0o444}}, fusefs.StableAttr{})
		r.AddChild(fmt.Sprintf("f%d", i), ch, false)
	}
	r.AddChild("gate", r.NewPersistentInode(ctx, r.gate, fusefs.StableAttr{}), false)
}

// A gateFile's reads wait until they are interrupted.
type gateFile struct {
	fusefs.Inode
	waiting     chan struct{} // a read waits
	interrupted atomic.Int32
}

func (g *gateFile) Getattr(ctx context.Context, fh fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode, out.Size = 0o444|syscall.S_IFREG, 4096
	return 0
}

func (g *gateFile) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (g *gateFile) Read(ctx context.Context, fh fusefs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	select {
	case g.waiting <- struct{}{}:
	default:
	}
	<-ctx.Done()
	g.interrupted.Add(1)
	return nil, syscall.EINTR
}

// mount serves a testRoot at a new directory through Serve, and unmounts
// it at the end of the test, checking that the server ends then.
func mount(t *testing.T, cfg Config) (string, *Server, *testRoot) {
	t.Helper()
	testutil.NeedFUSE(t)
	testutil.Need(t, "root (to mount with mount(2))", os.Geteuid() == 0)
	dir := t.TempDir()
	root := &testRoot{gate: &gateFile{waiting: make(chan struct{}, 1)}}
	hour := time.Hour
	opts := &fusefs.Options{EntryTimeout: &hour, AttrTimeout: &hour}
	opts.MountOptions = fuse.MountOptions{MaxWrite: 1 << 20, FsName: "fuseuring-test", Name: "fuseuring-test", Options: []string{"ro"}}
	s, err := Serve(dir, fusefs.NewNodeFS(root, opts), opts.MountOptions, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Unmount(); err != nil {
			t.Errorf("Unmount: %v", err)
		}
		done := make(chan struct{})
		go func() { s.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("server still serving 10 s after unmount")
		}
	})
	return dir, s, root
}

// needRing skips t (fails it in CI) where the kernel does not serve FUSE
// over io_uring.
func needRing(t *testing.T, s *Server) {
	t.Helper()
	testutil.Need(t, fmt.Sprintf("FUSE over io_uring (Linux 6.14+, enable_uring=Y): %v", s.Ring()), s.Ring() == nil)
}

// TestServe: files read back exactly over the rings, from many goroutines
// at once, and an ioctl is ENOTTY (counted).
func TestServe(t *testing.T) {
	var ioctls atomic.Int64
	dir, s, _ := mount(t, Config{Count: func(op uint32) {
		if op == opIoctl {
			ioctls.Add(1)
		}
	}})
	needRing(t, s)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for round := range 5 {
				for i := range sizes {
					i := (i + g + round) % len(sizes)
					got, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("f%d", i)))
					if err != nil || !bytes.Equal(got, content(i)) {
						t.Errorf("f%d: %d bytes, %v; want %d bytes as written", i, len(got), err, sizes[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	f, err := os.Open(filepath.Join(dir, "f1"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 3 {
		if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); !errors.Is(err, unix.ENOTTY) {
			t.Errorf("TCGETS: %v, want ENOTTY", err)
		}
	}
	if n := ioctls.Load(); n != 3 {
		t.Errorf("%d ioctls counted, want 3", n)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != len(sizes)+1 {
		t.Errorf("ReadDir: %d entries, %v; want %d", len(ents), err, len(sizes)+1)
	}
}

// TestInterrupt: a reader killed while its read waits in the daemon
// interrupts it (the INTERRUPT comes through /dev/fuse, for a request of a
// ring) and exits.
func TestInterrupt(t *testing.T) {
	dir, s, root := mount(t, Config{})
	needRing(t, s)
	cmd := exec.Command("dd", "if="+filepath.Join(dir, "gate"), "of=/dev/null", "bs=4096", "count=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-root.gate.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("no read reached the gate in 10 s")
	}
	cmd.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed reader has not exited 10 s later: its read was not interrupted")
	}
	if n := root.gate.interrupted.Load(); n != 1 {
		t.Errorf("%d reads interrupted, want 1", n)
	}
}

// TestFallback: where the rings cannot be registered (here: entries too
// small for the connection's requests), the file system is served through
// /dev/fuse instead, and says why.
func TestFallback(t *testing.T) {
	dir, s, _ := mount(t, Config{payload: 4096})
	if s.Ring() == nil {
		t.Fatal("served over io_uring with entries smaller than the kernel takes")
	}
	got, err := os.ReadFile(filepath.Join(dir, "f6"))
	if err != nil || !bytes.Equal(got, content(6)) {
		t.Errorf("f6 through /dev/fuse: %d bytes, %v", len(got), err)
	}
}

func TestCountCPUs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"0", 1, true}, {"0-1", 2, true}, {"0-3,8-11", 8, true}, {"0,2,4", 3, true},
		{"", 0, false}, {"3-1", 0, false}, {"a", 0, false}, {"0-", 0, false},
	} {
		n, err := countCPUs(c.in)
		if (err == nil) != c.ok || n != c.want {
			t.Errorf("countCPUs(%q) = %d, %v; want %d (ok %v)", c.in, n, err, c.want, c.ok)
		}
	}
}
