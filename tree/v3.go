package tree

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"syscall"

	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// Zarr v3 in the presented tree.
//
// A directory holding zarr.json is a v3 group or array. Its zarr.json is
// served rewritten (zarr.RewriteV3); under AsV2 it is hidden and the v2
// metadata files stand in for it (zarr.V2Files).
//
// The chunk tree of a raw v3 array is not a mirror of the store: it is
// computed from the metadata. Lookups and listings map each presented chunk
// key (Array.ChunkKey: "c/0/1", or "0/1" in the v2 view) to the stored value
// that holds it (Array.StoredKey): the chunk itself, or for a sharded array
// (presented unsharded) its shard. An unsharded chunk exists iff its stored
// key does. An inner chunk exists iff its shard exists and its index entry
// is not the empty marker, so listing the chunks of a sharded array, or
// looking one up, reads shard indexes (a range read each, kept in a
// bounded cache); stat never decodes. A shard whose index does not parse
// (a wrong crc32c, a short shard) is logged once; its inner chunks are
// listed, and reading them fails with EIO while every other chunk reads.
//
// Presented and stored keys use the same separator. With "/", the
// directories of the presented keys ("c/", "c/0/": Array.ParseChunkDir)
// are virtual: a directory exists when the stored directory of the shards
// it covers (Array.StoredChunkDir) does, so listing one that is not the
// last level reads no index (it may turn out empty).

// storedDir is the store key of the directory holding the stored values
// of x's presented chunks whose coordinates start with p ("/" separator
// only).
func storedDir(x *array, p []int) string {
	rel := x.a.StoredChunkDir(p)
	switch {
	case rel == "" && x.path == "":
		return "."
	case rel == "":
		return x.path
	}
	return join(x.path, rel)
}

// atoiBelow parses s as a decimal in [0, n) written without sign or
// leading zeros.
func atoiBelow(s string, n int) (int, bool) {
	c, err := strconv.Atoi(s)
	return c, err == nil && c >= 0 && c < n && strconv.Itoa(c) == s
}

// loadV3 reads dir/zarr.json: a v3 group or array, or a plain directory
// (plainDir) when there is none.
func (t *Tree) loadV3(ctx context.Context, dir string) (*dirMeta, error) {
	b, err := t.store.ReadKey(ctx, join(dir, zarr.MetadataFile))
	if errors.Is(err, fs.ErrNotExist) {
		return plainDir, nil
	}
	if err != nil {
		return nil, err
	}
	return t.v3Meta(ctx, dir, b, false)
}

// v3Meta is the metadata of the directory dir whose zarr.json holds b. A
// provisional one (from consolidated metadata) presents no files and, for
// a group, no consolidated metadata of its own: those are served from the
// directory's own documents (Tree.own).
func (t *Tree) v3Meta(ctx context.Context, dir string, b []byte, provisional bool) (*dirMeta, error) {
	m := &dirMeta{format: 3, provisional: provisional}
	if t.asV2 {
		m.hide = zarr.MetadataFile
	}
	a, g, err := zarr.ParseV3(b)
	switch {
	case err == nil && g != nil && provisional:
		return m, nil
	case err == nil && g != nil:
		return t.v3Group(ctx, dir, b, m)
	case err != nil: // all of ParseV3's errors say the metadata is invalid
		m.arr = &array{path: storePath(dir), why: err, doc: canonicalJSON(b)}
	default:
		m.arr = &array{path: storePath(dir), a: a, why: a.PassThrough, doc: canonicalJSON(b)}
	}
	x := m.arr
	if x.why == nil {
		t.relayout(x) // layout.go: under Native
	}
	if x.why == nil && t.asV2 {
		var files map[string][]byte
		v, err := x.a.AsV2()
		if err == nil {
			files, err = zarr.V2Files(b, self(v))
		}
		if err != nil {
			x.why = err
		} else {
			x.a = v
		}
		m.files = files
	}
	switch {
	case x.why != nil && t.asV2:
		m.skip, m.files = x.why, nil
		return m, nil
	case x.why != nil && provisional:
		return m, nil
	case x.why != nil:
		return m, t.loadNpy(ctx, dir, m, b)
	case !t.asV2 && !provisional:
		r, err := zarr.RewriteV3(b, self(x.a))
		if err != nil {
			return nil, &fs.PathError{Op: "rewrite", Path: join(dir, zarr.MetadataFile), Err: err}
		}
		m.files = map[string][]byte{zarr.MetadataFile: r}
	}
	x.v3 = true
	if provisional {
		return m, nil
	}
	return m, t.loadNpy(ctx, dir, m, b)
}

