package diskcache_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/diskcache"
	"github.com/zfuse/zfuse/store/httpstore"
)

// A server is Go's file server over a directory (Last-Modified, If-Modified-
// Since, ranges), counting responses by status.
type server struct {
	*httptest.Server
	dir string

	mu     sync.Mutex
	status map[int]int // status code -> responses
}

type recorder struct {
	http.ResponseWriter
	code int
}

func (r *recorder) WriteHeader(code int) { r.code = code; r.ResponseWriter.WriteHeader(code) }

func serve(t *testing.T, dir string) *server {
	t.Helper()
	s := &server{dir: dir, status: map[int]int{}}
	files := http.FileServer(http.Dir(dir))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{w, http.StatusOK}
		files.ServeHTTP(rec, r)
		s.mu.Lock()
		s.status[rec.code]++
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

// counts returns the responses so far by status, and forgets them.
func (s *server) counts() map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.status
	s.status = map[int]int{}
	return c
}

// writeStore writes a store of n values ("c/0" .. "c/<n-1>", 4 KiB each,
// distinct) with mtimes in whole seconds, an hour ago (file servers send
// Last-Modified to the second).
func writeStore(t *testing.T, n int) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "c"), 0o755)
	os.WriteFile(filepath.Join(dir, ".zgroup"), []byte(`{"zarr_format": 2}`), 0o644)
	vals := map[string][]byte{}
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range n {
		k := fmt.Sprintf("c/%d", i)
		vals[k] = bytes.Repeat([]byte(fmt.Sprintf("value %4d;", i)), 400)
		p := filepath.Join(dir, k)
		if err := os.WriteFile(p, vals[k], 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, past, past)
	}
	return dir, vals
}

// open opens an HTTP store of srv with a disk cache in cache.
func open(t *testing.T, srv *server, cache string, max int64, log *slog.Logger) *diskcache.Store {
	t.Helper()
	return openAged(t, srv, cache, max, 0, log)
}

