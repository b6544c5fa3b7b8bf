// Package tree decides what a mount of a compressed Zarr store (v2 or v3)
// presents: which paths exist, and what bytes each serves, as an
// uncompressed store. It knows nothing of FUSE: package fusemount serves a
// Tree to the kernel, and zfuse cat reads one itself (Tree.CopyFile).
//
// The one fact to know: a Tree decides what every path serves, and both
// the mount and zfuse cat ask it, so they cannot disagree. Directories
// mirror the store. In a v2 array (a directory holding .zarray), .zarray
// is served rewritten to say "no compression" and chunk files have the
// decoded size from metadata (stat never decodes) and read decoded bytes;
// consolidated .zmetadata is rewritten entry by entry, each as the tree
// presents its array (Tree.presenter); everything else, and every file of
// an array that cannot be presented raw, is served as stored. A tree over
// a remote store trusts consolidated metadata (Config.TrustConsolidated,
// consolidated.go): the directories it describes are made from its
// entries until their own documents are read.
//
// A directory holding zarr.json is a v3 group or array (v3.go): zarr.json is
// served rewritten, and a v3 array's chunk tree is computed from its
// metadata (and shard indexes), not mirrored: a sharded array is presented
// unsharded. The views are presentations of the same tree: with
// Config.AsV2, v3 nodes are presented as v2 ones instead; with
// Config.AsNpy, every array is one .npy file (npy.go); with Config.AsNc,
// every group is one netCDF file (nc.go). Config.Native presents every
// array in C order, little-endian (layout.go).
// A directory holding both .zarray and zarr.json presents its v2 view, and
// serves zarr.json only where it describes the same decoded chunks
// (beside.go).
package tree

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zfuse/zfuse/internal/flight"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// Config configures a Tree.
type Config struct {
	// Store is the compressed store.
	Store store.Store
	// Chunks serves decoded chunks, a *readahead.Loader over Store. Nil
	// makes a Tree for metadata only (metaonly.go): it lists and reads
	// metadata, reading shard indexes from Store itself, and its chunk
	// files fail to read with ErrNoChunks.
	Chunks Chunks
	// AsV2 presents Zarr v3 groups and arrays as Zarr v2 ones (.zgroup,
	// .zattrs, .zmetadata, .zarray, v2 chunk keys) and hides zarr.json, for
	// readers that only know v2. v3 arrays with no v2 equivalent are not
	// shown (a Warn line, and zfuse info, say so).
	AsV2 bool
	// AsNpy presents every array as one NumPy .npy file, NAME.npy, with
	// its attributes beside it as NAME.json, for readers of flat array
	// files (npy.go). Arrays that have no fixed-size raw layout are not
	// shown (a Warn line, and zfuse info, say so). It does not combine
	// with AsV2.
	AsNpy bool
	// AsNc presents every group as one netCDF classic file, NAME.nc,
	// holding the group's arrays as variables, for netCDF readers (nc.go).
	// Arrays with no netCDF type are left out (a Warn line, and zfuse
	// info, say so). It does not combine with AsV2, AsNpy or Native.
	AsNc bool
	// Native presents every array in C order, little-endian, whatever
	// its stored order and byte order: metadata says so, and chunks are
	// converted while decoded (layout.go).
	Native bool
	// RootName is the name, without extension, of the file of an array
	// at the store root under AsNpy, and of the root group's file under
	// AsNc. "" means "array".
	RootName string
	// Log receives Warn lines for arrays passed through and Error lines for
	// failed requests. Nil means discard.
	Log *slog.Logger
	// Refresh, when positive, is how long metadata read and listings are
	// believed: after it they are read again, and a mount looks up each
	// file's stored version again (fusemount.Mount). 0 means the store
	// does not change while the Tree uses it: metadata is read once and
	// kept.
	Refresh time.Duration
	// TrustConsolidated presents what consolidated metadata (a v2
	// .zmetadata, a v3 group's consolidated zarr.json) describes as it
	// describes it, as zarr-python does, without reading each array's
	// own documents first: a tree over a remote store then starts and
	// lists a store of thousands of arrays in a few requests. An array's
	// own documents are read when something inside its directory is
	// first looked up or listed; where they differ, they win, and the
	// consolidated metadata is presented anew (consolidated.go). Without
	// it, each array's own documents are read before the consolidated
	// metadata that holds a copy of them is presented, as suits a local
	// store, where they cost a file read each.
	TrustConsolidated bool
}

