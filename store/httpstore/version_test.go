package httpstore_test

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/httpstore"
	"github.com/zfuse/zfuse/store/remote"
)

// TestReadKeyVersion: a value's version is its ETag (else Last-Modified); a
// read conditional on the current version is ErrNotModified without a body,
// for whole values and ranges alike. Once the value changes, the store
// that saw the old version refuses the new one (remote.ErrChanged: a mount
// never mixes two versions of a value), and a new store (the next mount)
// gets the new bytes and the new version from the same conditional read.
// Go's file server sends Last-Modified (If-Modified-Since); the ETag case
// adds one per file.
func TestReadKeyVersion(t *testing.T) {
	for _, etag := range []bool{false, true} {
		name := "last-modified"
		if etag {
			name = "etag"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, ".zgroup"), []byte(`{"zarr_format": 2}`), 0o644)
			chunk := filepath.Join(dir, "0.0")
			old := bytes.Repeat([]byte("abcdefgh"), 1000)
			os.WriteFile(chunk, old, 0o644)
			past := time.Now().Add(-time.Hour).Truncate(time.Second)
			os.Chtimes(chunk, past, past)
			srv := serve(t, dir)
			if etag {
				files := srv.Config.Handler
				srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if fi, err := os.Stat(filepath.Join(dir, r.URL.Path)); err == nil {
						w.Header().Set("ETag", `"`+fi.ModTime().UTC().Format(time.RFC3339Nano)+`"`)
					}
					files.ServeHTTP(w, r)
				})
			}
			s := open(t, httpstore.Config{URL: srv.URL})
			ctx := t.Context()

			b, v, err := s.ReadKeyVersion(ctx, "0.0", 0, -1, "")
			if err != nil || !bytes.Equal(b, old) || v == "" {
				t.Fatalf("first read: %d bytes, version %q, %v", len(b), v, err)
			}
			if etag != (v[0] == '"') {
				t.Errorf("version %q: want the ETag only when the server sends one", v)
			}
			b, v2, err := s.ReadKeyVersion(ctx, "0.0", 0, -1, v)
			if !errors.Is(err, store.ErrNotModified) || b != nil || v2 != v {
				t.Errorf("conditional read of an unchanged value: %d bytes, %q, %v; want ErrNotModified", len(b), v2, err)
			}
			if _, _, err := s.ReadKeyVersion(ctx, "0.0", 8, 16, v); !errors.Is(err, store.ErrNotModified) {
				t.Errorf("conditional range read of an unchanged value: %v", err)
			}
			if got := srv.count("GET", "/0.0"); got != 3 {
				t.Errorf("%d GETs, want 3", got)
			}

			changed := bytes.Repeat([]byte("ABCDEFGH"), 1000)
			os.WriteFile(chunk, changed, 0o644)
			os.Chtimes(chunk, past.Add(time.Minute), past.Add(time.Minute))
			if _, _, err := s.ReadKeyVersion(ctx, "0.0", 8, 16, v); !errors.Is(err, remote.ErrChanged) {
				t.Errorf("range read after a change, by the store that read the old version: %v, want ErrChanged", err)
			}
			next := open(t, httpstore.Config{URL: srv.URL})
			b, v3, err := next.ReadKeyVersion(ctx, "0.0", 8, 16, v)
			if err != nil || !bytes.Equal(b, changed[8:24]) || v3 == v || v3 == "" {
				t.Errorf("range read after a change, by a new store: %q, version %q (was %q), %v", b, v3, v, err)
			}
			if _, err := next.ReadKey(ctx, "0.0"); err != nil {
				t.Error(err)
			}
		})
	}
}
