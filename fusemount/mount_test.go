package fusemount

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/tree"
)

// TestMount checks what the mount serves, on each serving path.
func TestMount(t *testing.T) {
	servings(t, testMount)
}

func testMount(t *testing.T, serving Serving) {
	s := testutil.NewV2Store(t)
	tr, _, logs := newTestTree(t, s.Root)
	mnt, _ := mountServing(t, tr, false, serving, false)
	ctx := context.Background()

	t.Run("tree", func(t *testing.T) {
		// The mount lists exactly the store's files, and each serves what
		// the rules say and what zfuse cat (Tree.ReadFile) serves.
		var seen []string
		err := filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel := filepath.ToSlash(testutil.Must(filepath.Rel(mnt, p)))
			seen = append(seen, rel)
			if rel == "corrupt/1" {
				return nil
			}
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			if fi.Mode() != 0o444 {
				t.Errorf("%s: mode %v, want -r--r--r--", rel, fi.Mode())
			}
			// Python's open() buffers by st_blksize: 1 MiB made every
			// open().read() of a chunk map and fault in a fresh MiB.
			if bs := fi.Sys().(*syscall.Stat_t).Blksize; bs != 4096 {
				t.Errorf("%s: st_blksize %d, want 4096, as ext4", rel, bs)
			}
			got, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if int64(len(got)) != fi.Size() {
				t.Errorf("%s: stat says %d bytes, read %d", rel, fi.Size(), len(got))
			}
			s.CheckServed(t, rel, got)
			if cat, err := tr.ReadFile(ctx, rel); err != nil || !bytes.Equal(cat, got) {
				t.Errorf("%s: ReadFile (zfuse cat) differs from the mount: %v", rel, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != len(s.Stored) {
			t.Errorf("mount lists %d files, store has %d:\n%v", len(seen), len(s.Stored), seen)
		}
		fi, err := os.Stat(filepath.Join(mnt, "group"))
		if err != nil || fi.Mode() != os.ModeDir|0o555 {
			t.Errorf("group: %v, %v; want a directory dr-xr-xr-x", fi, err)
		}
	})

	t.Run("missing chunk", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(mnt, "temp/1.1")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("temp/1.1: %v, want ENOENT", err)
		}
	})

	t.Run("corrupt chunk", func(t *testing.T) {
		_, err := os.ReadFile(filepath.Join(mnt, "corrupt/1"))
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("corrupt/1: %v, want EIO", err)
		}
		// One read(2), one Error line, the reason on it.
		var failed []string
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, "level=ERROR") && strings.Contains(line, "key=corrupt/1") {
				failed = append(failed, line)
			}
		}
		if len(failed) != 1 || strings.Contains(failed[0], `\n`) {
			t.Errorf("%d Error lines name corrupt/1, want one line without a newline in it:\n%s", len(failed), logs)
		}
		got, err := os.ReadFile(filepath.Join(mnt, "corrupt/0"))
		if err != nil || !bytes.Equal(got, s.Raw["corrupt/0"]) {
			t.Errorf("corrupt/0 = %x, %v after corrupt/1 failed", got, err)
		}
	})

	t.Run("read-only", func(t *testing.T) { checkReadOnly(t, mnt) })

	t.Run("many readers", func(t *testing.T) {
		// Small reads at odd offsets from many goroutines at once.
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for key, want := range s.Raw {
					f, err := os.Open(filepath.Join(mnt, key))
					if err != nil {
						t.Error(err)
						return
					}
					got := make([]byte, 0, len(want))
					buf := make([]byte, 3+g%5)
					for {
						n, err := f.Read(buf)
						got = append(got, buf[:n]...)
						if err == io.EOF {
							break
						}
						if err != nil {
							t.Error(err)
							break
						}
					}
					f.Close()
					if !bytes.Equal(got, want) {
						t.Errorf("reader %d: %s = %x, want %x", g, key, got, want)
					}
				}
			})
		}
		wg.Wait()
	})
}

