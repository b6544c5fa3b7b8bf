package httpstore_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/httpstore"
	"github.com/zfuse/zfuse/store/remote"
)

// A server is Go's file server over a directory on 127.0.0.1 (it serves
// ranges, Last-Modified, and redirects "dir" to "dir/"), counting the
// requests it gets and failing those that fail says to.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string]int // "METHOD /path" -> count
	fail     func(r *http.Request) int
	inflight atomic.Int64
	most     atomic.Int64 // the most requests in flight at once
	hold     chan struct{}
}

func serve(t *testing.T, dir string) *server {
	t.Helper()
	s := &server{requests: map[string]int{}}
	files := http.FileServer(http.Dir(dir))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.inflight.Add(1)
		defer s.inflight.Add(-1)
		for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
		}
		s.mu.Lock()
		s.requests[r.Method+" "+r.URL.Path]++
		fail, hold := s.fail, s.hold
		s.mu.Unlock()
		if hold != nil {
			<-hold
		}
		if fail != nil {
			if code := fail(r); code != 0 {
				http.Error(w, http.StatusText(code), code)
				return
			}
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) count(method, p string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[method+" "+p]
}

func (s *server) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.requests {
		n += c
	}
	return n
}

func open(t *testing.T, cfg httpstore.Config) *httpstore.Store {
	t.Helper()
	if cfg.Backoff.Base == 0 {
		cfg.Backoff.Base = time.Millisecond
	}
	s, err := httpstore.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// walk lists every key and directory of a local store.
func walk(t *testing.T, d *store.DirStore) (files, dirs []string) {
	t.Helper()
	var rec func(dir string)
	rec = func(dir string) {
		es, err := d.List(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			k := path.Join(dir, e.Name)
			if e.Dir {
				dirs = append(dirs, k)
				rec(k)
			} else {
				files = append(files, k)
			}
		}
	}
	rec(".")
	return files, dirs
}

// TestAgainstDir: every key of a store served over HTTP reads, ranges and
// stats as the same directory does locally, and listings hold the
// directories and metadata documents (chunk keys are not listable).
func TestAgainstDir(t *testing.T) {
	for _, tc := range []struct {
		name, dir string
		hints     []string
	}{
		{"v2 consolidated", "zarrita.js/fixtures/v2/data.zarr", nil},
		{"v3 consolidated", "zarrita.js/fixtures/v3/data.zarr/consolidated", nil},
		{"v3 hints", "zarrita.js/fixtures/v3/data.zarr", []string{"3d.chunked.i2", "1d.chunked.compressed.sharded.i2", "consolidated/nested/1d.i2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := testutil.Conformance(t, tc.dir)
			local, err := store.Dir(root)
			if err != nil {
				t.Fatal(err)
			}
			defer local.Close()
			srv := serve(t, root)
			hs := open(t, httpstore.Config{URL: srv.URL + "/", Hints: tc.hints})
			ctx := t.Context()
			files, dirs := walk(t, local)
			for _, k := range files {
				want, _ := local.ReadKey(ctx, k)
				got, err := hs.ReadKey(ctx, k)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("ReadKey(%s) = %d bytes, %v; want %d bytes", k, len(got), err, len(want))
				}
				e, err := hs.Stat(ctx, k)
				if err != nil || e.Dir || e.Size != int64(len(want)) || e.Name != path.Base(k) {
					t.Errorf("Stat(%s) = %+v, %v; want size %d", k, e, err, len(want))
				}
				for _, r := range [][2]int64{{0, 1}, {1, 3}, {int64(len(want)) - 2, 10}, {int64(len(want)), 5}} {
					if r[0] < 0 {
						continue
					}
					w, _ := local.ReadKeyRange(ctx, k, r[0], r[1])
					g, err := hs.ReadKeyRange(ctx, k, r[0], r[1])
					if err != nil || !bytes.Equal(g, w) {
						t.Errorf("ReadKeyRange(%s, %d, %d) = %q, %v; want %q", k, r[0], r[1], g, err, w)
					}
				}
			}
			catalogued := map[string]bool{".": true}
			for _, d := range dirs {
				if e, err := hs.Stat(ctx, d); err != nil || !e.Dir {
					t.Errorf("Stat(%s) = %+v, %v; want a directory", d, e, err)
				}
				es, err := hs.List(ctx, d)
				if err != nil {
					t.Errorf("List(%s): %v", d, err)
				}
				if len(es) > 0 {
					catalogued[d] = true
				}
			}
			// Listings hold what the local listing holds, less chunk keys
			// and directories the metadata does not name.
			for d := range catalogued {
				want, _ := local.List(ctx, d)
				got, err := hs.List(ctx, d)
				if err != nil {
					t.Fatalf("List(%s): %v", d, err)
				}
				want, got = noVersions(want), noVersions(got) // each backend has its own
				for _, g := range got {
					if !slices.Contains(want, g) {
						t.Errorf("List(%s) has %+v, which the directory does not", d, g)
					}
				}
				for _, w := range want {
					if strings.HasPrefix(w.Name, ".z") || w.Name == "zarr.json" {
						if !slices.Contains(got, w) {
							t.Errorf("List(%s) lacks %+v", d, w)
						}
					}
				}
			}
		})
	}
}