// A Tree decides what each path of the presented tree serves. Metadata is
// read once per directory and kept, for Config.Refresh when that is set,
// else for the life of the Tree (then the store must not change while a
// Tree uses it). A Tree is safe for concurrent use.
//
// zfuse cat and info ask it for whole files and arrays (ReadFile,
// CopyFile, Arrays). A mount walks it (Root, Lookup, Child, Children),
// serves files (ReadAt, and Open under passthrough), forgets the ones that
// changed (Forget), says once how it serves (SetServing), and turns a
// failed request into its errno (Errno).
type Tree struct {
	store    store.Store   // immutable
	chunks   Chunks        // immutable; nil: metadata only
	indexes  ShardIndexes  // immutable: chunks, or a storeIndexes when it is nil
	log      *slog.Logger  // immutable
	asV2     bool          // immutable
	asNpy    bool          // immutable
	asNc     bool          // immutable
	native   bool          // immutable
	rootName string        // immutable: RootName under AsNpy
	refresh  time.Duration // immutable; 0: metadata is kept for ever
	trust    bool          // immutable: Config.TrustConsolidated

	loads  flight.Group[*dirMeta] // one metadata load per directory at a time
	failed failures               // failed requests logged lately (errno)
	keepMu sync.Mutex             // held while dirs is changed (keep)
	dirs   sync.Map               // directory key -> loaded[*dirMeta]
	metas  sync.Map               // .zmetadata key -> loaded[[]byte], presented
	ncs    ncFiles                // under AsNc: each group's netCDF file (nc.go)
	// gen counts the directories whose own documents turned out to
	// differ from what consolidated metadata said of them (own): what
	// presents consolidated metadata is presented anew once it grows.
	gen atomic.Int64
}

// A loaded value is metadata as read at a time, when t.gen was gen.
type loaded[V any] struct {
	v   V
	at  time.Time
	gen int64
}

// Fresh reports whether what was read or looked up at at is still
// believed (Config.Refresh): always, for a store that does not change.
func (t *Tree) Fresh(at time.Time) bool {
	return t.refresh <= 0 || time.Since(at) < t.refresh
}

// Refresh returns Config.Refresh: 0 when the store does not change while
// the Tree uses it.
func (t *Tree) Refresh() time.Duration { return t.refresh }

// Log returns the logger of Config.Log, where a mount of the Tree logs
// too.
func (t *Tree) Log() *slog.Logger { return t.log }

// New returns a Tree over cfg.Store.
func New(cfg Config) *Tree {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var indexes ShardIndexes = cfg.Chunks
	if cfg.Chunks == nil {
		indexes = &storeIndexes{store: cfg.Store}
	}
	if n := btoi(cfg.AsV2) + btoi(cfg.AsNpy) + btoi(cfg.AsNc); n > 1 || (cfg.AsNc && cfg.Native) {
		panic("tree: Config.AsV2, AsNpy, AsNc and Native conflict")
	}
	root := cfg.RootName
	if root == "" {
		root = "array"
	}
	return &Tree{store: cfg.Store, chunks: cfg.Chunks, indexes: indexes, log: log, asV2: cfg.AsV2, asNpy: cfg.AsNpy, asNc: cfg.AsNc, native: cfg.Native, rootName: root, refresh: max(cfg.Refresh, 0),
		trust: cfg.TrustConsolidated}
}