// TestMaxBackground: the kernel keeps two windows of a sequential
// reader's readahead in flight without counting the connection congested,
// so that it never allocates a window's folios only to drop them
// (maxBackground). The kernel says what it agreed to in the fusectl file
// system, /sys/fs/fuse/connections/<the mount's device minor>.
func TestMaxBackground(t *testing.T) {
	for ra, want := range map[int64]int{0: 12, 1 << 20: 12, 16 << 20: 64, 1 << 40: 1 << 10} {
		if got := maxBackground(ra); got != want {
			t.Errorf("maxBackground(%d) = %d, want %d", ra, got, want)
		}
	}
	const ra = 16 << 20
	s := testutil.NewV2Store(t)
	tr, _, _ := newTestTree(t, s.Root)
	dir, _ := mountWith(t, tr, Config{KernelReadahead: ra})
	dev, err := mountDevice(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, minor, _ := strings.Cut(dev, ":")
	conn := "/sys/fs/fuse/connections/" + minor
	b, err := os.ReadFile(filepath.Join(conn, "congestion_threshold"))
	testutil.Need(t, "the fusectl file system, readable (root), at "+conn, err == nil)
	got, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * ra / requestSize; got < want {
		t.Errorf("congestion threshold %d READs, want at least %d: two windows of %d MiB readahead in 1 MiB READs", got, want, ra>>20)
	}
}

// TestStatNeverDecodes lists and stats every file of a fresh mount, as
// ls -lR does, and checks that nothing was decoded.
func TestStatNeverDecodes(t *testing.T) {
	s := testutil.NewV2Store(t)
	tr, loader, _ := newTestTree(t, s.Root)
	mnt := mountTree(t, tr, false)
	for key, raw := range s.Raw {
		fi, err := os.Stat(filepath.Join(mnt, key))
		if err != nil || fi.Size() != int64(len(raw)) {
			t.Errorf("%s: %v, %v; want %d bytes", key, fi, err, len(raw))
		}
	}
	checkStatNeverDecodes(t, loader, mnt)
}

// checkStatNeverDecodes stats every file under mnt, as ls -lR does, and
// checks that the tree's loader read and decoded nothing for it.
func checkStatNeverDecodes(t *testing.T, loader *readahead.Loader, mnt string) {
	t.Helper()
	err := filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			_, err = d.Info()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := loader.Stats(); st.Reads != 0 || len(st.Decode) != 0 {
		t.Errorf("after stat: %v: something was read or decoded", st)
	}
}

// TestMountMetadataOnly: a Tree without Chunks (for metadata only) is
// refused with tree.ErrNoChunks.
func TestMountMetadataOnly(t *testing.T) {
	meta, _, _ := newTestTree(t, testutil.NewV2Store(t).Root, func(c *tree.Config) { c.Chunks = nil })
	if _, err := Mount(context.Background(), t.TempDir(), meta, Config{}); !errors.Is(err, tree.ErrNoChunks) {
		t.Errorf("Mount: %v, want ErrNoChunks", err)
	}
}

// TestMountNodesRefuseWrites mounts without the "ro" option, so that the
// kernel passes write requests on and the nodes themselves must refuse.
func TestMountNodesRefuseWrites(t *testing.T) {
	s := testutil.NewV2Store(t)
	tr, _, _ := newTestTree(t, s.Root)
	checkReadOnly(t, mountTree(t, tr, true))
	// Nothing reached the store.
	if b, err := os.ReadFile(filepath.Join(s.Root, "README.txt")); err != nil || string(b) != "not zarr\n" {
		t.Errorf("store file changed: %q, %v", b, err)
	}
}

// checkReadOnly checks that every way of changing the mount fails with EROFS.
func checkReadOnly(t *testing.T, mnt string) {
	t.Helper()
	p := func(s string) string { return filepath.Join(mnt, s) }
	for _, c := range []struct {
		op string
		do func() error
	}{
		{"create", func() error { return os.WriteFile(p("new"), []byte("x"), 0o644) }},
		{"open for writing", func() error {
			f, err := os.OpenFile(p("README.txt"), os.O_WRONLY, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"open for append", func() error {
			f, err := os.OpenFile(p("temp/0.0"), os.O_RDWR|os.O_APPEND, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"truncate", func() error { return os.Truncate(p("temp/0.0"), 0) }},
		{"mkdir", func() error { return os.Mkdir(p("dir"), 0o755) }},
		{"unlink", func() error { return os.Remove(p("README.txt")) }},
		{"rmdir", func() error { return syscall.Rmdir(p("group")) }},
		{"rename", func() error { return os.Rename(p("README.txt"), p("x")) }},
		{"chmod", func() error { return os.Chmod(p("temp/0.0"), 0o777) }},
		{"symlink", func() error { return os.Symlink("README.txt", p("l")) }},
		{"link", func() error { return os.Link(p("README.txt"), p("l")) }},
		{"mknod", func() error { return syscall.Mknod(p("fifo"), syscall.S_IFIFO|0o644, 0) }},
		{"setxattr", func() error { return syscall.Setxattr(p("README.txt"), "user.x", []byte("1"), 0) }},
	} {
		if err := c.do(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", c.op, err)
		}
	}
}

// gatedStore holds every read of one key until gate is closed, and says on
// started when such a read begins.
type gatedStore struct {
	*store.DirStore
	key     string
	gate    chan struct{}
	started chan struct{}
	reads   atomic.Int32
}

func (g *gatedStore) ReadKey(ctx context.Context, key string) ([]byte, error) {
	g.wait(key)
	return g.DirStore.ReadKey(ctx, key)
}

// ReadKeyInto is gated too: the loader reads chunks with it.
func (g *gatedStore) ReadKeyInto(ctx context.Context, key string, off, n int64, get func(int) []byte) ([]byte, error) {
	g.wait(key)
	return g.DirStore.ReadKeyInto(ctx, key, off, n, get)
}

func (g *gatedStore) wait(key string) {
	if key == g.key {
		if g.reads.Add(1) == 1 {
			close(g.started)
		}
		<-g.gate
	}
}

// gatedMount mounts the test store with its reads of key held at a gate
// until the test opens it.
func gatedMount(t *testing.T, key string, serving Serving) (*testutil.V2Store, *gatedStore, string, *Server) {
	s := testutil.NewV2Store(t)
	ds, err := store.Dir(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	g := &gatedStore{DirStore: ds, key: key, gate: make(chan struct{}), started: make(chan struct{})}
	tr := tree.New(tree.Config{Store: g, Chunks: testLoader(t, g, nil)})
	mnt, srv := mountServing(t, tr, false, serving, false)
	t.Cleanup(func() { // before the unmount, which a waiting request keeps busy
		select {
		case <-g.gate:
		default:
			close(g.gate)
		}
	})
	return s, g, mnt, srv
}

// killWhileGated starts killed, kills it once its request waits at g's
// gate, and checks that it exits at once, that other (run meanwhile)
// waits for the gate and then succeeds, and that g read its key once.
func killWhileGated(t *testing.T, g *gatedStore, killed *exec.Cmd, other func() error) {
	t.Helper()
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	<-g.started
	done := make(chan error, 1)
	go func() { done <- other() }()
	killed.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- killed.Wait() }()
	select {
	case err := <-exited:
		if err == nil {
			t.Error("the killed reader exited 0")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the killed reader still waits for the store read (its request was not interrupted)")
	}
	select {
	case err := <-done:
		t.Fatalf("the other reader finished before the store read: %v", err)
	default:
	}
	close(g.gate)
	if err := <-done; err != nil {
		t.Errorf("the other reader: %v", err)
	}
	if n := g.reads.Load(); n != 1 {
		t.Errorf("%d store reads of %s, want 1", n, g.key)
	}
}

// TestInterruptedOpen: a reader killed while its open (passthrough) or
// read waits for a chunk's decode gets out at once (its OPEN is
// interrupted: EINTR), and another reader waiting for the same chunk gets
// it once the load finishes, from the one store read.
func TestInterruptedOpen(t *testing.T) {
	servings(t, func(t *testing.T, serving Serving) {
		s, g, mnt, srv := gatedMount(t, "temp/0.1", serving)
		p := filepath.Join(mnt, "temp/0.1")
		killWhileGated(t, g, exec.Command("cat", p), func() error {
			b, err := os.ReadFile(p)
			if err == nil && !bytes.Equal(b, s.Raw["temp/0.1"]) {
				err = errors.New("wrong bytes")
			}
			return err
		})
		// A passthrough OPEN is the killed reader's own request, which the
		// kernel interrupts; a page-cache READ is the kernel's readahead,
		// which goes on for the page the other reader waits on too.
		if st := srv.Stats(); serving == Passthrough && st.Interrupted == 0 {
			t.Errorf("no request counted as interrupted: %+v", st)
		}
	})
}

// TestInterruptedLookup: a reader killed while its LOOKUP waits for a slow
// metadata read (a remote .zarray) gets out at once (the kernel interrupts
// the LOOKUP: EINTR) instead of waiting the read out, and the load goes
// on for another reader of the same directory, from the one store read.
func TestInterruptedLookup(t *testing.T) {
	_, g, mnt, _ := gatedMount(t, "temp/.zarray", NoOpen)
	p := filepath.Join(mnt, "temp")
	killWhileGated(t, g, exec.Command("stat", p), func() error {
		fi, err := os.Stat(p)
		if err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
		return err
	})
}

// newTestTree returns a Tree over the store written at root, whose chunks
// the real loader reads (small budgets; returned too, for its counters)
// and whose log goes to the returned buffer; each of set may change its
// Config first.
func newTestTree(t testing.TB, root string, set ...func(*tree.Config)) (*tree.Tree, *readahead.Loader, *testutil.LogBuffer) {
	ds, err := store.Dir(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	log, logs := testutil.Logger()
	loader := testLoader(t, ds, log)
	cfg := tree.Config{Store: ds, Log: log, Chunks: loader}
	for _, f := range set {
		f(&cfg)
	}
	return tree.New(cfg), loader, logs
}

// testLoader returns the chunk loader the tests' trees use: the real one,
// with small budgets, closed when the test ends.
func testLoader(t testing.TB, s store.Store, log *slog.Logger) *readahead.Loader {
	l := readahead.New(readahead.Config{Store: s, Log: log, DecodedBudget: 1 << 20, ReadaheadBudget: 1 << 20})
	t.Cleanup(func() { l.Close() })
	return l
}

// mountTree mounts tr for real on the serving path $ZFUSE_SERVING (Auto
// if unset) and unmounts it when the test ends.
func mountTree(t *testing.T, tr *tree.Tree, writable bool) string {
	t.Helper()
	serving, _ := ParseServing(os.Getenv("ZFUSE_SERVING"))
	dir, _ := mountServing(t, tr, writable, serving, false)
	return dir
}

// servings are the serving paths a test runs on: each one this process
// can use (Passthrough needs root, and is skipped locally without it).
func servings(t *testing.T, f func(t *testing.T, s Serving)) {
	for _, c := range []struct {
		s  Serving
		tr Transport
	}{{Passthrough, URing}, {NoOpen, URing}, {Open, URing}, {NoOpen, DevFuse}, {Open, DevFuse}} {
		name := c.s.String()
		if c.tr == DevFuse {
			name += "/dev"
		}
		t.Run(name, func(t *testing.T) {
			if c.s == Passthrough {
				testutil.Need(t, "root, for FUSE passthrough", os.Geteuid() == 0)
			}
			testTransport = c.tr
			defer func() { testTransport = TransportAuto }()
			f(t, c.s)
		})
	}
}

// testTransport is the transport of the mounts of the servings subtest
// that runs (mountWith): servings runs each path on both. The tests of
// this package do not run in parallel.
var testTransport Transport

// mountServing mounts tr on the serving path s, checks that the mount uses
// it, and unmounts it when the test ends.
// With debug, every FUSE request is logged to tr's log.
func mountServing(t *testing.T, tr *tree.Tree, writable bool, s Serving, debug bool) (string, *Server) {
	t.Helper()
	return mountWith(t, tr, Config{Serving: s, Debug: debug, writable: writable})
}

// mountWith mounts tr with cfg (its serving path checked, its panics
// failing the test) and unmounts it when the test ends.
func mountWith(t *testing.T, tr *tree.Tree, cfg Config) (string, *Server) {
	t.Helper()
	if testing.Short() {
		t.Skip("mounts are not short")
	}
	testutil.NeedFUSE(t)
	dir := t.TempDir()
	cfg.FsName = "zfuse-test"
	cfg.OnPanic = func(v any) { t.Errorf("FUSE request panicked: %v", v) }
	if cfg.Transport == TransportAuto {
		cfg.Transport = testTransport
	}
	s := cfg.Serving
	srv, err := Mount(context.Background(), dir, tr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Transport == URing {
		testutil.Need(t, "FUSE over io_uring (Linux 6.14+, /sys/module/fuse/parameters/enable_uring Y)", srv.Transport == URing)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	if s != Auto && srv.Serving() != s {
		t.Fatalf("mounted on %v, asked for %v: %s", srv.Serving(), s, srv.Stats().PassthroughRefused)
	}
	return dir, srv
}