// TestTreeFromMetadata: the listing that a consolidated v3 store gives.
func TestTreeFromMetadata(t *testing.T) {
	srv := serve(t, testutil.Conformance(t, "zarrita.js/fixtures/v3/data.zarr/consolidated"))
	hs := open(t, httpstore.Config{URL: srv.URL})
	ctx := t.Context()
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{".", []string{"1d.chunked.i2/", "2d.contiguous.i2/", "nested/", "zarr.json"}},
		{"nested", []string{"1d.i2/", "zarr.json"}},
		{"nested/1d.i2", []string{"zarr.json"}},
		{"nested/1d.i2/c", []string{}}, // chunk keys are not listed
	} {
		es, err := hs.List(ctx, tc.dir)
		if err != nil {
			t.Fatalf("List(%s): %v", tc.dir, err)
		}
		got := []string{}
		for _, e := range es {
			if e.Dir {
				e.Name += "/"
			}
			got = append(got, e.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("List(%s) = %v, want %v", tc.dir, got, tc.want)
		}
	}
	// Stat of chunk directories and of absent metadata costs no request.
	before := srv.total()
	for _, k := range []string{"2d.contiguous.i2/c", "2d.contiguous.i2/c/0", "nested/.zarray", "1d.chunked.i2/.zattrs"} {
		_, err := hs.Stat(ctx, k)
		if isDir := strings.Contains(k, "/c"); isDir != (err == nil) {
			t.Errorf("Stat(%s): %v", k, err)
		}
	}
	if n := srv.total() - before; n != 0 {
		t.Errorf("%d requests for what the metadata says", n)
	}
	// A chunk key is a file; a chunk directory one level too deep is not.
	if e, err := hs.Stat(ctx, "2d.contiguous.i2/c/0/0"); err != nil || e.Dir || e.Size == 0 {
		t.Errorf("Stat(chunk) = %+v, %v", e, err)
	}
	if _, err := hs.Stat(ctx, "2d.contiguous.i2/c/0/0/0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(below a chunk) = %v, want ErrNotExist", err)
	}
}

// TestNoMetadata: a server without metadata at the root needs hints.
func TestNoMetadata(t *testing.T) {
	srv := serve(t, testutil.Conformance(t, "zarrita.js/fixtures/v3"))
	_, err := httpstore.Open(t.Context(), httpstore.Config{URL: srv.URL})
	if err == nil || !strings.Contains(err.Error(), "--array") {
		t.Fatalf("Open without metadata: %v, want an error naming --array", err)
	}
	hs := open(t, httpstore.Config{URL: srv.URL, Hints: []string{"data.zarr/1d.chunked.i2"}})
	es, err := hs.List(t.Context(), ".")
	if err != nil || len(es) != 1 || es[0].Name != "data.zarr" || !es[0].Dir {
		t.Errorf("List(.) = %+v, %v; want data.zarr/", es, err)
	}
}

