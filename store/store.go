// Package store gives read access to the keys and values of a Zarr store.
//
// It copies io/fs: the Store interface holds what every backend does (read
// a value or part of it, list a directory, describe a key, close), and
// optional interfaces what only some do (BufferReader, Versioner,
// FileOpener), with functions that fall back when a backend lacks them
// (ReadInto), as fs.ReadFile does. Keys use io/fs path syntax ("temp/0.3",
// "temp/0/3"), are relative to the store root and never escape it. The
// backends tell a Hook of the requests they make. Open opens a SOURCE, a
// directory here or a URL with the backend registered for its scheme
// (httpstore, s3store).
//
// store imports nothing else of zfuse.
package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrOutside means a key is not a valid key of the store: absolute, holding
// ".." or empty elements, or resolving (through a symlink) outside the root.
var ErrOutside = errors.New("store: key outside the store")

// ErrNotSupported means a backend cannot do what was asked (a List of a
// store that has no listing).
var ErrNotSupported = errors.New("store: operation not supported")

// A Store gives read access to the values of a Zarr store. Keys use io/fs
// path syntax ("temp/c/0/3"). It must be safe for concurrent use.
type Store interface {
	// ReadKey returns the value stored under key. If key does not exist, the
	// error satisfies errors.Is(err, fs.ErrNotExist). The caller owns the slice.
	ReadKey(ctx context.Context, key string) ([]byte, error)
	// ReadKeyRange returns the bytes of key's value in [off, off+n); fewer
	// only where the value ends. A negative off or n is an error
	// (CheckRange). The caller owns the slice.
	ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error)
	// List returns the entries directly under dir ("." for the root),
	// sorted by name. A missing dir satisfies errors.Is(err,
	// fs.ErrNotExist); a store that cannot list gives ErrNotSupported.
	List(ctx context.Context, dir string) ([]Entry, error)
	// Stat returns the entry for name ("." for the root). A missing name
	// satisfies errors.Is(err, fs.ErrNotExist).
	Stat(ctx context.Context, name string) (Entry, error)
	// Close releases what the store holds (a directory, connections).
	Close() error
}

// A BufferReader reads a value into memory its caller provides, so that a
// caller that drops values once used (decoded) can use that memory again
// rather than leave it to the garbage collector.
type BufferReader interface {
	Store
	// ReadKeyInto returns the bytes of key's value in [off, off+n) (all of
	// it when n < 0), fewer only where the value ends, read into
	// get(size)[:0] once the size is known; get returns a slice whose
	// capacity is at least size. The caller owns the slice.
	ReadKeyInto(ctx context.Context, key string, off, n int64, get func(size int) []byte) ([]byte, error)
}

// ReadInto returns the bytes of key's value in [off, off+n) (all of it
// when n < 0), into memory from get where s is a BufferReader, else as
// ReadKey or ReadKeyRange return them. The caller owns the slice.
func ReadInto(ctx context.Context, s Store, key string, off, n int64, get func(size int) []byte) ([]byte, error) {
	if r, ok := s.(BufferReader); ok {
		return r.ReadKeyInto(ctx, key, off, n, get)
	}
	if n < 0 {
		return s.ReadKey(ctx, key)
	}
	return s.ReadKeyRange(ctx, key, off, n)
}

// ErrNotModified is the error of a conditional read (Versioner) of a value
// that is still the version the caller holds.
var ErrNotModified = errors.New("store: value not modified")

// A Versioner reads values with their version, and can skip the read of a
// value the caller holds already (an HTTP conditional request).
type Versioner interface {
	Store
	// ReadKeyVersion returns the bytes of key's value in [off, off+n) (all
	// of it when n < 0), fewer only where the value ends, and the version
	// of the value: an opaque string that changes when the value does (an
	// HTTP ETag, else its Last-Modified), "" when the backend has none. If
	// have is not "" and is the value's version still, it returns no
	// bytes, have, and an error satisfying errors.Is(err, ErrNotModified).
	// The caller owns the slice.
	ReadKeyVersion(ctx context.Context, key string, off, n int64, have string) ([]byte, string, error)
}

// An Entry is one name in a listed directory of keys.
type Entry struct {
	Name string // base name, no slashes
	Dir  bool   // a prefix of other keys, not a key itself
	Size int64  // length of the value; 0 for directories
	// Version changes when the value does, as far as the backend can
	// tell: the modification time of a local file (with Size), the ETag
	// (else Last-Modified) of a remote object; "" when unknown. A store
	// that changes while mounted is checked with it (zfuse --refresh).
	Version string
}

// A FileOpener opens a key's value as a local file: a store on a local
// (or mounted) file system, whose files the kernel can read directly.
type FileOpener interface {
	Store
	// OpenKey opens the value of key for reading. The caller closes the
	// file. A missing key satisfies errors.Is(err, fs.ErrNotExist).
	OpenKey(ctx context.Context, key string) (*os.File, error)
}

// CheckRange returns the error of a read of [off, off+n) of key's value
// when off or n is negative, else nil. The backends' ReadKeyRange check
// with it first.
func CheckRange(key string, off, n int64) error {
	if off < 0 || n < 0 {
		return &fs.PathError{Op: "read", Path: key, Err: fmt.Errorf("negative range [%d,+%d)", off, n)}
	}
	return nil
}

// clip returns b[off:off+n] limited to b's length.
func clip(b []byte, off, n int64) []byte {
	if off >= int64(len(b)) {
		return b[:0]
	}
	return b[off:min(int64(len(b)), off+n)]
}

// checkKey refuses keys that are not valid io/fs paths ("..", absolute,
// empty elements): such a key could name something outside the store.
func checkKey(op, key string) error {
	if !fs.ValidPath(key) {
		return &fs.PathError{Op: op, Path: key, Err: ErrOutside}
	}
	return nil
}
