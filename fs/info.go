package fs

import (
	"context"

	"github.com/zfuse/zfuse/zarr"
)

// ArrayInfo describes one array of the store, for zfuse info.
type ArrayInfo struct {
	Path   string      // store key of the array directory ("." for the root)
	Format int         // zarr_format of the stored metadata: 2 or 3
	Array  *zarr.Array // as presented (a v3 array under --as-v2: its v2 view); nil when the metadata does not parse
	// Shards is the stored chunk shape of a sharded v3 array, which is
	// presented unsharded (Array.Chunks is the inner chunk shape); nil
	// otherwise.
	Shards []int
	// Chunks counts the chunk files presented; Stored is their size in the
	// store (for inner chunks of shards, their byte ranges) and Presented
	// their decoded size (ChunkLen each).
	Chunks, Stored, Presented int64
	// PassThrough, when non-nil, says why the array is served as stored.
	PassThrough error
	// Hidden, when non-nil, says why the array is not shown at all: under
	// --as-v2, a v3 array with no v2 equivalent.
	Hidden error
	// ZarrJSON, for a v2 array whose directory also holds zarr.json (an
	// array converted in place), says what is served of zarr.json:
	// "rewritten too" (it describes the chunks the .zarray does), "as
	// stored" (the array is passed through), or "hidden: " and why; ""
	// when there is none.
	ZarrJSON string
}

// Arrays walks the whole presented tree and describes every array in it,
// in path order, including those --as-v2 does not show. It reads metadata,
// lists directories and reads the indexes of sharded arrays; it decodes
// nothing.
func (t *Tree) Arrays(ctx context.Context) ([]ArrayInfo, error) {
	root, err := t.root(ctx)
	if err != nil {
		return nil, err
	}
	var out []ArrayInfo
	var walk func(dir *node) error
	walk = func(dir *node) error {
		if x := dir.arr; x != nil { // arrays are leaves: directories inside hold chunks
			info := ArrayInfo{Path: dir.key, Format: dir.m.format, Array: x.a, Shards: dir.m.shards,
				PassThrough: x.why, Hidden: dir.m.skip, ZarrJSON: dir.m.zarrJSON}
			if info.Hidden != nil {
				info.PassThrough = nil
				out = append(out, info)
				return nil
			}
			err := t.count(ctx, dir, &info)
			out = append(out, info)
			return err
		}
		ns, err := t.list(ctx, dir)
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
		if a := n.arr.a; a != nil && n.kind != kindMeta {
			if _, ok := a.ParseChunkKey(n.rel); ok {
				info.Chunks++
				info.Stored += n.stored
				info.Presented += a.ChunkLen()
			}
		}
	}
	return nil
}