// An array is one array directory as the tree presents it.
type array struct {
	path string      // the array's key prefix in the store: its directory key, "" for the root (as readahead.Loader.Chunk takes it)
	a    *zarr.Array // as presented (for v3 under AsV2: its v2 view); nil when the metadata does not parse
	why  error       // non-nil: passed through unchanged (or, under AsV2, not shown), and why
	v3   bool        // a raw v3 array, whose chunk tree is computed from its metadata (v3.go)
	doc  []byte      // its stored metadata document (.zarray, zarr.json), canonical JSON (sameArray)
}

// raw reports whether chunks are served decoded.
func (x *array) raw() bool { return x.why == nil }

// A dirMeta is what a directory's metadata makes of it. It is immutable.
type dirMeta struct {
	arr    *array            // non-nil: an array directory
	format int               // 2 or 3 for directories with metadata; 0 for plain ones
	files  map[string][]byte // metadata files served from memory in this directory, by name
	hide   string            // a stored name not shown ("zarr.json" under AsV2)
	skip   error             // non-nil: under AsV2, the directory is not shown, and why
	npy    *npyFile          // under AsNpy, an array directory: what its .npy file holds
	// zarrJSON, for a v2 array directory that also holds zarr.json, says
	// what is served of it (beside.go): "rewritten too", "as stored", or
	// "hidden: " and why; "" when there is none.
	zarrJSON string
	// presents: files hold consolidated metadata presented as the tree
	// presented each array when t.gen was gen (a v3 group's zarr.json;
	// under AsV2 its .zmetadata): stale once t.gen has grown.
	presents bool
	gen      int64

	// With Config.TrustConsolidated (consolidated.go):
	cons        *consolidated // the consolidated metadata the directory holds, describing those below it; nil if none
	provisional bool          // made from an entry of consolidated metadata above: its own documents are not read yet
	tried       time.Time     // provisional: when reading its own documents last failed; zero if never
	// flat, for a legacy array found nested ("0/0") once its own
	// documents were read, is the array as its consolidated entry
	// presented it before, with "0.0" keys: chunks are found under those
	// names too (Tree.flatChunk), for readers of that presentation.
	flat *zarr.Array

	// err: the directory's metadata could not be read (a server error
	// after the store's retries). It is presented as a directory all the
	// same; looking into it reads its metadata again, and fails with err
	// while that fails.
	err error
}

// plainDir is the dirMeta of directories without metadata.
var plainDir = &dirMeta{}

// serves reports whether the stored name is hidden or replaced by a file
// served from memory.
func (m *dirMeta) serves(name string) bool {
	_, ok := m.files[name]
	return ok || name == m.hide
}

// Root returns the node of the store root.
func (t *Tree) Root(ctx context.Context) (*Node, error) {
	m, err := t.dirMeta(ctx, ".")
	if err != nil {
		return nil, err
	}
	return &Node{key: ".", kind: kindDir, arr: m.arr, m: m}, nil
}

// Child returns what name inside the directory dir serves. A name that
// is not there gives an error satisfying errors.Is(err, fs.ErrNotExist)
// (ErrNotStored for a chunk of the grid the store does not hold).
func (t *Tree) Child(ctx context.Context, dir *Node, name string) (*Node, error) {
	key := join(dir.key, name)
	if !fs.ValidPath(key) || name == "." {
		return nil, &fs.PathError{Op: "lookup", Path: key, Err: store.ErrOutside}
	}
	if t.asNpy {
		return t.npyChild(ctx, dir, name)
	}
	if t.asNc {
		return t.ncChild(ctx, dir, name)
	}
	return t.zarrChild(ctx, dir, name)
}

