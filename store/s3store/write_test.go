package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zfuse/zfuse/store/remote"
	"github.com/zfuse/zfuse/store/s3store"
)

// startWriteGateway starts a gateway that keeps object metadata (ETags,
// multipart uploads) in extended attributes: --nometa has no multipart
// uploads (its parts have no ETags to complete them with).
func startWriteGateway(t *testing.T) *gateway {
	t.Helper()
	return startGatewayArgs(t, nil)
}

// openWriter opens the gateway's prefix with 5 MiB parts (S3's least),
// through rt when it is not nil.
func (g *gateway) openWriter(t *testing.T, prefix string, rt http.RoundTripper) *s3store.Store {
	t.Helper()
	s, err := s3store.Open(t.Context(), s3store.Config{Bucket: bucket, Prefix: prefix, Endpoint: g.endpoint, PathStyle: true,
		PartSize: 5 << 20, Transport: rt, Backoff: remote.Backoff{Attempts: 2, Base: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestWrite: values written, small (one PUT) and large (a multipart
// upload of three parts), read back the same through the store and on
// the gateway's disk; a value rewritten after it was read reads as its
// new version; Walk lists every key below a directory with its size;
// RemoveKey removes, and removing a missing key is no error.
func TestWrite(t *testing.T) {
	g := startWriteGateway(t)
	s := g.openWriter(t, "out.zarr", nil)
	ctx := t.Context()
	values := map[string][]byte{
		".zgroup":   []byte(`{"zarr_format":2}`),
		"a/.zarray": []byte(`{}`),
		"a/0.0":     randomBytes(1000, 1),
		"a/0.1":     randomBytes(12<<20+3, 2), // 5 + 5 + 2 MiB
		"a/b/c/1":   {},
	}
	for k, v := range values {
		if err := s.WriteKey(ctx, k, v); err != nil {
			t.Fatalf("WriteKey(%s, %d bytes): %v", k, len(v), err)
		}
	}
	for k, v := range values {
		if got, err := s.ReadKey(ctx, k); err != nil || !bytes.Equal(got, v) {
			t.Errorf("ReadKey(%s) = %d bytes, %v; want %d", k, len(got), err, len(v))
		}
		if got, err := os.ReadFile(filepath.Join(g.root, bucket, "out.zarr", filepath.FromSlash(k))); err != nil || !bytes.Equal(got, v) {
			t.Errorf("on disk %s: %d bytes, %v; want %d", k, len(got), err, len(v))
		}
	}
	v2 := []byte("another version")
	if err := s.WriteKey(ctx, "a/0.0", v2); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReadKey(ctx, "a/0.0"); err != nil || !bytes.Equal(got, v2) {
		t.Errorf("rewritten: %q, %v", got, err)
	}
	var walked []string
	if err := s.Walk(ctx, "a", func(k string, n int64) error {
		walked = append(walked, k)
		if want := int64(len(values[k])); k != "a/0.0" && n != want {
			t.Errorf("Walk: %s has %d bytes, want %d", k, n, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(walked)
	if want := []string{"a/.zarray", "a/0.0", "a/0.1", "a/b/c/1"}; !slices.Equal(walked, want) {
		t.Errorf("Walk(a) = %v, want %v", walked, want)
	}
	if err := s.Walk(ctx, "nothing", func(string, int64) error { t.Error("a key under nothing"); return nil }); err != nil {
		t.Errorf("Walk of an empty directory: %v", err)
	}
	stop := errors.New("stop")
	if err := s.Walk(ctx, ".", func(string, int64) error { return stop }); err != stop {
		t.Errorf("Walk returned %v, want fn's error", err)
	}
	for _, k := range []string{"a/0.1", "a/0.1", "never/written"} {
		if err := s.RemoveKey(ctx, k); err != nil {
			t.Errorf("RemoveKey(%s): %v", k, err)
		}
	}
	if _, err := s.ReadKey(ctx, "a/0.1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadKey of a removed key: %v", err)
	}
	if err := s.WriteKey(ctx, "../x", nil); err == nil {
		t.Error("WriteKey(../x) succeeded")
	}
}

// failing sends requests on with net/http, except that it answers 500 to
// every upload of part 2 of a multipart upload and, with abortFails, to
// every abort of one.
type failing struct {
	abortFails atomic.Bool
	aborts     atomic.Int32
}

func (f *failing) RoundTrip(r *http.Request) (*http.Response, error) {
	q := r.URL.Query()
	fail := r.Method == http.MethodPut && q.Get("partNumber") == "2"
	if r.Method == http.MethodDelete && q.Has("uploadId") {
		f.aborts.Add(1)
		fail = f.abortFails.Load()
	}
	if !fail {
		return http.DefaultTransport.RoundTrip(r)
	}
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: 500, Status: "500 Internal Server Error", Header: http.Header{}, Request: r,
		Body: io.NopCloser(strings.NewReader(`<Error><Code>InternalError</Code><Message>injected</Message></Error>`))}, nil
}

// uploads lists the unfinished multipart uploads of s, by key.
func uploads(t *testing.T, s *s3store.Store) []string {
	var keys []string
	if _, err := s.AbortUploads(t.Context(), func(k string) bool { keys = append(keys, k); return false }); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestWriteFails: a multipart upload whose part fails (after the
// retries) fails WriteKey and is aborted: no object appears, none is
// left half-written, and no upload is left behind. One whose abort fails
// too (a writer killed in the middle leaves the same) is left unfinished,
// invisible to readers, until AbortUploads removes it, and only when the
// caller says the key is its own.
func TestWriteFails(t *testing.T) {
	g := startWriteGateway(t)
	f := &failing{}
	s := g.openWriter(t, "out.zarr", f)
	plain := g.openWriter(t, "out.zarr", nil)
	ctx := t.Context()
	big := randomBytes(11<<20, 3)
	if err := s.WriteKey(ctx, "a/0", big); err == nil {
		t.Fatal("WriteKey succeeded with a failing part")
	}
	if _, err := plain.ReadKey(ctx, "a/0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after a failed upload, ReadKey: %v, want ErrNotExist", err)
	}
	if f.aborts.Load() == 0 {
		t.Error("the failed upload was not aborted")
	}
	if u := uploads(t, plain); len(u) != 0 {
		t.Errorf("uploads left after a failed upload: %v", u)
	}

	f.abortFails.Store(true)
	if err := s.WriteKey(ctx, "a/1", big); err == nil {
		t.Fatal("WriteKey succeeded with a failing part")
	}
	if u := uploads(t, plain); !slices.Equal(u, []string{"a/1"}) {
		t.Fatalf("unfinished uploads %v, want a/1", u)
	}
	if _, err := plain.ReadKey(ctx, "a/1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an unfinished upload reads as %v, want ErrNotExist", err)
	}
	if n, err := plain.AbortUploads(ctx, func(k string) bool { return k != "a/1" }); err != nil || n != 0 {
		t.Errorf("AbortUploads of others' keys: %d, %v", n, err)
	}
	if n, err := plain.AbortUploads(ctx, func(k string) bool { return k == "a/1" }); err != nil || n != 1 {
		t.Errorf("AbortUploads: %d, %v; want 1", n, err)
	}
	if u := uploads(t, plain); len(u) != 0 {
		t.Errorf("uploads left after AbortUploads: %v", u)
	}
	_ = context.Background
}
