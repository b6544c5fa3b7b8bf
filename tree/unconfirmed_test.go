package tree

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
)

// errFlaky stands for a remote store's failure that says nothing about the
// key (a 503, a timeout).
var errFlaky = errors.New("server unavailable")

// flakyStore fails every request for the keys in down.
type flakyStore struct {
	*store.DirStore
	mu   sync.Mutex
	down map[string]bool
}

func (s *flakyStore) failing(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down[key]
}

func (s *flakyStore) ReadKey(ctx context.Context, key string) ([]byte, error) {
	if s.failing(key) {
		return nil, &fs.PathError{Op: "read", Path: key, Err: errFlaky}
	}
	return s.DirStore.ReadKey(ctx, key)
}

// ReadKeyInto fails as ReadKey does: the loader reads chunks with it.
func (s *flakyStore) ReadKeyInto(ctx context.Context, key string, off, n int64, get func(int) []byte) ([]byte, error) {
	if s.failing(key) {
		return nil, &fs.PathError{Op: "read", Path: key, Err: errFlaky}
	}
	return s.DirStore.ReadKeyInto(ctx, key, off, n, get)
}

func (s *flakyStore) Stat(ctx context.Context, key string) (store.Entry, error) {
	if s.failing(key) {
		return store.Entry{}, &fs.PathError{Op: "stat", Path: key, Err: errFlaky}
	}
	return s.DirStore.Stat(ctx, key)
}

// TestUnconfirmedChunk: while the store cannot say whether a chunk exists,
// its file is presented and reading it fails with EIO, never ENOENT: a
// lookup that failed would read as a missing chunk (the fill value) in
// zarr-python. Once the store answers, the chunk reads, and a chunk that
// is missing is ENOENT again.
func TestUnconfirmedChunk(t *testing.T) {
	ctx := context.Background()
	s := testutil.NewV2Store(t)
	ds, err := store.Dir(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	flaky := &flakyStore{DirStore: ds, down: map[string]bool{"temp/0.1": true, "temp/1.1": true}}
	tr, logs := treeOver(t, flaky)
	// temp/0.1 is there, temp/1.1 missing; missing is temp/1.1 as looked
	// up while the store was down.
	var missing *Node
	for _, p := range []string{"temp/0.1", "temp/1.1"} {
		// What stat sees: a chunk file of the decoded size, for a while.
		n, err := tr.Lookup(ctx, p)
		if err != nil || n.kind != kindChunk || n.size != 6*4 || !n.unconfirmed {
			t.Fatalf("lookup(%s) with the store down: %+v, %v; want an unconfirmed chunk file of 24 bytes", p, n, err)
		}
		missing = n
		if _, err := tr.ReadFile(ctx, p); tr.Errno(ctx, "read", p, err) != syscall.EIO {
			t.Errorf("ReadFile(%s) with the store down: %v, want EIO", p, err)
		}
	}
	if !strings.Contains(logs.String(), "cannot tell whether a chunk exists") || !strings.Contains(logs.String(), "key=temp/0.1") {
		t.Errorf("no Warn line naming temp/0.1:\n%s", logs)
	}
	flaky.mu.Lock()
	flaky.down = nil
	flaky.mu.Unlock()
	if got, err := tr.ReadFile(ctx, "temp/0.1"); err != nil || !bytes.Equal(got, s.Raw["temp/0.1"]) {
		t.Errorf("ReadFile(temp/0.1) with the store back: %x, %v", got, err)
	}
	if _, err := tr.ReadFile(ctx, "temp/1.1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(temp/1.1) with the store back: %v, want ErrNotExist", err)
	}
	// A reader that opened it before the kernel looked it up again: EIO.
	if _, err := tr.ReadAt(ctx, missing, make([]byte, missing.size), 0, 0); tr.Errno(ctx, "read", missing.key, err) != syscall.EIO {
		t.Errorf("reading the file presented for temp/1.1, with the store back: %v, want EIO", err)
	}
}