// zarrChild is child in the Zarr views (not AsNpy), for a valid name.
func (t *Tree) zarrChild(ctx context.Context, dir *Node, name string) (*Node, error) {
	key := join(dir.key, name)
	dir, err := t.current(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	if m := dir.m; m != nil {
		if m.skip != nil || name == m.hide {
			return nil, notExist(key)
		}
		if b, ok := m.files[name]; ok {
			return metaNode(dir, name, b), nil
		}
	}
	if x := dir.arr; x != nil && x.v3 {
		return t.v3Child(ctx, dir, name)
	}
	var e store.Entry
	if dir.arr == nil && t.knownDir(key) {
		e.Dir = true // no request
	} else {
		e, err = t.store.Stat(ctx, key)
	}
	if errors.Is(err, fs.ErrNotExist) && dir.m != nil && dir.m.flat != nil {
		if n, err := t.flatChunk(ctx, dir, name); n != nil || err != nil {
			return n, err
		}
	}
	if err != nil {
		if n := t.unconfirmed(ctx, dir, name, err); n != nil {
			return n, nil
		}
		return nil, notStored(dir, name, err)
	}
	e.Name = name
	n, err := t.node(ctx, dir, e)
	if err == nil && n.m != nil && n.m.skip != nil {
		return nil, notExist(key)
	}
	return n, err
}

// unconfirmed returns the chunk file name in dir, the directory of a raw
// array, when the store failed to say whether it exists (err, from Stat,
// says neither that it does nor that it does not): the file is presented,
// and reading it fails or succeeds as the store does by then (EIO where
// the chunk turns out missing); the kernel looks it up again at its next
// use (Node.Unconfirmed), when a missing chunk is ENOENT again. A failed
// lookup would hide the chunk instead: zarr-python (os.path.isfile) and
// other readers take a file they cannot stat for a missing chunk, and read
// the fill value, silently wrong. It returns nil for other names and
// errors.
func (t *Tree) unconfirmed(ctx context.Context, dir *Node, name string, err error) *Node {
	x := dir.arr
	if x == nil || !x.raw() || !doubtful(err) {
		return nil
	}
	rel := join(dir.rel, name)
	c, ok := x.a.ParseChunkKey(rel)
	if !ok {
		return nil
	}
	t.log.WarnContext(ctx, "cannot tell whether a chunk exists: presented, and its reads will tell", "key", join(dir.key, name), "err", err)
	return &Node{key: join(dir.key, name), kind: kindChunk, size: x.a.ChunkLen(), arr: x, rel: rel, coords: c, unconfirmed: true}
}

// ErrNotStored means a chunk key of an array presented raw has no stored
// value: a missing chunk, which the tree does not present and readers
// read as the array's fill value. It matches fs.ErrNotExist too (the
// mount answers ENOENT).
var ErrNotStored error = notStoredError{}

type notStoredError struct{}

func (notStoredError) Error() string {
	return "a chunk not stored: readers read it as the fill value"
}

func (notStoredError) Is(target error) bool { return target == fs.ErrNotExist }

// notStored is the error of looking up name in dir when the store says
// err: ErrNotStored for a chunk key of a raw array the store does not
// hold, else err.
func notStored(dir *Node, name string, err error) error {
	x := dir.arr
	if x == nil || !x.raw() || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, ok := x.a.ParseChunkKey(join(dir.rel, name)); !ok {
		return err
	}
	return &fs.PathError{Op: "lookup", Path: join(dir.key, name), Err: ErrNotStored}
}

// doubtful reports whether err, from the store, leaves open whether the
// key exists (a server error, a timeout), as opposed to saying it does not,
// refusing the key, or ending with its request.
func doubtful(err error) bool {
	return err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, store.ErrOutside) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// Children lists what the directory dir holds, sorted by name.
func (t *Tree) Children(ctx context.Context, dir *Node) ([]*Node, error) {
	if t.asNpy {
		return t.npyChildren(ctx, dir)
	}
	if t.asNc {
		return t.ncChildren(ctx, dir)
	}
	return t.zarrChildren(ctx, dir)
}

// zarrChildren is children in the Zarr views (not AsNpy): for zfuse info,
// the chunk files of an array under AsNpy too.
func (t *Tree) zarrChildren(ctx context.Context, dir *Node) ([]*Node, error) {
	ns, err := t.list(ctx, dir)
	return slices.DeleteFunc(ns, func(n *Node) bool { return n.m != nil && n.m.skip != nil }), err
}

// list is zarrChildren with the directories that AsV2 does not show (for
// zfuse info).
func (t *Tree) list(ctx context.Context, dir *Node) ([]*Node, error) {
	dir, err := t.current(ctx, dir, "")
	if err != nil {
		return nil, err
	}
	var out []*Node
	if m := dir.m; m != nil {
		if m.skip != nil {
			return nil, nil
		}
		for name, b := range m.files {
			out = append(out, metaNode(dir, name, b))
		}
	}
	if x := dir.arr; x != nil && x.v3 {
		ns, err := t.v3Children(ctx, dir)
		if err != nil {
			return nil, err
		}
		out = append(out, ns...)
	} else {
		es, err := t.store.List(ctx, dir.key)
		if err != nil {
			return nil, err
		}
		if m := dir.m; m != nil {
			es = slices.DeleteFunc(es, func(e store.Entry) bool { return m.serves(e.Name) })
		}
		ns, err := t.nodes(ctx, dir, es)
		if err != nil {
			return nil, err
		}
		out = append(out, ns...)
	}
	slices.SortFunc(out, func(a, b *Node) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// listConcurrency bounds the directories whose metadata a listing reads
// at once (nodes): a remote store answers each in a round trip.
const listConcurrency = 32

// nodes returns the nodes of the store entries es inside dir, leaving out
// chunks beyond the grid (node). The metadata of the directories among
// them is read concurrently: listing a group of many arrays without
// consolidated metadata is a round trip or two, not one per array.
func (t *Tree) nodes(ctx context.Context, dir *Node, es []store.Entry) ([]*Node, error) {
	out := make([]*Node, len(es))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(listConcurrency)
	for i, e := range es {
		load := func(ctx context.Context) error {
			n, err := t.node(ctx, dir, e)
			if errors.Is(err, fs.ErrNotExist) { // a chunk beyond the grid (node)
				return nil
			}
			out[i] = n
			return err
		}
		if !e.Dir || dir.arr != nil { // no metadata to read
			if err := load(ctx); err != nil {
				return nil, err
			}
			continue
		}
		g.Go(func() error { return load(gctx) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(out, func(n *Node) bool { return n == nil }), nil
}

// metaNode is the file name in dir served from memory.
func metaNode(dir *Node, name string, b []byte) *Node {
	n := &Node{key: join(dir.key, name), kind: kindMeta, data: b, size: int64(len(b)), stored: int64(len(b)), arr: dir.arr,
		presents: dir.m != nil && dir.m.presents}
	if dir.arr != nil {
		n.rel = join(dir.rel, name)
	}
	return n
}

// node decides what the store entry e inside dir serves, for directories
// that mirror the store (not v3 arrays, and not the names dir's metadata
// serves from memory). This function is the presented-tree rules.
func (t *Tree) node(ctx context.Context, dir *Node, e store.Entry) (*Node, error) {
	key := join(dir.key, e.Name)
	n := &Node{key: key, stored: e.Size, size: e.Size, version: e.Version, kind: kindStored, arr: dir.arr}
	if dir.arr != nil {
		n.rel = join(dir.rel, e.Name)
	}
	switch {
	case e.Dir && dir.arr != nil: // a directory of nested chunk keys
		n.kind = kindDir
	case e.Dir:
		m, err := t.dirMeta(ctx, key)
		if doubtful(err) {
			m, err = t.unreadable(ctx, key, err), nil
		}
		if err != nil {
			return nil, err
		}
		n.kind, n.arr, n.m = kindDir, m.arr, m
	case dir.arr != nil:
		x := dir.arr
		if !x.raw() {
			break
		}
		if c, ok := x.a.ParseChunkKey(n.rel); ok {
			n.kind, n.coords, n.size = kindChunk, c, x.a.ChunkLen()
		} else if t.refresh > 0 && x.a.BeyondGrid(n.rel) {
			// A chunk of the array grown (appended to), whose metadata
			// is not read again yet: not shown until it is, rather than
			// served as stored (compressed) bytes in the meantime.
			return nil, notExist(key)
		}
	case e.Name == zarr.ConsolidatedFile:
		b, err := t.consolidated(ctx, key)
		if err != nil {
			return nil, err
		}
		n.kind, n.data, n.size, n.presents = kindMeta, b, int64(len(b)), t.trust
	}
	return n, nil
}

// unreadable is the metadata of the directory dir, whose metadata could
// not be read (err): a directory all the same, whose lookups read its
// metadata again (current). It is logged, and not kept.
func (t *Tree) unreadable(ctx context.Context, dir string, err error) *dirMeta {
	if t.failed.first(dir, err, time.Now()) {
		t.log.WarnContext(ctx, "cannot read a directory's metadata: presented, and looking into it tries again", "key", dir, "err", err)
	}
	return &dirMeta{err: err}
}

// current returns the directory dir as what is inside it, name ("" for
// all of it), is to be found: dir itself, unless what the tree made of it
// was provisional (from consolidated metadata, where name is served from
// the directory's own documents: own), unreadable (read again), or
// presents consolidated metadata from before a correction (gen).
func (t *Tree) current(ctx context.Context, dir *Node, name string) (*Node, error) {
	m := dir.m
	switch {
	case m == nil: // inside an array
		return dir, nil
	case m.err != nil:
		cur, err := t.dirMeta(ctx, dir.key)
		if err == nil && cur.provisional && cur.needsOwn(name) {
			cur, err = t.own(ctx, dir.key, cur)
		}
		if err != nil {
			return nil, err
		}
		m = cur
	case m.provisional && m.needsOwn(name):
		cur, err := t.own(ctx, dir.key, m)
		if err != nil {
			return nil, err
		}
		m = cur
	case m.presents && m.gen != t.gen.Load():
		cur, err := t.dirMeta(ctx, dir.key)
		if err != nil {
			return nil, err
		}
		m = cur
	default:
		return dir, nil
	}
	n := *dir
	n.arr, n.m = m.arr, m
	return &n, nil
}

// dirMeta returns what the metadata of directory dir makes of it. It is
// loaded once and kept (for Config.Refresh, if set).
func (t *Tree) dirMeta(ctx context.Context, dir string) (*dirMeta, error) {
	if m, ok := t.kept(dir); ok {
		return m, nil
	}
	// An interrupted LOOKUP returns at once (EINTR); the load goes on,
	// for the others waiting and for the next LOOKUP.
	return t.loads.Do(ctx, dir, func(ctx context.Context) (*dirMeta, error) {
		if m, ok := t.kept(dir); ok {
			return m, nil
		}
		at := time.Now()
		m := t.described(ctx, dir) // consolidated.go: trusting consolidated metadata
		if m == nil {
			var err error
			if m, err = t.loadDir(ctx, dir); err != nil {
				return nil, err
			}
		}
		return t.keep(ctx, dir, m, at), nil
	})
}

// kept returns what the tree holds of directory dir's metadata, if that
// is still believed (Config.Refresh) and presents no consolidated
// metadata from before a correction.
func (t *Tree) kept(dir string) (*dirMeta, bool) {
	v, ok := t.dirs.Load(dir)
	if !ok {
		return nil, false
	}
	l := v.(loaded[*dirMeta])
	m := l.v
	return m, t.Fresh(l.at) && (!m.presents || m.gen == t.gen.Load())
}

// keep records m, read at at, as what directory dir's metadata makes of
// it, and returns what it records: where the tree held the same array
// (sameArray) before, m with that array, so that the nodes made before
// and after (the chunk files the kernel keeps, readahead's streams) share
// one *zarr.Array, after a refresh too. An array newly held is logged
// where it is not presented raw (warn).
func (t *Tree) keep(ctx context.Context, dir string, m *dirMeta, at time.Time) *dirMeta {
	t.keepMu.Lock()
	defer t.keepMu.Unlock()
	if v, ok := t.dirs.Load(dir); ok && sameArray(v.(loaded[*dirMeta]).v, m) {
		if old := v.(loaded[*dirMeta]).v; m.arr != nil && m.arr != old.arr {
			c := *m
			c.arr = old.arr
			m = &c
		}
	} else {
		t.warn(ctx, dir, m)
	}
	t.dirs.Store(dir, loaded[*dirMeta]{m, at, 0})
	return m
}

// warn logs, once per array the tree holds, why the array of m, the
// metadata of directory dir, is not presented raw.
func (t *Tree) warn(ctx context.Context, dir string, m *dirMeta) {
	switch x := m.arr; {
	case x == nil:
	case m.skip != nil:
		t.log.WarnContext(ctx, "v3 array not shown under --as-v2", "key", dir, "err", m.skip)
	case x.why != nil:
		t.log.WarnContext(ctx, t.passedThrough(), "key", dir, "err", x.why)
	case m.npy != nil && m.npy.why != nil:
		t.log.WarnContext(ctx, t.passedThrough(), "key", dir, "err", m.npy.why)
	}
}

// loadDir reads a directory's own metadata: .zarray (v2; and what is
// served of a zarr.json beside it, beside.go), else zarr.json (v3, v3.go),
// else none; with Config.TrustConsolidated, the .zmetadata of a directory
// that is no array or v3 node, which describes those below it.
func (t *Tree) loadDir(ctx context.Context, dir string) (*dirMeta, error) {
	key := join(dir, zarr.ArrayFile)
	b, err := t.store.ReadKey(ctx, key)
	switch {
	case err == nil:
		m, err := t.v2Meta(ctx, dir, b, false)
		if err != nil {
			return nil, err
		}
		if err := t.besideV2(ctx, dir, m); err != nil { // beside.go: a zarr.json beside the .zarray
			return nil, err
		}
		return m, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	m, err := t.loadV3(ctx, dir)
	if err != nil || m != plainDir || !t.trust {
		return m, err
	}
	return t.loadConsolidated(ctx, dir) // consolidated.go
}

// v2Meta is the metadata of the v2 array directory dir whose .zarray holds
// b. Arrays that cannot be presented raw, or whose metadata is invalid,
// are passed through. A provisional one (from consolidated metadata) is
// not resolved against the directory (ResolveSeparator) and has no .npy
// file (npy.go): those need the directory's own documents.
func (t *Tree) v2Meta(ctx context.Context, dir string, b []byte, provisional bool) (*dirMeta, error) {
	key := join(dir, zarr.ArrayFile)
	x := &array{path: storePath(dir), doc: canonicalJSON(b)}
	m := &dirMeta{arr: x, format: 2, provisional: provisional}
	var err error
	x.a, err = zarr.ParseV2(b)
	switch {
	case err != nil && errors.Is(err, zarr.ErrInvalid):
		x.a, x.why = nil, err
	case err != nil:
		return nil, &fs.PathError{Op: "parse", Path: key, Err: err}
	case x.a.PassThrough != nil:
		x.why = x.a.PassThrough
	}
	if x.why != nil {
		m.files = map[string][]byte{zarr.ArrayFile: b}
		if provisional {
			return m, nil
		}
		return m, t.loadNpy(ctx, dir, m, b)
	}
	if !provisional {
		if x.a, err = t.resolve(ctx, dir, x.a); err != nil {
			return nil, err
		}
	}
	t.relayout(x)     // layout.go: under Native
	if x.why != nil { // it cannot fail for an array presented raw
		m.files = map[string][]byte{zarr.ArrayFile: b}
		return m, nil
	}
	meta, err := zarr.RewriteV2Array(b, x.a)
	if err != nil {
		return nil, &fs.PathError{Op: "rewrite", Path: key, Err: err}
	}
	m.files = map[string][]byte{zarr.ArrayFile: meta}
	if provisional {
		return m, nil
	}
	return m, t.loadNpy(ctx, dir, m, b)
}

// resolve returns a, the array of directory dir, as its store keys its
// chunks: a legacy array's keys may be nested ("0/0"), which zarr decides
// from the directory's listing, and every key comes from the array it
// returns.
func (t *Tree) resolve(ctx context.Context, dir string, a *zarr.Array) (*zarr.Array, error) {
	return a.ResolveSeparator(func() ([]string, error) {
		es, err := t.store.List(ctx, dir)
		var dirs []string
		for _, e := range es {
			if e.Dir {
				dirs = append(dirs, e.Name)
			}
		}
		return dirs, err
	})
}

// consolidated returns the presented .zmetadata at key: rewritten entry by
// entry as the tree presents each array (presenter), or as stored (with a
// Warn line) when it does not parse.
func (t *Tree) consolidated(ctx context.Context, key string) ([]byte, error) {
	if v, ok := t.metas.Load(key); ok && t.Fresh(v.(loaded[[]byte]).at) && v.(loaded[[]byte]).gen == t.gen.Load() {
		return v.(loaded[[]byte]).v, nil
	}
	at, gen := time.Now(), t.gen.Load()
	b, err := t.storedConsolidated(ctx, key)
	if err != nil {
		return nil, err
	}
	b, present, err := t.presenter(ctx, path.Dir(key), b)
	if err != nil {
		return nil, err
	}
	if r, err := zarr.RewriteV2Consolidated(b, present); err != nil {
		t.log.WarnContext(ctx, "consolidated metadata passed through unchanged", "key", key, "err", err)
	} else {
		b = r
	}
	if t.refresh > 0 || t.trust {
		t.metas.Store(key, loaded[[]byte]{b, at, gen})
		return b, nil
	}
	v, _ := t.metas.LoadOrStore(key, loaded[[]byte]{b, at, gen})
	return v.(loaded[[]byte]).v, nil
}

// presenter returns how the tree presents the arrays that the
// consolidated metadata doc, stored in the directory dir, holds copies of
// the metadata of (zarr.Presenter), so that each entry describes what its
// directory serves (an array whose own .zarray is invalid is passed
// through, whatever its entry says): it loads each array's directory, a
// few at a time. On a remote store that would be a request per array, the
// first time the document is read: with Config.TrustConsolidated, an
// array whose own documents the tree has not read is presented as its
// entry describes it (consolidated.go), with no request, and doc comes
// back with the entries of arrays whose own documents say otherwise
// replaced by those (zarr.PatchConsolidated).
func (t *Tree) presenter(ctx context.Context, dir string, doc []byte) ([]byte, zarr.Presenter, error) {
	dirs := zarr.ConsolidatedArrays(doc)
	arrays := make([]*zarr.Array, len(dirs))
	var c *consolidated
	if t.trust {
		c = parseConsolidated(dir, "", doc)
	}
	var mu sync.Mutex
	own := map[string]json.RawMessage{} // guarded by mu
	var g errgroup.Group
	g.SetLimit(16)
	for i, d := range dirs {
		g.Go(func() error {
			key := dir
			if d != "." {
				key = join(dir, d)
			}
			m, err := t.entryMeta(ctx, key, c)
			if err != nil {
				return err
			}
			if m.skip == nil && m.arr != nil && m.arr.raw() {
				arrays[i] = m.arr.a
			}
			if c != nil && !m.provisional && m.arr != nil && json.Valid(m.arr.doc) {
				if e, _ := c.describes(d); e != nil && !bytes.Equal(canonicalJSON(e), m.arr.doc) {
					mu.Lock()
					own[d] = m.arr.doc
					mu.Unlock()
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	if len(own) > 0 {
		if p, err := zarr.PatchConsolidated(doc, own); err == nil {
			doc = p
		}
	}
	return doc, func(d string) *zarr.Array {
		i, ok := slices.BinarySearch(dirs, d)
		if !ok {
			return nil
		}
		return arrays[i]
	}, nil
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
