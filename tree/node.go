package tree

import (
	"bytes"
	"path"

	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/zarr"
)

// A Node is what one path of the tree serves, as Lookup, Child and
// Children find it: a directory, or a file and how its bytes are made.
// Nodes are immutable: where the store changes (Config.Refresh), the path
// is looked up again and serves a new Node.
type Node struct {
	key     string // presented path from the root ("." for the root); the store key outside v3 arrays
	kind    kind
	size    int64    // presented size
	stored  int64    // size in the store (of a sharded array's chunk: its byte range in the shard)
	version string   // the stored value's store.Entry.Version (of a sharded array's chunk: its shard's); "" for directories and metadata
	data    []byte   // kindMeta: the bytes served; kindNpy: the header; shared, never modified
	arr     *array   // the array this path is or lies in; nil outside arrays
	rel     string   // path relative to arr's directory ("" for the directory itself)
	coords  []int    // kindChunk: grid coordinates; kindDir in a v3 array: the coordinates its path fixes
	m       *dirMeta // kindDir: what the directory's own metadata makes of it; nil inside arrays
	nc      *ncFile  // kindNc: the group's netCDF file
	// unconfirmed: presented though the store could not say whether it
	// exists (Tree.unconfirmed); the kernel is to ask again soon.
	unconfirmed bool
	// presents: consolidated metadata, presented as a tree that trusts it
	// presents each array (consolidated.go); it may be presented anew.
	presents bool
}

// kind says how a path's bytes are produced.
type kind int

const (
	kindDir    kind = iota // a directory of the store, or of a v3 array's chunk keys
	kindMeta               // metadata served from memory (rewritten or as stored)
	kindChunk              // a chunk of a raw array: decoded on read
	kindStored             // any other file: the stored bytes
	kindNpy                // an array's .npy file (AsNpy): its header, then its chunks decoded on read (npy.go)
	kindNc                 // a group's netCDF file (AsNc): its header, then its variables' chunks decoded on read (nc.go)
)

// Path returns the presented path of n from the root: "." for the root,
// "temp/0.0" for a chunk file of the array temp.
func (n *Node) Path() string { return n.key }

// Name returns the last element of n's path.
func (n *Node) Name() string { return path.Base(n.key) }

// IsDir reports whether n is a directory.
func (n *Node) IsDir() bool { return n.kind == kindDir }

// Size returns the presented size of a file: of a chunk file, its decoded
// size. Finding it never decodes.
func (n *Node) Size() int64 { return n.size }

// Version returns the stored version of what n serves
// (store.Entry.Version; of an inner chunk of a shard, its shard's), for
// logs; "" for directories and metadata.
func (n *Node) Version() string { return n.version }

// Unconfirmed reports whether n is presented though the store could not
// say whether it exists (a server error on its lookup): its reads fail or
// succeed as the store does by then, and whoever caches the entry should
// look it up again at its next use.
func (n *Node) Unconfirmed() bool { return n.unconfirmed }

// MayChange reports whether n, a metadata file, may serve other bytes at
// its next lookup although the store does not change: consolidated
// metadata that a tree trusting it (Config.TrustConsolidated) presents
// anew where an array's own documents turn out to say otherwise. Whoever
// caches it should look it up again at its next use, and serve what that
// lookup finds where it has changed (Changed).
func (n *Node) MayChange() bool { return n.presents }

// IsChunk reports whether n is a chunk file: one chunk of an array
// presented raw, decoded when read.
func (n *Node) IsChunk() bool { return n.kind == kindChunk }

// Chunk returns the chunk that the chunk file n serves: its array and its
// index in the chunk grid (zarr.Array.Linear), as readahead's Placer names
// it. It returns nil and 0 when n is not a chunk file.
func (n *Node) Chunk() (*zarr.Array, int64) {
	if n.kind != kindChunk {
		return nil, 0
	}
	return n.arr.a, n.arr.a.Linear(n.coords)
}

// Array returns the array whose directory n is, where the array is
// presented raw (its chunk files read decoded); nil for any other node.
func (n *Node) Array() *zarr.Array {
	if n.m == nil || n.m.arr == nil || !n.m.arr.raw() {
		return nil
	}
	return n.m.arr.a
}

// ChunkPath returns the presented path of the file of chunk i (an index in
// the chunk grid) in n, the directory of a raw array (Array is not nil):
// in a v3 array's computed tree its chunk key, in a v2 array's mirror of
// the store its stored key.
func (n *Node) ChunkPath(i int64) string {
	x := n.m.arr
	rel := x.a.ChunkKey(x.a.Coords(i))
	if !x.v3 {
		rel, _, _ = x.a.StoredKey(x.a.Coords(i))
	}
	return join(n.key, rel)
}

// Changed reports whether n is another version of the file o (both at one
// path): another kind, size or stored version, or other metadata bytes.
func (o *Node) Changed(n *Node) bool {
	return o.kind != n.kind || o.size != n.size || o.stored != n.stored || o.version != n.version ||
		o.unconfirmed != n.unconfirmed || (o.kind == kindMeta && !bytes.Equal(o.data, n.data))
}

// ref names n's chunk, for a read by pid (n is a chunk file).
func (n *Node) ref(pid uint32) readahead.Ref {
	return readahead.Ref{Array: n.arr.a, Path: n.arr.path, Coords: n.coords, PID: pid}
}
