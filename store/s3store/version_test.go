package s3store_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/remote"
)

// TestReadKeyVersion: the version of an object is its ETag, else its
// Last-Modified (versitygw --nometa sends no ETag for files put in its
// directory); a GET conditional on it is ErrNotModified, whole or ranged;
// after the object is rewritten, the store that read the old version
// refuses the new one (remote.ErrChanged: a mount never mixes versions),
// and a new store (the next mount) gets the new bytes and another version
// from the same GET. versitygw compares If-Modified-Since with the file's
// mtime to the nanosecond, so the test gives its files whole seconds.
func TestReadKeyVersion(t *testing.T) {
	const rel = "zarrita.js/fixtures/v2/data.zarr"
	g := startGateway(t, rel)
	s := g.open(t, storeName(rel), nil)
	ctx := t.Context()
	key := "1d.chunked.i2/0"
	file := filepath.Join(g.root, bucket, storeName(rel), key)
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(file, past, past); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(testutil.Conformance(t, rel), key))
	if err != nil {
		t.Fatal(err)
	}
	b, v, err := s.ReadKeyVersion(ctx, key, 0, -1, "")
	if err != nil || !bytes.Equal(b, want) || v == "" {
		t.Fatalf("read: %d bytes, version %q, %v", len(b), v, err)
	}
	for _, n := range []int64{-1, 2} {
		b, v2, err := s.ReadKeyVersion(ctx, key, 0, n, v)
		if !errors.Is(err, store.ErrNotModified) || b != nil || v2 != v {
			t.Errorf("conditional read (n %d) of an unchanged object: %d bytes, %q, %v; want ErrNotModified", n, len(b), v2, err)
		}
	}
	changed := append(bytes.Clone(want), 1, 2, 3)
	if err := os.WriteFile(file, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, past.Add(time.Minute), past.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ReadKeyVersion(ctx, key, 0, -1, v); !errors.Is(err, remote.ErrChanged) {
		t.Errorf("read after a rewrite, by the store that read the old version: %v, want ErrChanged", err)
	}
	b, v3, err := g.open(t, storeName(rel), nil).ReadKeyVersion(ctx, key, 0, -1, v)
	if err != nil || !bytes.Equal(b, changed) || v3 == v {
		t.Errorf("read after a rewrite: %d bytes, version %q (was %q), %v", len(b), v3, v, err)
	}
}