// openAged is open with Config.MaxAge.
func openAged(t *testing.T, srv *server, cache string, max int64, maxAge time.Duration, log *slog.Logger) *diskcache.Store {
	t.Helper()
	h, err := httpstore.Open(t.Context(), httpstore.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	s, err := diskcache.Open(diskcache.Config{Dir: cache, MaxBytes: max, Source: srv.URL, Log: log, MaxAge: maxAge,
		Keep: func(key string) bool { return !strings.HasPrefix(key, ".z") }}, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// readAll reads every value of vals through s, concurrently, checking the
// bytes.
func readAll(t *testing.T, s store.Store, vals map[string][]byte) {
	t.Helper()
	var wg sync.WaitGroup
	for k, want := range vals {
		wg.Go(func() {
			got, err := s.ReadKey(t.Context(), k)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %d bytes, %v; want %d bytes", k, len(got), err, len(want))
			}
		})
	}
	wg.Wait()
}

// TestAcrossOpens: the first pass reads every value (200s) and writes it;
// a second pass in the same process needs no request; a new Store (the
// next mount) validates each value with one bodiless request (304) and then
// needs none; a value changed at the source is read again.
func TestAcrossOpens(t *testing.T) {
	dir, vals := writeStore(t, 20)
	srv := serve(t, dir)
	cache := t.TempDir()
	const n = 20

	s := open(t, srv, cache, 1<<20, nil)
	srv.counts() // the store's own metadata probes
	readAll(t, s, vals)
	if c := srv.counts(); c[200] != n || len(c) != 1 {
		t.Errorf("first pass: responses %v, want %d 200s", c, n)
	}
	readAll(t, s, vals)
	if c := srv.counts(); len(c) != 0 {
		t.Errorf("second pass: responses %v, want none", c)
	}
	if st := s.Stats(); st.Misses != n || st.Hits != n || st.Entries != n {
		t.Errorf("stats %+v", st)
	}
	s.Close()

	// The next mount; one value changed meanwhile.
	changed := "c/3"
	vals[changed] = []byte("a new value")
	p := filepath.Join(dir, changed)
	os.WriteFile(p, vals[changed], 0o644)
	later := time.Now().Truncate(time.Second)
	os.Chtimes(p, later, later)

	s = open(t, srv, cache, 1<<20, nil)
	srv.counts()
	readAll(t, s, vals)
	if c := srv.counts(); c[304] != n-1 || c[200] != 1 {
		t.Errorf("first pass of the next mount: responses %v, want %d 304s and one 200", c, n-1)
	}
	readAll(t, s, vals)
	if c := srv.counts(); len(c) != 0 {
		t.Errorf("second pass of the next mount: responses %v, want none", c)
	}
	if st := s.Stats(); st.Revalidated != n-1 || st.Changed != 1 || st.Hits != n {
		t.Errorf("stats %+v", st)
	}

	// Stat of a value held on disk needs no request either.
	e, err := s.Stat(t.Context(), "c/7")
	if err != nil || e.Size != int64(len(vals["c/7"])) || e.Dir {
		t.Errorf("stat: %+v, %v", e, err)
	}
	if c := srv.counts(); len(c) != 0 {
		t.Errorf("stat: responses %v, want none", c)
	}
	// Metadata documents are not kept (Keep).
	if _, err := s.ReadKey(t.Context(), ".zgroup"); err != nil {
		t.Error(err)
	}
}

// TestRanges: each range is an entry of its own, validated like a whole value.
func TestRanges(t *testing.T) {
	dir, vals := writeStore(t, 2)
	srv := serve(t, dir)
	cache := t.TempDir()
	for pass := range 2 {
		s := open(t, srv, cache, 1<<20, nil)
		srv.counts()
		for _, r := range [][2]int64{{0, 10}, {10, 10}, {4000, 1000}} {
			got, err := s.ReadKeyRange(t.Context(), "c/1", r[0], r[1])
			want := vals["c/1"][r[0]:min(r[0]+r[1], int64(len(vals["c/1"])))]
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("pass %d, range %v: %q, %v", pass, r, got, err)
			}
		}
		code := map[int]int{0: 206, 1: 304}[pass]
		if c := srv.counts(); c[code] != 3 || len(c) != 1 {
			t.Errorf("pass %d: responses %v, want three %ds", pass, c, code)
		}
		s.Close()
	}
}

// TestEvict: entries stay within the budget, the least recently used
// leave first, and that order survives reopening (it is the files' access
// times).
func TestEvict(t *testing.T) {
	dir, vals := writeStore(t, 10)
	srv := serve(t, dir)
	cache := t.TempDir()
	one := int64(len(vals["c/0"])) + 200 // a value and its header, with room to spare
	s := open(t, srv, cache, 4*one, nil)
	ctx := t.Context()
	for _, k := range []string{"c/0", "c/1", "c/2", "c/3"} {
		if _, err := s.ReadKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	// c/0 is used again; c/4 then pushes out the least recently used: c/1.
	s.ReadKey(ctx, "c/0")
	s.ReadKey(ctx, "c/4")
	st := s.Stats()
	if st.Entries != 4 || st.Used > st.Max || st.Evicted != 1 {
		t.Fatalf("stats %+v", st)
	}
	srv.counts()
	for _, k := range []string{"c/0", "c/2", "c/3", "c/4"} {
		s.ReadKey(ctx, k)
	}
	if c := srv.counts(); len(c) != 0 {
		t.Errorf("reading what should be on disk: responses %v", c)
	}
	s.ReadKey(ctx, "c/1")
	if c := srv.counts(); c[200] != 1 {
		t.Errorf("reading c/1, evicted: responses %v, want one 200", c)
	}
	s.Close()

	// Reopened with room for two: the two most recently used stay (c/1,
	// read last, and c/4, read before it).
	s = open(t, srv, cache, 2*one, nil)
	if st := s.Stats(); st.Entries != 2 || st.Evicted != 2 {
		t.Fatalf("reopened smaller: stats %+v", st)
	}
	srv.counts()
	s.ReadKey(ctx, "c/1")
	s.ReadKey(ctx, "c/4")
	if c := srv.counts(); c[304] != 2 {
		t.Errorf("the two kept: responses %v, want two 304s", c)
	}
}

// TestBusy: a second Store on the same directory is refused, naming the
// process that holds it; once the first closes, it opens.
func TestBusy(t *testing.T) {
	dir, _ := writeStore(t, 1)
	srv := serve(t, dir)
	cache := t.TempDir()
	s := open(t, srv, cache, 1<<20, nil)
	h, err := httpstore.Open(t.Context(), httpstore.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = diskcache.Open(diskcache.Config{Dir: cache, MaxBytes: 1 << 20}, h)
	if !errors.Is(err, diskcache.ErrBusy) || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Errorf("second open: %v, want ErrBusy naming pid %d", err, os.Getpid())
	}
	s.Close()
	s2, err := diskcache.Open(diskcache.Config{Dir: cache, MaxBytes: 1 << 20}, h)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	s2.Close()
}

// TestTorn: what a crash can leave (a temporary file, an entry cut short, a
// flipped byte) is never served: the value is read from the store again,
// the bad file is removed and logged.
func TestTorn(t *testing.T) {
	dir, vals := writeStore(t, 3)
	srv := serve(t, dir)
	cache := t.TempDir()
	s := open(t, srv, cache, 1<<20, nil)
	readAll(t, s, vals)
	s.Close()

	files, _ := filepath.Glob(filepath.Join(cache, "zfuse-cache-v1", "[0-9a-f][0-9a-f]", "*"))
	if len(files) != 3 {
		t.Fatalf("%d entry files, want 3", len(files))
	}
	b, _ := os.ReadFile(files[0])
	os.WriteFile(files[0], b[:len(b)-1], 0o600) // torn
	b, _ = os.ReadFile(files[1])
	b[len(b)/2] ^= 1
	os.WriteFile(files[1], b, 0o600) // a flipped bit
	tmp := filepath.Join(cache, "zfuse-cache-v1", "tmp", "leftover")
	os.WriteFile(tmp, []byte("half a value"), 0o600)

	var log bytes.Buffer
	var mu sync.Mutex
	s = open(t, srv, cache, 1<<20, slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return log.Write(p)
	}), nil)))
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the leftover temporary file is still there: %v", err)
	}
	srv.counts()
	readAll(t, s, vals)
	if st := s.Stats(); st.Dropped != 2 || st.Misses != 2 || st.Revalidated != 1 {
		t.Errorf("stats %+v", st)
	}
	if c := srv.counts(); c[200] != 2 || c[304] != 1 {
		t.Errorf("responses %v, want two 200s and a 304", c)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(log.String(), "disk cache entry dropped"); n != 2 {
		t.Errorf("%d lines about dropped entries, want 2:\n%s", n, log.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestGone: a value removed from the source is ENOENT, and its entry goes.
func TestGone(t *testing.T) {
	dir, vals := writeStore(t, 2)
	srv := serve(t, dir)
	cache := t.TempDir()
	s := open(t, srv, cache, 1<<20, nil)
	readAll(t, s, vals)
	s.Close()
	os.Remove(filepath.Join(dir, "c/1"))
	s = open(t, srv, cache, 1<<20, nil)
	if _, err := s.ReadKey(t.Context(), "c/1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removed value: %v, want ErrNotExist", err)
	}
	if st := s.Stats(); st.Entries != 1 {
		t.Errorf("%d entries, want 1", st.Entries)
	}
}

// TestMaxAge: with MaxAge, a value validated less than MaxAge ago is served
// by the next Store with no request at all (a change at the source within
// MaxAge is not seen: that is the bargain); one validated longer ago is
// validated again.
func TestMaxAge(t *testing.T) {
	dir, vals := writeStore(t, 6)
	srv := serve(t, dir)
	cache := t.TempDir()
	s := openAged(t, srv, cache, 1<<20, time.Hour, nil)
	readAll(t, s, vals)
	s.Close()

	// Two entries were last validated two hours ago.
	files, _ := filepath.Glob(filepath.Join(cache, "zfuse-cache-v1", "[0-9a-f][0-9a-f]", "*"))
	old := time.Now().Add(-2 * time.Hour)
	for _, f := range files[:2] {
		os.Chtimes(f, time.Now(), old)
	}
	s = openAged(t, srv, cache, 1<<20, time.Hour, nil)
	srv.counts()
	readAll(t, s, vals)
	if c := srv.counts(); c[304] != 2 || len(c) != 1 {
		t.Errorf("responses %v, want two 304s (the entries validated two hours ago) and nothing else", c)
	}
	if st := s.Stats(); st.Hits != 4 || st.Revalidated != 2 {
		t.Errorf("stats %+v", st)
	}
	// Validated now: the next Store needs nothing for any of them.
	s.Close()
	s = openAged(t, srv, cache, 1<<20, time.Hour, nil)
	srv.counts()
	readAll(t, s, vals)
	if c := srv.counts(); len(c) != 0 {
		t.Errorf("responses %v, want none", c)
	}
}