// TestErrors: 404 is ErrNotExist, 403 ErrPermission, both without retries;
// 503 is retried until it succeeds or the attempts are used up.
func TestErrors(t *testing.T) {
	srv := serve(t, testutil.Conformance(t, "zarrita.js/fixtures/v2/data.zarr"))
	hs := open(t, httpstore.Config{URL: srv.URL, Backoff: remote.Backoff{Attempts: 3, Base: time.Millisecond}})
	ctx := t.Context()
	const chunk = "1d.chunked.i2/0"
	var flaky atomic.Int64
	srv.mu.Lock()
	srv.fail = func(r *http.Request) int {
		switch {
		case strings.HasSuffix(r.URL.Path, "/1d.chunked.i2/1"):
			return http.StatusForbidden
		case strings.HasSuffix(r.URL.Path, "/2d.chunked.i2/0.0") && flaky.Add(1) <= 2:
			return http.StatusServiceUnavailable
		case strings.HasSuffix(r.URL.Path, "/2d.chunked.i2/0.1"):
			return http.StatusBadGateway
		}
		return 0
	}
	srv.mu.Unlock()
	if _, err := hs.ReadKey(ctx, "1d.chunked.i2/9"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("404: %v, want ErrNotExist", err)
	}
	if _, err := hs.ReadKey(ctx, "1d.chunked.i2/1"); !errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("403: %v, want ErrPermission", err)
	}
	if n := srv.count("GET", "/1d.chunked.i2/1"); n != 1 {
		t.Errorf("403 was tried %d times, want 1", n)
	}
	if b, err := hs.ReadKey(ctx, "2d.chunked.i2/0.0"); err != nil || len(b) == 0 {
		t.Errorf("503 twice, then 200: %v", err)
	}
	if n := srv.count("GET", "/2d.chunked.i2/0.0"); n != 3 {
		t.Errorf("503 twice then 200 took %d tries, want 3", n)
	}
	_, err := hs.ReadKey(ctx, "2d.chunked.i2/0.1")
	if err == nil || errors.Is(err, fs.ErrNotExist) || !remote.IsRetryable(err) {
		t.Errorf("502 always: %v, want a retryable error", err)
	}
	if n := srv.count("GET", "/2d.chunked.i2/0.1"); n != 3 {
		t.Errorf("502 was tried %d times, want 3", n)
	}
	if _, err := hs.ReadKey(ctx, chunk); err != nil {
		t.Error(err)
	}
	// A server that went away: an error that is not ErrNotExist (so not
	// ENOENT, which the kernel would cache), after the bounded attempts.
	srv.Close()
	_, err = hs.ReadKey(ctx, "2d.chunked.i2/1.1")
	var errno syscall.Errno
	if !errors.Is(err, remote.ErrUnavailable) || errors.Is(err, fs.ErrNotExist) || errors.As(err, &errno) {
		// An Errno inside would reach the reader as is (ECONNREFUSED).
		t.Errorf("server gone: %v, want ErrUnavailable and no syscall.Errno", err)
	}
	// What was seen before needs no server.
	if e, err := hs.Stat(ctx, chunk); err != nil || e.Size == 0 {
		t.Errorf("Stat after a read, server gone: %+v, %v", e, err)
	}
}

// TestTimeout: a server that does not answer in time is tried again, a
// bounded number of times, and then the read fails as unavailable.
func TestTimeout(t *testing.T) {
	srv := serve(t, testutil.Conformance(t, "zarrita.js/fixtures/v2/data.zarr"))
	hs := open(t, httpstore.Config{URL: srv.URL, Timeout: 100 * time.Millisecond, Backoff: remote.Backoff{Attempts: 2, Base: time.Millisecond}})
	srv.mu.Lock()
	srv.fail = func(r *http.Request) int {
		if strings.HasSuffix(r.URL.Path, "/2d.chunked.i2/1.1") {
			<-r.Context().Done() // never answers; ends when the client gives up
		}
		return 0
	}
	srv.mu.Unlock()
	start := time.Now()
	_, err := hs.ReadKey(t.Context(), "2d.chunked.i2/1.1")
	if !errors.Is(err, remote.ErrUnavailable) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no answer: %v, want ErrUnavailable", err)
	}
	if n := srv.count("GET", "/2d.chunked.i2/1.1"); n != 2 {
		t.Errorf("%d tries, want 2", n)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v", d)
	}
	if _, err := hs.ReadKey(t.Context(), "2d.chunked.i2/0.0"); err != nil {
		t.Errorf("another key after a timeout: %v", err)
	}
}

