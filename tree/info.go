package tree

import (
	"context"
	"errors"
	"io/fs"
	"path"

	"github.com/zfuse/zfuse/zarr"
)

// ArrayInfo describes one array of the store, for zfuse info.
type ArrayInfo struct {
	Path   string      // store key of the array directory ("." for the root; Prefix: "")
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
	// --as-v2, a v3 array with no v2 equivalent; under --as-npy, an array
	// that cannot be presented raw.
	Hidden error
	// Npy is the path of the array's .npy file under --as-npy (its
	// attributes are beside it, with .json for .npy); "" otherwise, and
	// when the array is not shown.
	Npy string
	// Nc, under --as-nc, is the path of the netCDF file that holds the
	// array as the variable NcVar of type NcType ("" when it is left out,
	// and Hidden says why).
	Nc, NcVar, NcType string
	// ZarrJSON, for a v2 array whose directory also holds zarr.json (an
	// array converted in place), says what is served of zarr.json:
	// "rewritten too" (it describes the chunks the .zarray does), "as
	// stored" (the array is passed through), or "hidden: " and why; ""
	// when there is none.
	ZarrJSON string
	// Unreadable, when non-nil, says why the directory's metadata could
	// not be read (after the store's retries): it may be an array or a
	// group. A mount presents it as a directory, and looking into it
	// fails (EIO) until its metadata can be read; the other fields are
	// zero.
	Unreadable error
}

// Prefix returns the array's key prefix in the store, as
// readahead.Loader takes it: Path, but "" for the root.
func (i ArrayInfo) Prefix() string { return storePath(i.Path) }

// Arrays walks the whole presented tree and describes every array in it,
// in path order, including those --as-v2 does not show. It reads metadata,
// lists directories and reads the indexes of sharded arrays; it decodes
// nothing.
func (t *Tree) Arrays(ctx context.Context) ([]ArrayInfo, error) {
	var out []ArrayInfo
	err := t.walkDirs(ctx, func(dir *Node) error {
		if err := dir.m.err; err != nil {
			out = append(out, ArrayInfo{Path: dir.key, Unreadable: err})
			return nil
		}
		x := dir.arr
		if x == nil {
			return nil
		}
		info := ArrayInfo{Path: dir.key, Format: dir.m.format, Array: x.a,
			PassThrough: x.why, Hidden: dir.m.skip, ZarrJSON: dir.m.zarrJSON}
		if x.a != nil {
			info.Shards = x.a.ShardShape()
		}
		if f := dir.m.npy; f != nil && f.why != nil {
			info.Hidden = f.why
		} else if f != nil {
			name := dir.Name()
			if dir.key == "." {
				name = t.rootName
			}
			info.Npy = join(path.Dir(dir.key), name) + npyExt
		}
		if t.asNc {
			if err := t.ncInfo(ctx, dir, &info); err != nil {
				return err
			}
		}
		if info.Hidden != nil {
			info.PassThrough = nil
			out = append(out, info)
			return nil
		}
		err := t.count(ctx, dir, &info)
		out = append(out, info)
		return err
	})
	return out, err
}

// HasArray reports whether the tree holds an array (one passed through, or
// not shown under --as-v2, too), or may hold one: a directory whose
// metadata cannot be read, or cannot be listed, may. It reads the
// metadata of one directory at a time, in path order, until it finds one,
// reads no shard index and counts no chunks: a store of many arrays costs
// a listing and a directory or two.
func (t *Tree) HasArray(ctx context.Context) (bool, error) {
	root, err := t.Root(ctx)
	if err != nil {
		return false, err
	}
	return t.hasArray(ctx, root)
}

// hasArray is HasArray below dir.
func (t *Tree) hasArray(ctx context.Context, dir *Node) (bool, error) {
	if dir.arr != nil || dir.m.err != nil || (dir.m.cons != nil && dir.m.cons.holdsArray()) {
		return true, nil
	}
	es, err := t.store.List(ctx, dir.key)
	if doubtful(err) {
		t.log.WarnContext(ctx, "cannot list a directory: it may hold arrays", "key", dir.key, "err", err)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	for _, e := range es {
		if !e.Dir || dir.m.serves(e.Name) {
			continue
		}
		n, err := t.node(ctx, dir, e)
		if err != nil {
			return false, err
		}
		if ok, err := t.hasArray(ctx, n); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// A GroupInfo describes one group of the store, for zfuse compress.
type GroupInfo struct {
	Path   string // store key of the group directory ("." for the root)
	Format int    // zarr_format of its metadata: 2 or 3
}

// Groups walks the whole presented tree, as Arrays does, and lists every
// directory whose metadata makes it a group (a v3 zarr.json, a v2
// .zgroup), in path order.
func (t *Tree) Groups(ctx context.Context) ([]GroupInfo, error) {
	var out []GroupInfo
	err := t.walkDirs(ctx, func(dir *Node) error {
		switch {
		case dir.arr != nil || dir.m == nil || dir.m.err != nil:
		case dir.m.format == 3:
			out = append(out, GroupInfo{Path: dir.key, Format: 3})
		default: // v2 groups are plain directories of the tree
			_, err := t.store.Stat(ctx, join(dir.key, zarr.GroupFile))
			if err == nil {
				out = append(out, GroupInfo{Path: dir.key, Format: 2})
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	return out, err
}

// walkDirs calls visit for the root and every directory below it that is
// not inside an array (arrays are leaves: their directories hold chunks),
// in path order: each as its own documents make it (Tree.own), and a
// directory whose metadata cannot be read with it (dirMeta.err), which
// is a leaf too.
func (t *Tree) walkDirs(ctx context.Context, visit func(dir *Node) error) error {
	root, err := t.Root(ctx)
	if err != nil {
		return err
	}
	var walk func(dir *Node) error
	walk = func(dir *Node) error {
		if c, err := t.current(ctx, dir, ""); err == nil {
			dir = c
		} else if dir.m == nil || dir.m.err == nil {
			return err
		}
		if err := visit(dir); err != nil || dir.arr != nil || dir.m.err != nil {
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
	return walk(root)
}

// count adds up the chunk files under dir, a directory in an array (as
// the Zarr views present them).
func (t *Tree) count(ctx context.Context, dir *Node, info *ArrayInfo) error {
	ns, err := t.zarrChildren(ctx, dir)
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
