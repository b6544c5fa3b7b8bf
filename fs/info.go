package fs

import (
	"context"

	"github.com/zfuse/zfuse/zarr"
)

// ArrayInfo describes one array of the store, for zfuse info.
type ArrayInfo struct {
	Path  string      // store key of the array directory ("." for the root)
	Array *zarr.Array // nil when the metadata does not parse
	// Chunks counts the chunk files present; Stored is their size in the
	// store and Presented their decoded size (ChunkLen each).
	Chunks, Stored, Presented int64
	// PassThrough, when non-nil, says why the array is served as stored.
	PassThrough error
}

// Arrays walks the whole presented tree and describes every array in it,
// in path order. It reads metadata and lists directories; it decodes
// nothing.
func (t *Tree) Arrays(ctx context.Context) ([]ArrayInfo, error) {
	root, err := t.root(ctx)
	if err != nil {
		return nil, err
	}
	var out []ArrayInfo
	var walk func(dir *node) error
	walk = func(dir *node) error {
		if dir.arr != nil { // arrays are leaves: directories inside hold chunks
			info := ArrayInfo{Path: dir.key, Array: dir.arr.a, PassThrough: dir.arr.why}
			err := t.count(ctx, dir, &info)
			out = append(out, info)
			return err
		}
		ns, err := t.children(ctx, dir)
		if err != nil {
			return err
		}
		for _, n := range ns {
			if n.kind == kindDir {
				if err := walk(n); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(root)
}

// count adds up the chunk files under dir, a directory in an array.
func (t *Tree) count(ctx context.Context, dir *node, info *ArrayInfo) error {
	ns, err := t.children(ctx, dir)
	if err != nil {
		return err
	}
	for _, n := range ns {
		if n.kind == kindDir {
			if err := t.count(ctx, n, info); err != nil {
				return err
			}
			continue
		}
		if a := n.arr.a; a != nil {
			if _, ok := a.ParseChunkKey(n.rel); ok {
				info.Chunks++
				info.Stored += n.stored
				info.Presented += a.ChunkLen()
			}
		}
	}
	return nil
}
