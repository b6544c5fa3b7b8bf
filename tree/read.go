package tree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/zfuse/zfuse/store"
)

// ErrIsDir means a path names a directory where a file was expected.
var ErrIsDir = errors.New("tree: is a directory")

// ReadAt returns the bytes n serves in [off, off+len(dest)), fewer only at
// the end, for a read by process pid (0: none), which readahead follows:
// chunks are copied into dest, other files may come as a shared slice
// (metadata), which callers must not modify.
func (t *Tree) ReadAt(ctx context.Context, n *Node, dest []byte, off int64, pid uint32) ([]byte, error) {
	if err := t.needChunks("read", n); err != nil {
		return nil, err
	}
	switch n.kind {
	case kindDir:
		return nil, &fs.PathError{Op: "read", Path: n.key, Err: ErrIsDir}
	case kindMeta:
		return clip(n.data, off, int64(len(dest))), nil
	case kindChunk:
		// The array's key prefix in the store, not n.key: the chunk
		// source finds the stored key (or shard) itself.
		k, err := t.chunks.ReadAt(ctx, n.ref(pid), dest, off)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return dest[:k], presentedErr(n, err)
	case kindNpy:
		return t.readNpy(ctx, n, dest, off, pid)
	case kindNc:
		return t.readNc(ctx, n, dest, off, pid)
	}
	return t.store.ReadKeyRange(ctx, n.key, off, int64(len(dest)))
}

// presentedErr is the error of reading (or opening) the chunk file n when
// its chunk source says err: a file that is presented, and then turns out
// missing (an unconfirmed chunk, or a store that changed), is an I/O
// error, not ENOENT from read(2).
func presentedErr(n *Node, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &fs.PathError{Op: "read", Path: n.key, Err: fmt.Errorf("presented, but the store has no such chunk: %v", err)}
	}
	return err
}

// clip returns b[off:off+n] limited to b's length.
func clip(b []byte, off, n int64) []byte {
	if off >= int64(len(b)) {
		return nil
	}
	return b[off:min(int64(len(b)), off+n)]
}

// Lookup walks from the root to p, a slash-separated path relative to the
// store root, the way the kernel walks the mount. Paths that are not
// io/fs-valid ("..", absolute, empty elements) are refused with
// store.ErrOutside.
func (t *Tree) Lookup(ctx context.Context, p string) (*Node, error) {
	if !fs.ValidPath(p) {
		return nil, &fs.PathError{Op: "lookup", Path: p, Err: store.ErrOutside}
	}
	n, err := t.Root(ctx)
	if err != nil || p == "." {
		return n, err
	}
	for name := range strings.SplitSeq(p, "/") {
		if n.kind != kindDir {
			return nil, notExist(p)
		}
		if n, err = t.Child(ctx, n, name); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// ReadFile returns exactly the bytes the mount serves at path p (relative to
// the store root, e.g. "temp/.zarray" or "temp/0.3"). Directories give
// ErrIsDir, missing paths fs.ErrNotExist, paths outside the store
// store.ErrOutside. The caller must not modify the slice.
func (t *Tree) ReadFile(ctx context.Context, p string) ([]byte, error) {
	n, err := t.Lookup(ctx, p)
	if err != nil {
		return nil, err
	}
	b, err := t.ReadAt(ctx, n, make([]byte, n.size), 0, 0)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != n.size {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("got %d bytes, want %d: %w", len(b), n.size, errShort)}
	}
	return b, nil
}

// CopyFile writes exactly the bytes ReadFile returns for p to w, a MiB at
// a time, and returns how many it wrote: a .npy file of a large array need
// not fit in memory, and its chunks are decoded ahead of the copy as ahead
// of any sequential reader.
func (t *Tree) CopyFile(ctx context.Context, w io.Writer, p string) (int64, error) {
	n, err := t.Lookup(ctx, p)
	if err != nil {
		return 0, err
	}
	if n.kind == kindDir {
		return 0, &fs.PathError{Op: "read", Path: n.key, Err: ErrIsDir}
	}
	buf := make([]byte, min(n.size, 1<<20))
	var off int64
	for off < n.size {
		b, err := t.ReadAt(ctx, n, buf, off, 0)
		if err != nil {
			return off, err
		}
		if len(b) == 0 {
			return off, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("got %d bytes, want %d: %w", off, n.size, errShort)}
		}
		if _, err := w.Write(b); err != nil {
			return off, err
		}
		off += int64(len(b))
	}
	return off, nil
}

// errShort means a stored file changed size under the mount.
var errShort = errors.New("tree: file changed size while mounted")