// v3Group completes m for the group in dir whose zarr.json holds b. Its
// consolidated metadata describes each array as the tree presents it
// (Tree.presenter), and, with Config.TrustConsolidated, the directories
// below (m.cons).
func (t *Tree) v3Group(ctx context.Context, dir string, b []byte, m *dirMeta) (*dirMeta, error) {
	m.gen = t.gen.Load()
	if t.trust {
		m.cons = parseConsolidated(dir, join(dir, zarr.MetadataFile), b)
		m.presents = m.cons != nil
	}
	b, present, err := t.presenter(ctx, dir, b)
	if err != nil {
		return nil, err
	}
	if t.asV2 {
		m.files, err = zarr.V2Files(b, present)
	} else {
		var r []byte
		if r, err = zarr.RewriteV3(b, present); err == nil {
			m.files = map[string][]byte{zarr.MetadataFile: r}
		}
	}
	if err != nil { // it parsed once; cannot happen
		m.files, m.hide = nil, ""
		t.log.WarnContext(ctx, "group metadata passed through unchanged", "key", join(dir, zarr.MetadataFile), "err", err)
	}
	return m, nil
}

// v3Child returns what name inside dir, a directory of a raw v3 array's
// chunk tree, serves. The metadata files were looked up by the caller.
func (t *Tree) v3Child(ctx context.Context, dir *Node, name string) (*Node, error) {
	x := dir.arr
	rel := join(dir.rel, name)
	if c, ok := x.a.ParseChunkKey(rel); ok {
		key, inner, sharded := x.a.StoredKey(c)
		skey := join(x.path, key)
		e, err := t.store.Stat(ctx, skey)
		if err != nil {
			if n := t.unconfirmed(ctx, dir, name, err); n != nil {
				return n, nil
			}
			return nil, notStored(dir, name, err)
		}
		if e.Dir {
			return nil, notStored(dir, name, notExist(join(dir.key, name)))
		}
		return t.v3Chunk(ctx, dir, name, c, skey, e, inner, sharded)
	}
	if p, ok := x.a.ParseChunkDir(rel); ok {
		e, err := t.store.Stat(ctx, storedDir(x, p))
		if doubtful(err) { // as Tree.unconfirmed, for the directories on the way to chunks
			t.log.WarnContext(ctx, "cannot tell whether a chunk directory exists: presented", "key", join(dir.key, name), "err", err)
			d := v3Dir(dir, name, p)
			d.unconfirmed = true
			return d, nil
		}
		if err != nil {
			return nil, err
		}
		if e.Dir {
			return v3Dir(dir, name, p), nil
		}
	}
	return nil, notExist(join(dir.key, name))
}

// v3Children lists the chunk tree of a raw v3 array under dir, without
// the metadata files.
func (t *Tree) v3Children(ctx context.Context, dir *Node) ([]*Node, error) {
	x := dir.arr
	switch {
	case dir.rel != "":
		return t.v3Level(ctx, dir, dir.coords)
	case len(x.a.Grid()) == 0:
		n, err := t.v3Child(ctx, dir, x.a.ChunkKey(nil))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return []*Node{n}, nil
	case x.a.Separator != "/":
		return t.v3Flat(ctx, dir)
	case x.a.KeyPrefix() == "":
		return t.v3Level(ctx, dir, []int{})
	}
	e, err := t.store.Stat(ctx, storedDir(x, nil))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !e.Dir) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []*Node{v3Dir(dir, x.a.KeyPrefix(), []int{})}, nil
}