// TestStatAfterRead: a read tells Stat the size; a read in flight makes
// Stat wait for it instead of sending a HEAD.
func TestStatAfterRead(t *testing.T) {
	srv := serve(t, testutil.Conformance(t, "zarrita.js/fixtures/v2/data.zarr"))
	hs := open(t, httpstore.Config{URL: srv.URL})
	ctx := t.Context()
	b, err := hs.ReadKey(ctx, "2d.chunked.i2/0.0")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := hs.Stat(ctx, "2d.chunked.i2/0.0"); err != nil || e.Size != int64(len(b)) {
		t.Errorf("Stat = %+v, %v; want size %d", e, err, len(b))
	}
	if _, err := hs.ReadKey(ctx, "2d.chunked.i2/7.7"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if _, err := hs.Stat(ctx, "2d.chunked.i2/7.7"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a key found missing: %v", err)
	}
	hold := make(chan struct{})
	srv.mu.Lock()
	srv.hold = hold
	srv.mu.Unlock()
	done := make(chan error)
	go func() { _, err := hs.ReadKey(ctx, "2d.chunked.i2/1.0"); done <- err }()
	for srv.count("GET", "/2d.chunked.i2/1.0") == 0 {
		time.Sleep(time.Millisecond) // until the GET reaches the server
	}
	statted := make(chan error)
	go func() { _, err := hs.Stat(ctx, "2d.chunked.i2/1.0"); statted <- err }()
	srv.mu.Lock()
	srv.hold = nil
	srv.mu.Unlock()
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-statted; err != nil {
		t.Fatal(err)
	}
	if n := srv.count("HEAD", "/2d.chunked.i2/0.0") + srv.count("HEAD", "/2d.chunked.i2/1.0") + srv.count("HEAD", "/2d.chunked.i2/7.7"); n != 0 {
		t.Errorf("%d HEAD requests for keys just read", n)
	}
}

// TestMaxInFlight: requests held by the server pile up to the limit and
// no further.
func TestMaxInFlight(t *testing.T) {
	srv := serve(t, testutil.Conformance(t, "zarrita.js/fixtures/v2/data.zarr"))
	hs := open(t, httpstore.Config{URL: srv.URL, MaxInFlight: 3})
	hold := make(chan struct{})
	srv.mu.Lock()
	srv.hold = hold
	srv.mu.Unlock()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if _, err := hs.ReadKeyRange(t.Context(), "3d.chunked.i2/0.0.0", int64(i%4), 2); err != nil {
				t.Error(err)
			}
		})
	}
	// Polling the server's counter: the limit is reached, and while the
	// 37 other readers wait for 50ms, none gets past it.
	for deadline := time.Now().Add(10 * time.Second); srv.inflight.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	close(hold)
	wg.Wait()
	if m := srv.most.Load(); m != 3 {
		t.Errorf("%d requests in flight at most, want 3", m)
	}
}

// TestChangeRefused: a value that changes on the server during the mount
// (Go's file server: a new Last-Modified and size) is refused with
// ErrChanged naming the key, not served; once the server has the first
// version again, it reads again.
func TestChangeRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(testutil.Conformance(t, "zarrita.js/fixtures/v2/data.zarr"))); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, dir)
	hs := open(t, httpstore.Config{URL: srv.URL, Backoff: remote.Backoff{Attempts: 2, Base: time.Millisecond}})
	const key = "1d.chunked.i2/0"
	old, err := hs.ReadKey(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, filepath.FromSlash(key))
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte("new value"), 0o644)
	later := time.Now().Add(time.Hour)
	os.Chtimes(p, later, later)
	if b, err := hs.ReadKey(t.Context(), key); !errors.Is(err, remote.ErrChanged) || !strings.Contains(err.Error(), key) {
		t.Errorf("changed value: %q, %v; want ErrChanged naming %s", b, err, key)
	}
	os.WriteFile(p, old, 0o644)
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	if b, err := hs.ReadKey(t.Context(), key); err != nil || !bytes.Equal(b, old) {
		t.Errorf("the first version again: %q, %v", b, err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestDirRedirect: a directory the metadata does not name is found by the
// server's redirect to "dir/"; keys never escape the base URL.
func TestDirRedirect(t *testing.T) {
	srv := serve(t, testutil.Conformance(t, "zarrita.js/fixtures/v3"))
	hs := open(t, httpstore.Config{URL: srv.URL, Hints: []string{"data.zarr"}})
	ctx := t.Context()
	if e, err := hs.Stat(ctx, "data.zarr/1d.chunked.i2"); err != nil || !e.Dir {
		t.Errorf("Stat(unnamed dir) = %+v, %v", e, err)
	}
	if _, err := hs.ReadKey(ctx, "data.zarr/1d.chunked.i2"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadKey(dir) = %v, want ErrNotExist", err)
	}
	for _, k := range []string{"../x", "/etc/passwd", "a//b", ""} {
		if _, err := hs.ReadKey(ctx, k); !errors.Is(err, store.ErrOutside) {
			t.Errorf("ReadKey(%q) = %v, want ErrOutside", k, err)
		}
	}
	// Names with spaces and percent signs are escaped.
	srv2 := serve(t, testutil.Conformance(t, "zarrita.js/fixtures/v2/data.zarr"))
	hs2 := open(t, httpstore.Config{URL: srv2.URL})
	if _, err := hs2.Stat(ctx, "my group with spaces"); err != nil {
		t.Errorf("Stat(name with spaces): %v", err)
	}
	_ = context.Background
}

// noVersions clears the Version of each entry: backends version values
// each their own way (a local file's mtime, the server's ETag).
func noVersions(es []store.Entry) []store.Entry {
	for i := range es {
		es[i].Version = ""
	}
	return es
}
