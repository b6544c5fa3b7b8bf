// Package fs presents a compressed Zarr v2 store as an uncompressed one,
// through go-fuse (Mount) and without it (Tree.ReadFile, for zfuse cat).
//
// The one fact to know: a Tree decides what every path serves, and both the
// mount and zfuse cat ask it, so they cannot disagree. Directories mirror the
// store. In an array (a directory holding .zarray), .zarray is served
// rewritten to say "no compression" and chunk files have the decoded size
// from metadata (stat never decodes) and read decoded bytes; consolidated
// .zmetadata is rewritten entry by entry; everything else, and every file of
// an array that cannot be presented raw, is served as stored.
package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"path"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// Config configures a Tree.
type Config struct {
	// Store is the compressed store. It should be a store.Lister (to list
	// directories) and a store.Stater or RangeReader (for speed).
	Store store.Store
	// Chunks serves decoded chunks. Nil means a DecodedCache over Store with
	// CacheBytes and Workers.
	Chunks     Chunks
	CacheBytes int64 // decoded-chunk budget; 0 means 256 MiB
	Workers    int   // concurrent decodes; 0 means GOMAXPROCS
	// Log receives Warn lines for arrays passed through and Error lines for
	// failed requests. Nil means discard.
	Log *slog.Logger
}

// A Tree decides what each path of the presented tree serves. Metadata is
// read once per array and kept: the store must not change while a Tree
// uses it. A Tree is safe for concurrent use.
type Tree struct {
	store  store.Store  // immutable
	chunks Chunks       // immutable
	log    *slog.Logger // immutable

	loads  singleflight.Group // one metadata load per array directory at a time
	arrays sync.Map           // array directory key -> *array (nil: not an array)
	metas  sync.Map           // .zmetadata key -> []byte, presented
}

// New returns a Tree over cfg.Store.
func New(cfg Config) *Tree {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	chunks := cfg.Chunks
	if chunks == nil {
		budget, workers := cfg.CacheBytes, cfg.Workers
		if budget <= 0 {
			budget = 256 << 20
		}
		if workers <= 0 {
			workers = runtime.GOMAXPROCS(0)
		}
		chunks = NewDecodedCache(cfg.Store, budget, workers)
	}
	return &Tree{store: cfg.Store, chunks: chunks, log: log}
}

// kind says how a path's bytes are produced.
type kind int

const (
	kindDir    kind = iota // a directory of the store
	kindMeta               // metadata served from memory (rewritten or as stored)
	kindChunk              // a chunk of a raw array: decoded on read
	kindStored             // any other file: the stored bytes
)

// A node is what one path serves. Nodes are immutable.
type node struct {
	key    string // store key ("." for the root)
	kind   kind
	size   int64  // presented size
	stored int64  // size in the store
	data   []byte // kindMeta: the bytes served; shared, never modified
	arr    *array // the array this path is or lies in; nil outside arrays
	rel    string // path relative to arr's directory ("" for the directory itself)
	coords []int  // kindChunk: grid coordinates
}

func (n *node) name() string { return path.Base(n.key) }

// An array is one array directory as the tree presents it.
type array struct {
	path string      // the array's key prefix in the store: its directory key, "" for the root (as readahead.Loader.Chunk takes it)
	a    *zarr.Array // nil when the metadata does not parse
	meta []byte      // .zarray as served
	why  error       // non-nil: passed through unchanged, and why
}

// raw reports whether chunks are served decoded.
func (x *array) raw() bool { return x.why == nil }

// root returns the node of the store root.
func (t *Tree) root(ctx context.Context) (*node, error) {
	x, err := t.array(ctx, ".")
	if err != nil {
		return nil, err
	}
	return &node{key: ".", kind: kindDir, arr: x}, nil
}

// child returns what name inside the directory dir serves.
func (t *Tree) child(ctx context.Context, dir *node, name string) (*node, error) {
	key := join(dir.key, name)
	if !iofs.ValidPath(key) || name == "." {
		return nil, fmt.Errorf("%s: %w", key, store.ErrOutside)
	}
	e, err := store.Stat(ctx, t.store, key)
	if err != nil {
		return nil, err
	}
	e.Name = name
	return t.node(ctx, dir, e)
}