// v3Level lists the presented directory whose keys start with the
// coordinates p ("/" separator): directories for the next coordinate, or
// the chunks when one coordinate is left.
func (t *Tree) v3Level(ctx context.Context, dir *Node, p []int) ([]*Node, error) {
	a := dir.arr.a
	sdir := storedDir(dir.arr, p)
	es, err := t.store.List(ctx, sdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	k, last := len(p), len(p) == len(a.Grid())-1
	per := a.ChunksPerShard()[k]
	var out []*Node
	for _, e := range es {
		s, ok := atoiBelow(e.Name, a.StoredGrid()[k])
		if !ok || e.Dir == last {
			continue
		}
		for v := s * per; v < min((s+1)*per, a.Grid()[k]); v++ {
			c := append(slices.Clip(p), v)
			if !last {
				out = append(out, v3Dir(dir, strconv.Itoa(v), c))
				continue
			}
			_, inner, sharded := a.StoredKey(c)
			n, err := t.v3Chunk(ctx, dir, strconv.Itoa(v), c, join(sdir, e.Name), e, inner, sharded)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
	}
	return out, nil
}

// v3Flat lists the chunks of a raw v3 array whose keys use the "."
// separator: all of them are files in the array's directory.
func (t *Tree) v3Flat(ctx context.Context, dir *Node) ([]*Node, error) {
	x, a := dir.arr, dir.arr.a
	es, err := t.store.List(ctx, dir.key)
	if err != nil {
		return nil, err
	}
	var out []*Node
	add := func(c []int, skey string, e store.Entry, inner int, sharded bool) error {
		n, err := t.v3Chunk(ctx, dir, a.ChunkKey(c), c, skey, e, inner, sharded)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err == nil {
			out = append(out, n)
		}
		return err
	}
	for _, e := range es {
		sc, ok := a.ParseStoredKey(e.Name)
		if !ok || e.Dir {
			continue
		}
		skey := join(x.path, e.Name)
		if a.Shard() == nil {
			if err := add(sc, skey, e, 0, false); err != nil {
				return nil, err
			}
			continue
		}
		for i := range a.Shard().InnerChunks() {
			if c, ok := a.InnerCoords(sc, i); ok {
				if err := add(c, skey, e, i, true); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// notExist is the error for a presented path that does not exist. It
// satisfies errors.Is(err, fs.ErrNotExist) and reads like the operating
// system's: "lookup KEY: no such file or directory".
func notExist(key string) error {
	return &fs.PathError{Op: "lookup", Path: key, Err: syscall.ENOENT}
}

// v3Dir is the presented directory name in dir, fixing the coordinates p.
func v3Dir(dir *Node, name string, p []int) *Node {
	return &Node{key: join(dir.key, name), kind: kindDir, arr: dir.arr, rel: join(dir.rel, name), coords: p}
}

// v3Chunk returns the chunk file name in dir, at coords, whose stored value
// is skey, described by e, or an error wrapping fs.ErrNotExist when it is
// absent (an empty entry in its shard's index). An inner chunk whose shard
// index does not parse is present: reading it fails.
func (t *Tree) v3Chunk(ctx context.Context, dir *Node, name string, coords []int, skey string, e store.Entry, inner int, sharded bool) (*Node, error) {
	x := dir.arr
	n := &Node{key: join(dir.key, name), kind: kindChunk, size: x.a.ChunkLen(), stored: e.Size, version: e.Version,
		arr: x, rel: join(dir.rel, name), coords: coords}
	if !sharded {
		return n, nil
	}
	n.stored = 0
	ix, err := t.indexes.ShardIndex(ctx, x.a, skey, e.Size)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil, err
	case err != nil:
		return n, nil // its shard is unreadable: reads fail with EIO
	}
	_, l, err := ix.Entry(inner)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &fs.PathError{Op: "lookup", Path: n.key, Err: ErrNotStored}
	}
	if err == nil {
		n.stored = l
	}
	return n, nil
}
