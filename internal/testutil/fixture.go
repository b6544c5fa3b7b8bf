package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// Must returns v, and panics if err is not nil: for values a test builds
// and cannot go wrong unless the test itself is wrong.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// WriteFile writes b at key (slash-separated) under root, making the
// directories above it, as a store's fixture files are written.
func WriteFile(t testing.TB, root, key string, b []byte) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
