package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DirStore is a Store over a local directory (which may be on NFS or
// Lustre). Keys never escape the directory: it goes through os.Root, which
// refuses "..", absolute paths, and symlinks that resolve outside the root;
// such keys give errors wrapping ErrOutside. It is safe for concurrent use.
type DirStore struct {
	*FSStore          // over root.FS()
	root     *os.Root // immutable; closed by Close
	dir      string   // root with symlinks resolved, for error reports
	hook     Hook     // set before use (SetHook); nil: none
}

var (
	_ BufferReader = (*DirStore)(nil)
	_ FileOpener   = (*DirStore)(nil)
)

// Dir opens the local directory root as a store. Close it when done.
func Dir(root string) (*DirStore, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	dir, err := filepath.EvalSymlinks(root)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	return &DirStore{FSStore: FS(r.FS()), root: r, dir: dir}, nil
}

// Close releases the directory.
func (d *DirStore) Close() error { return d.root.Close() }

// SetHook has h told of every call of d (Hook): each is a request of the
// file system, a key refused before any I/O too. Call it before d is used.
func (d *DirStore) SetHook(h Hook) { d.hook = h }

// done is the error of the request op of key that began at start and
// returned n bytes and err (see why), as the hook is told of it.
func (d *DirStore) done(op, key string, start time.Time, n int, err error) error {
	err = d.why(key, err)
	d.hook.Done(op, key, start, n, err)
	return err
}

// ReadKey returns the contents of the file key. The caller owns the slice.
func (d *DirStore) ReadKey(ctx context.Context, key string) ([]byte, error) {
	start := time.Now()
	b, err := d.FSStore.ReadKey(ctx, key)
	return b, d.done("read", key, start, len(b), err)
}

// ReadKeyRange reads [off, off+n) of key with one pread. The caller owns the slice.
func (d *DirStore) ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	start := time.Now()
	b, err := d.FSStore.ReadKeyRange(ctx, key, off, n)
	return b, d.done("read_range", key, start, len(b), err)
}

// ReadKeyInto reads [off, off+n) of key (all of it when n < 0) into get's
// slice; see BufferReader. The caller owns the slice.
func (d *DirStore) ReadKeyInto(ctx context.Context, key string, off, n int64, get func(int) []byte) ([]byte, error) {
	start := time.Now()
	b, err := d.FSStore.ReadKeyInto(ctx, key, off, n, get)
	return b, d.done(ReadOp(n), key, start, len(b), err)
}

// OpenKey opens the file key for reading, through os.Root: keys that leave
// the directory are refused as by ReadKey. The caller closes the file.
func (d *DirStore) OpenKey(ctx context.Context, key string) (*os.File, error) {
	start := time.Now()
	err := checkKey("open", key)
	var f *os.File
	if err == nil {
		f, err = d.root.Open(filepath.FromSlash(key))
	}
	return f, d.done("open", key, start, 0, err)
}

// List returns the entries directly under dir; see FSStore.List.
func (d *DirStore) List(ctx context.Context, dir string) ([]Entry, error) {
	start := time.Now()
	es, err := d.FSStore.List(ctx, dir)
	return es, d.done("list", dir, start, 0, err)
}

// Stat describes name; see FSStore.Stat.
func (d *DirStore) Stat(ctx context.Context, name string) (Entry, error) {
	start := time.Now()
	e, err := d.FSStore.Stat(ctx, name)
	return e, d.done("stat", name, start, 0, err)
}

// why marks errors caused by a symlink that leads out of the root with
// ErrOutside. os.Root refuses such paths but its error is not exported, so
// on the error path we resolve the key ourselves and look where it lands.
func (d *DirStore) why(key string, err error) error {
	if err == nil || errors.Is(err, ErrOutside) || errors.Is(err, fs.ErrNotExist) || !fs.ValidPath(key) {
		return err
	}
	real, rerr := filepath.EvalSymlinks(filepath.Join(d.dir, filepath.FromSlash(key)))
	if rerr != nil {
		return err
	}
	if rel, rerr := filepath.Rel(d.dir, real); rerr == nil && (rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))) {
		return &fs.PathError{Op: "resolve", Path: key, Err: fmt.Errorf("%w: it resolves to %s", ErrOutside, real)}
	}
	return err
}