// children lists what the directory dir holds, sorted by name.
func (t *Tree) children(ctx context.Context, dir *node) ([]*node, error) {
	es, err := store.List(ctx, t.store, dir.key)
	if err != nil {
		return nil, err
	}
	out := make([]*node, 0, len(es))
	for _, e := range es {
		n, err := t.node(ctx, dir, e)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// node decides what the store entry e inside dir serves. This function is
// the presented-tree rules.
func (t *Tree) node(ctx context.Context, dir *node, e store.Entry) (*node, error) {
	key := join(dir.key, e.Name)
	n := &node{key: key, stored: e.Size, size: e.Size, kind: kindStored, arr: dir.arr}
	if dir.arr != nil {
		n.rel = join(dir.rel, e.Name)
	}
	switch {
	case e.Dir && dir.arr != nil: // a directory of nested chunk keys
		n.kind = kindDir
	case e.Dir:
		x, err := t.array(ctx, key)
		if err != nil {
			return nil, err
		}
		n.kind, n.arr = kindDir, x
	case dir.arr != nil && n.rel == zarr.ArrayFile:
		n.kind, n.data, n.size = kindMeta, dir.arr.meta, int64(len(dir.arr.meta))
	case dir.arr != nil:
		x := dir.arr
		if !x.raw() {
			break
		}
		if c, ok := x.a.ParseChunkKey(n.rel); ok {
			n.kind, n.coords, n.size = kindChunk, c, x.a.ChunkLen()
		}
	case e.Name == zarr.ConsolidatedFile:
		b, err := t.consolidated(ctx, key)
		if err != nil {
			return nil, err
		}
		n.kind, n.data, n.size = kindMeta, b, int64(len(b))
	}
	return n, nil
}

// array returns the array whose directory is dir, nil if dir holds no
// .zarray. Arrays are loaded once and kept.
func (t *Tree) array(ctx context.Context, dir string) (*array, error) {
	if v, ok := t.arrays.Load(dir); ok {
		return v.(*array), nil
	}
	v, err, _ := t.loads.Do(dir, func() (any, error) {
		if v, ok := t.arrays.Load(dir); ok {
			return v, nil
		}
		x, err := t.loadArray(context.WithoutCancel(ctx), dir)
		if err == nil {
			t.arrays.Store(dir, x)
		}
		return x, err
	})
	if err != nil {
		return nil, err
	}
	return v.(*array), nil
}

// loadArray reads and parses dir/.zarray. Arrays that cannot be presented
// raw, or whose metadata is invalid, are passed through with one Warn line.
func (t *Tree) loadArray(ctx context.Context, dir string) (*array, error) {
	key := join(dir, zarr.ArrayFile)
	b, err := t.store.ReadKey(ctx, key)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	x := &array{path: storePath(dir), meta: b}
	x.a, err = zarr.ParseV2(b)
	switch {
	case err != nil && errors.Is(err, zarr.ErrInvalid):
		x.a, x.why = nil, err
	case err != nil:
		return nil, fmt.Errorf("%s: %w", key, err)
	case x.a.PassThrough != nil:
		x.why = x.a.PassThrough
	}
	if x.why != nil {
		t.log.WarnContext(ctx, "array passed through unchanged", "key", dir, "err", x.why)
		return x, nil
	}
	if nested, err := t.legacyNested(ctx, dir, x.a); err != nil {
		return nil, err
	} else if nested {
		// A NestedDirectoryStore array: "0/0" keys, no dimension_separator.
		// Present it with the separator named, so that readers find its
		// chunks and Array.ChunkKey names them as stored.
		b = setSeparator(b, "/")
		if x.a, err = zarr.ParseV2(b); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	if x.meta, err = zarr.RewriteV2Array(b); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return x, nil
}

// legacyNested reports whether an array without "dimension_separator" keeps
// its chunks in nested directories ("0/0"), as zarr-python 2's
// NestedDirectoryStore wrote them. One-dimensional arrays look the same
// either way.
func (t *Tree) legacyNested(ctx context.Context, dir string, a *zarr.Array) (bool, error) {
	if !a.Legacy() || len(a.Grid()) < 2 {
		return false, nil
	}
	es, err := store.List(ctx, t.store, dir)
	if err != nil {
		return false, err
	}
	for _, e := range es {
		if i, err := strconv.Atoi(e.Name); e.Dir && err == nil && i >= 0 && i < a.Grid()[0] {
			return true, nil
		}
	}
	return false, nil
}

// setSeparator names sep in a .zarray that names no separator. zarray has
// parsed as a JSON object with members, so it starts with '{' (after
// spaces) and the key is not there yet.
func setSeparator(zarray []byte, sep string) []byte {
	i := bytes.IndexByte(zarray, '{')
	return slices.Concat(zarray[:i+1], []byte(`"dimension_separator": `+strconv.Quote(sep)+`, `), zarray[i+1:])
}

// consolidated returns the presented .zmetadata at key: rewritten entry by
// entry, or as stored (with a Warn line) when it does not parse.
func (t *Tree) consolidated(ctx context.Context, key string) ([]byte, error) {
	if v, ok := t.metas.Load(key); ok {
		return v.([]byte), nil
	}
	b, err := t.store.ReadKey(ctx, key)
	if err != nil {
		return nil, err
	}
	if r, err := zarr.RewriteV2Consolidated(b); err != nil {
		t.log.WarnContext(ctx, "consolidated metadata passed through unchanged", "key", key, "err", err)
	} else {
		b = r
	}
	v, _ := t.metas.LoadOrStore(key, b)
	return v.([]byte), nil
}

// join joins a directory and a name. The store root is "." and an array's
// own directory is "" relative to itself. Unlike path.Join it does not
// clean: "a" and ".." give "a/..", which callers refuse as invalid.
func join(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + name
}

// storePath turns a directory key into a key prefix: "" for the root ".".
func storePath(dir string) string {
	if dir == "." {
		return ""
	}
	return dir
}
