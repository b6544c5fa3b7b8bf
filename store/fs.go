package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
)

// FSStore is a Store over an fs.FS: os.Root's FS in production (see Dir),
// fstest.MapFS in tests. Directories of fsys are prefixes of keys; regular
// files are keys. It is safe for concurrent use if fsys is.
type FSStore struct {
	fsys fs.FS // immutable
}

var _ BufferReader = (*FSStore)(nil)

// FS returns a Store that reads the files of fsys. fsys must refuse paths
// that leave it (os.DirFS does not refuse symlinks that point out; os.Root's
// FS does).
func FS(fsys fs.FS) *FSStore { return &FSStore{fsys: fsys} }

// Close does nothing: an fs.FS holds nothing to release. (A DirStore
// closes its directory.)
func (s *FSStore) Close() error { return nil }

// ReadKey returns the contents of the file key. The caller owns the slice.
func (s *FSStore) ReadKey(ctx context.Context, key string) ([]byte, error) {
	return s.ReadKeyInto(ctx, key, 0, -1, func(n int) []byte { return make([]byte, 0, n) })
}

// ReadKeyInto reads [off, off+n) of the file key (all of it when n < 0)
// into get's slice: see BufferReader. The caller owns the slice.
func (s *FSStore) ReadKeyInto(ctx context.Context, key string, off, n int64, get func(int) []byte) ([]byte, error) {
	if n >= 0 {
		return s.readRange(ctx, key, off, n, get)
	}
	f, fi, err := s.open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := get(int(fi.Size()) + 1)[:0] // +1: see EOF without another grow
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) { // grew since Stat
			b = append(b, 0)[:len(b)]
		}
	}
}

// open opens key and checks that it is a regular file.
func (s *FSStore) open(ctx context.Context, key string) (fs.File, fs.FileInfo, error) {
	if err := start(ctx, "read", key); err != nil {
		return nil, nil, err
	}
	f, err := s.fsys.Open(key)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "read", Path: key, Err: errNotKey}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// errNotKey is returned when a key names a directory (a prefix of keys) or a
// special file. It satisfies errors.Is(err, fs.ErrNotExist): it holds no value.
var errNotKey = fmt.Errorf("not a key (a directory or special file): %w", fs.ErrNotExist)

// ReadKeyRange reads [off, off+n) of key with ReadAt when fsys's files
// support it, else reads the whole file. The caller owns the slice.
func (s *FSStore) ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	return s.readRange(ctx, key, off, n, func(n int) []byte { return make([]byte, 0, n) })
}

// readRange is ReadKeyRange into get's slice.
func (s *FSStore) readRange(ctx context.Context, key string, off, n int64, get func(int) []byte) ([]byte, error) {
	if err := CheckRange(key, off, n); err != nil {
		return nil, err
	}
	f, fi, err := s.open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ra, ok := f.(io.ReaderAt)
	if !ok {
		b, err := io.ReadAll(f)
		if err != nil {
			return nil, err
		}
		return clip(b, off, n), nil
	}
	if off >= fi.Size() {
		return []byte{}, nil
	}
	b := get(int(min(n, fi.Size()-off)))
	b = b[:min(n, fi.Size()-off)]
	m, err := ra.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) { // EOF: the value ends (or shrank since Stat)
		return nil, err
	}
	return b[:m], nil
}

// List returns the directories and regular files directly under dir,
// sorted by name. Symlinks are resolved; those that do not resolve inside
// the store (dangling, or pointing out) are left out, as are special files.
func (s *FSStore) List(ctx context.Context, dir string) ([]Entry, error) {
	if err := start(ctx, "list", dir); err != nil {
		return nil, err
	}
	des, err := fs.ReadDir(s.fsys, dir)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(des))
	for _, de := range des {
		var fi fs.FileInfo
		if de.Type()&fs.ModeSymlink != 0 {
			fi, err = fs.Stat(s.fsys, path.Join(dir, de.Name()))
		} else {
			fi, err = de.Info()
		}
		if err != nil {
			continue
		}
		if e, ok := entry(de.Name(), fi); ok {
			out = append(out, e)
		}
	}
	return out, nil // fs.ReadDir sorts by name
}

// Stat describes name, following symlinks inside the store.
func (s *FSStore) Stat(ctx context.Context, name string) (Entry, error) {
	if err := start(ctx, "stat", name); err != nil {
		return Entry{}, err
	}
	fi, err := fs.Stat(s.fsys, name)
	if err != nil {
		return Entry{}, err
	}
	e, ok := entry(path.Base(name), fi)
	if !ok {
		return Entry{}, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return e, nil
}

// entry converts a FileInfo; special files (devices, sockets) are not keys.
func entry(name string, fi fs.FileInfo) (Entry, bool) {
	switch {
	case fi.IsDir():
		return Entry{Name: name, Dir: true}, true
	case fi.Mode().IsRegular():
		return Entry{Name: name, Size: fi.Size(), Version: fileVersion(fi)}, true
	}
	return Entry{}, false
}

// fileVersion is a local file's Entry.Version: its modification time in
// nanoseconds. Writers that replace a file (zarr-python writes a temporary
// file and renames it into place) or rewrite it give it a new one.
func fileVersion(fi fs.FileInfo) string { return strconv.FormatInt(fi.ModTime().UnixNano(), 10) }

// start checks the key and the context before any I/O.
func start(ctx context.Context, op, key string) error {
	if err := checkKey(op, key); err != nil {
		return err
	}
	return ctx.Err()
}
