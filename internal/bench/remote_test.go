package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"
)

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
