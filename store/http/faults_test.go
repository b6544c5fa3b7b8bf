package httpstore_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
	httpstore "github.com/zfuse/zfuse/store/http"
	"github.com/zfuse/zfuse/store/remote"
	"github.com/zfuse/zfuse/store/remote/remotetest"
)

// TestFaults: every kind of bad answer a server or a proxy in between may
// give to a range request is refused, never served as bytes: given once,
// the next attempt reads the right bytes (after the wait the server asked
// for); given every time, the read fails with an error that is not
// ErrNotExist (which would read as a fill value); once the faults stop,
// the same read succeeds.
func TestFaults(t *testing.T) {
	remotetest.Run(t, func(t *testing.T, srv *remotetest.Server, value []byte) func(context.Context, int64, int64) ([]byte, error) {
		srv.Values = map[string][]byte{".zgroup": []byte(`{"zarr_format":2}`), "a/0": value}
		srv.Key = "a/0"
		hs, err := httpstore.Open(t.Context(), httpstore.Config{URL: "http://store.invalid", Transport: srv,
			Timeout: 5 * time.Second, Backoff: remote.Backoff{Attempts: 3, Base: time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hs.Close() })
		return func(ctx context.Context, off, n int64) ([]byte, error) { return hs.ReadKeyRange(ctx, "a/0", off, n) }
	})
}

// FuzzRangeResponse answers a range request with arbitrary status,
// Content-Range, Content-Length and validator, and a body that holds the
// value's bytes from where its header says (an honest server's bytes, cut
// or extended): whatever ReadKeyRange accepts is exactly the bytes asked
// for. The value was seen before (size and ETag known), as in a mount.
func FuzzRangeResponse(f *testing.F) {
	value := make([]byte, 1000)
	for i := range value {
		value[i] = byte(i * 7)
	}
	var mu sync.Mutex
	var fault func(r *http.Request) *http.Response
	srv := &remotetest.Server{Values: map[string][]byte{".zgroup": []byte(`{"zarr_format":2}`), "a/0": value}, Key: "a/0",
		Fault: func(r *http.Request) *http.Response { mu.Lock(); defer mu.Unlock(); return fault(r) }}
	hs, err := httpstore.Open(f.Context(), httpstore.Config{URL: "http://store.invalid", Transport: srv, Backoff: remote.Backoff{Attempts: 1}})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := hs.ReadKeyRange(f.Context(), "a/0", 0, 10); err != nil {
		f.Fatal(err)
	}
	f.Add(uint16(206), "bytes 100-299/1000", int64(200), uint8(0), `"v1"`, uint16(100), uint16(200))
	f.Add(uint16(206), "bytes 900-999/1000", int64(100), uint8(0), `"v1"`, uint16(900), uint16(200))
	f.Add(uint16(206), "bytes 116-315/1000", int64(200), uint8(0), `"v1"`, uint16(100), uint16(200))
	f.Add(uint16(206), "bytes 100-199/200", int64(100), uint8(1), ``, uint16(100), uint16(200))
	f.Add(uint16(200), "", int64(1000), uint8(0), `"v1"`, uint16(100), uint16(200))
	f.Add(uint16(416), "bytes */1000", int64(0), uint8(0), ``, uint16(1000), uint16(10))
	f.Add(uint16(416), "bytes */100", int64(0), uint8(0), ``, uint16(100), uint16(10))
	f.Fuzz(func(t *testing.T, code uint16, cr string, bodyLen int64, clMode uint8, etag string, off, n uint16) {
		if n == 0 || bodyLen < 0 || bodyLen > 4096 {
			return
		}
		start := int64(0) // the body holds the value's bytes from where the header says
		if r, err := remote.ParseContentRange(cr); err == nil && r.First >= 0 {
			start = r.First
		}
		var body []byte
		if start < int64(len(value)) {
			body = value[start:min(int64(len(value)), start+bodyLen)]
		}
		cl := int64(len(body))
		switch clMode % 3 {
		case 1:
			cl = -1
		case 2:
			cl += int64(clMode) // a length the body does not have
		}
		mu.Lock()
		fault = func(r *http.Request) *http.Response {
			return remotetest.Answer(r, int(code), body, cl, "Content-Range", cr, "ETag", etag)
		}
		mu.Unlock()
		srv.SetFaults(1)
		got, err := hs.ReadKeyRange(t.Context(), "a/0", int64(off), int64(n))
		srv.SetFaults(0)
		if err != nil {
			return
		}
		want := value[min(int(off), len(value)):min(int(off)+int(n), len(value))]
		if !bytes.Equal(got, want) {
			t.Fatalf("%d %q, %d bytes (Content-Length %d), ETag %q, for %d at %d: accepted %d bytes, want %d (right: %v)",
				code, cr, len(body), cl, etag, n, off, len(got), len(want), bytes.Equal(got, want))
		}
	})
}

// TestHook: the hook is told of each request, with its retries, and not
// of what the store answers from what it has seen.
func TestHook(t *testing.T) {
	remotetest.CheckHook(t, "a/0", func(t *testing.T, srv *remotetest.Server, value []byte, hook store.Hook) remotetest.Hooked {
		srv.Values = map[string][]byte{".zgroup": []byte(`{"zarr_format":2}`), "a/0": value}
		srv.Key = "a/0"
		hs, err := httpstore.Open(t.Context(), httpstore.Config{URL: "http://store.invalid", Transport: srv,
			Timeout: 5 * time.Second, Backoff: remote.Backoff{Attempts: 3, Base: time.Millisecond}, Hook: hook})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hs.Close() })
		return hs
	})
}

// TestOpenPatient: a root document the server fails for longer than one
// read's tries (503, eight times) does not fail Open: it is read again in
// rounds, each logged, and Open succeeds; a document still failing after
// StartBackoff's rounds fails it.
func TestOpenPatient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &remotetest.Server{Values: map[string][]byte{".zgroup": []byte(`{"zarr_format":2}`)}, Key: ".zgroup",
			Fault: func(r *http.Request) *http.Response {
				return remotetest.Answer(r, http.StatusServiceUnavailable, nil, 0)
			}}
		log, logs := testutil.Logger()
		open := func() error {
			hs, err := httpstore.Open(t.Context(), httpstore.Config{URL: "http://store.invalid", Transport: srv, Log: log,
				Backoff: remote.Backoff{Attempts: 3, Base: time.Millisecond}})
			if err == nil {
				hs.Close()
			}
			return err
		}
		srv.SetFaults(8)
		if err := open(); err != nil {
			t.Fatalf("Open with .zgroup failing 8 times, 3 tries a read: %v", err)
		}
		if !strings.Contains(logs.String(), "trying again") || !strings.Contains(logs.String(), "key=http://store.invalid") {
			t.Errorf("no Warn line for the rounds:\n%s", logs)
		}
		srv.SetFaults(1 << 20)
		if err := open(); err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open with .zgroup failing for good: %v, want an error", err)
		}
	})
}
