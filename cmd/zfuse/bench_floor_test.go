package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/internal/bench"
	"github.com/zfuse/zfuse/internal/testutil"
)

// TestBenchFloor mounts zfuse bench floor over a store of three chunk
// files of different sizes and its metadata: the floor lists the same
// names with the same sizes,
// serves the metadata as stored and every chunk file from the bytes of
// the largest, refuses writes, says it serves in no-open mode where the
// kernel offers it, and unmounts when its context ends.
func TestBenchFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts are not short")
	}
	testutil.NeedFUSE(t)
	store := t.TempDir()
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	files := map[string][]byte{".zarray": []byte(`{"zarr_format": 2}`), ".zattrs": []byte("{}"),
		"0.0": chunk[:1000], "0.1": bytes.ToUpper(chunk), "1.0": chunk[:5000]}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(store, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mnt := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var log bench.LineLog
	exited := make(chan struct{})
	var err error
	go func() {
		err = benchFloor(ctx, []string{"--kernel-readahead", "4MiB", store, mnt}, &bytes.Buffer{}, &log)
		close(exited)
	}()
	wait, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if err := log.WaitFor(wait, "msg=mounted", exited); err != nil {
		t.Fatalf("the floor did not mount: %v\n%s", err, log.String())
	}
	defer func() {
		cancel()
		<-exited
		if err != nil {
			t.Errorf("benchFloor: %v", err)
		}
		if ok, _ := fusemount.Mounted(mnt); ok {
			t.Errorf("%s still mounted after the floor returned", mnt)
		}
	}()

	es, rerr := os.ReadDir(mnt)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if want := []string{".zarray", ".zattrs", "0.0", "0.1", "1.0"}; !slices.Equal(names, want) {
		t.Errorf("the floor lists %q, want %q", names, want)
	}
	// The largest file's bytes, read at the start, are every chunk's.
	largest := files["0.1"]
	for name, want := range map[string][]byte{".zarray": files[".zarray"], ".zattrs": files[".zattrs"],
		"0.0": largest[:1000], "0.1": largest, "1.0": largest[:5000]} {
		got, err := os.ReadFile(filepath.Join(mnt, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes (%v), want %d bytes: the stored metadata, or the largest chunk's bytes", name, len(got), err, len(want))
		}
		if fi, err := os.Stat(filepath.Join(mnt, name)); err != nil || fi.Size() != int64(len(want)) || fi.Mode() != 0o444 {
			t.Errorf("%s: stat %v, %v; want size %d, -r--r--r--", name, fi, err, len(want))
		}
	}
	if _, err := os.OpenFile(filepath.Join(mnt, "0.0"), os.O_WRONLY, 0); !errors.Is(err, syscall.EROFS) {
		t.Errorf("opening for writing: %v, want EROFS", err)
	}
	want := "serving=open"
	if p, err := fusemount.ProbeMount("", fusemount.NoOpen, fusemount.TransportAuto); err == nil && p.Serving == fusemount.NoOpen {
		want = "serving=no-open"
	}
	if !strings.Contains(log.String(), want) {
		t.Errorf("the floor's log does not say %s:\n%s", want, log.String())
	}
}

// TestFloorFiles: the floor refuses a store with a subdirectory (it serves
// one array), and serves an empty one.
func TestFloorFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := floorFiles(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a store with a subdirectory: %v", err)
	}
	if fs, err := floorFiles(t.TempDir()); err != nil || len(fs) != 0 {
		t.Errorf("an empty store: %v, %v", fs, err)
	}
}

// TestWithLatency: the bench's HTTP server answers each request only after
// the latency (in a synctest bubble, whose clock moves only when every
// goroutine waits), with the file's bytes or the range asked for, and
// counts the requests, those given up by the client too.
func TestWithLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		files := http.FileServerFS(fstest.MapFS{"a.zarr/0.0": {Data: []byte("0123456789")}})
		h := withLatency(20*time.Millisecond, files, &n)
		get := func(rng string) (*httptest.ResponseRecorder, chan struct{}, time.Time) {
			req := httptest.NewRequest("GET", "/a.zarr/0.0", nil)
			if rng != "" {
				req.Header.Set("Range", rng)
			}
			w, done := httptest.NewRecorder(), make(chan struct{})
			start := time.Now()
			go func() { h.ServeHTTP(w, req); close(done) }()
			return w, done, start
		}
		w, done, start := get("")
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("answered before the latency")
		default:
		}
		<-done
		if d := time.Since(start); d != 20*time.Millisecond || w.Code != 200 || w.Body.String() != "0123456789" {
			t.Errorf("after %v: %d %q; want 200 and the file after 20ms", d, w.Code, w.Body.String())
		}
		w, done, _ = get("bytes=2-4")
		<-done
		if w.Code != http.StatusPartialContent || w.Body.String() != "234" {
			t.Errorf("a range: %d %q, want 206 \"234\"", w.Code, w.Body.String())
		}
		// A client that goes away before the answer: counted, not answered.
		ctx, cancel := context.WithCancel(context.Background())
		req := httptest.NewRequestWithContext(ctx, "GET", "/a.zarr/0.0", nil)
		w2 := httptest.NewRecorder()
		gone := make(chan struct{})
		go func() { h.ServeHTTP(w2, req); close(gone) }()
		synctest.Wait()
		cancel()
		<-gone
		if w2.Body.Len() != 0 || n.Load() != 3 {
			t.Errorf("a request given up: body %q, %d requests counted (want none, 3)", w2.Body.String(), n.Load())
		}
	})
}
