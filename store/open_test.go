package store

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"
)

// TestRedact: what logs, errors and the mount table show of a SOURCE: no
// query or fragment (presigned signatures, tokens), user information
// replaced, a path as it is.
func TestRedact(t *testing.T) {
	for src, want := range map[string]string{
		"/data/a.zarr":                                          "/data/a.zarr",
		"s3://bucket/era5.zarr":                                 "s3://bucket/era5.zarr",
		"https://h.example/a.zarr?X-Amz-Signature=s":            "https://h.example/a.zarr",
		"https://user:pw@h.example/a.zarr#frag":                 "https://REDACTED@h.example/a.zarr",
		"https://user:secret@example.org/data/x.zarr?token=abc": "https://REDACTED@example.org/data/x.zarr",
		"http://[::1/a":                                         "http://(unparsable URL)",
	} {
		if got := Redact(src); got != want {
			t.Errorf("Redact(%q) = %q, want %q", src, got, want)
		}
	}
}

// TestOpen: a path opens as a directory store with the hook set; a URL
// opens with the Opener registered for its scheme, whatever its case; an
// unknown scheme is refused, redacted.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	var ops []string
	s, err := Open(context.Background(), dir, Options{Hook: func(op, key string, n int64, _ time.Duration, err error) { ops = append(ops, op) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ReadKey(context.Background(), "x"); !errors.Is(err, fs.ErrNotExist) || len(ops) != 1 {
		t.Errorf("directory store: %v, hook saw %v", err, ops)
	}
	var got Options
	Register("test-open", func(_ context.Context, url string, o Options) (Store, error) {
		got = o
		return FS(nil), nil
	})
	if _, err := Open(context.Background(), "TEST-OPEN://h/a", Options{MaxInFlight: 3}); err != nil || got.MaxInFlight != 3 {
		t.Errorf("registered scheme: %v, options %+v", err, got)
	}
	if _, err := Open(context.Background(), "ftp://u:p@h/a?t=1", Options{}); err == nil || !strings.Contains(err.Error(), `ftp://REDACTED@h/a: unsupported scheme "ftp"`) {
		t.Errorf("unknown scheme: %v", err)
	}
	for src, want := range map[string]string{"/d": "dir", "https://h/a": "http", "s3://b/p": "s3"} {
		if got := Backend(src); got != want {
			t.Errorf("Backend(%q) = %q, want %q", src, got, want)
		}
	}
}
