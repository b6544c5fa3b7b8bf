package tree

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zfuse/zfuse/zarr"
)

// Trusting consolidated metadata (Config.TrustConsolidated).
//
// Consolidated metadata (a v2 .zmetadata, a v3 group's zarr.json with
// consolidated_metadata) holds a copy of the metadata documents of every
// node below its directory, so that a reader needs one request, not one per
// array: zarr-python and xarray read it and nothing else. A tree that
// trusts it does the same: the directories it describes are made from
// their entries (provisional metadata, dirMeta.provisional), so a mount of
// a remote store of thousands of arrays reads its root's documents and
// lists its root in a few requests, whatever the number of arrays, and the
// consolidated metadata it serves is rewritten from the entries.
//
// A directory's own documents are still what its files are made from:
// they are read (Tree.own) the first time something inside an array's
// directory (a chunk, its .zarray) is looked up or listed, or the
// metadata files of a v3 group are; under AsNpy, when the array's .npy
// file is. Where they describe the same array (the stored documents are
// the same JSON), the array made from the entry is kept, so that every
// node shares one *zarr.Array. Where they do not (consolidated metadata
// written before an array changed), the directory's own documents win:
// the tree says so at Warn, and what presents consolidated metadata is
// presented anew (Tree.gen), so that no document served contradicts the
// bytes served; those nodes say so (Node.MayChange). Where the own
// documents cannot be read, the entry stands, as it does for zarr-python,
// and the next lookup a while later tries again (ownRetry).
//
// A directory that no consolidated metadata above it describes reads its
// own documents, as without Config.TrustConsolidated; one that is no array
// or v3 node has its .zmetadata read too, which may describe those below.

// ownRetry is how long a directory whose own documents could not be read
// is served as its consolidated entry describes it before the next
// lookup inside it tries them again.
const ownRetry = 5 * time.Second

// A consolidated is the consolidated metadata a directory holds, as a tree
// that trusts it reads it. It is immutable.
type consolidated struct {
	key string // its store key: DIR/.zmetadata or DIR/zarr.json
	raw []byte // as stored
	dir string // DIR
	v3  bool   // zarr.json's consolidated_metadata, not .zmetadata
	// entries are the copies it holds: v2, by key relative to dir
	// ("sub/arr/.zarray"); v3, zarr.json documents by directory relative
	// to dir ("sub/arr").
	entries map[string]json.RawMessage
	// dirs are the directories below dir that the entries name or lie
	// in (implicit groups too), relative to dir.
	dirs map[string]bool
}

// parseConsolidated returns the consolidated metadata that doc, stored at
// key in the directory dir, holds, or nil where it holds none (or does not
// parse: it is served as stored, and says why when it is).
func parseConsolidated(dir, key string, doc []byte) *consolidated {
	entries, v3, ok := zarr.ConsolidatedEntries(doc)
	if !ok {
		return nil
	}
	c := &consolidated{key: key, raw: doc, dir: dir, v3: v3, entries: entries, dirs: map[string]bool{}}
	for k := range entries {
		d := k
		if !v3 {
			d = path.Dir(k)
		}
		for ; fs.ValidPath(d) && d != "."; d = path.Dir(d) {
			c.dirs[d] = true
		}
	}
	return c
}

// describes returns the entry of the directory rel below c's directory
// (the .zarray copy of a v2 array, the zarr.json copy of a v3 node; nil
// for a v2 group or an implicit one), and whether c describes it at all.
func (c *consolidated) describes(rel string) (json.RawMessage, bool) {
	if !c.dirs[rel] {
		return nil, false
	}
	if c.v3 {
		return c.entries[rel], true
	}
	return c.entries[rel+"/"+zarr.ArrayFile], true
}

// knownDir reports whether key, outside arrays, is a directory the tree
// knows without asking the store: one whose metadata it holds (and still
// believes), or, with Config.TrustConsolidated, one that consolidated
// metadata above it describes (an object store answers a Stat of a
// directory with two requests).
func (t *Tree) knownDir(key string) bool {
	if _, ok := t.kept(key); ok {
		return true
	}
	c := t.covering(key)
	if c == nil {
		return false
	}
	rel, ok := c.rel(key)
	return ok && c.dirs[rel]
}

// covering returns the consolidated metadata nearest above the directory
// dir, among those of the directories the tree has read (lookups walk
// from the root, so dir's are read before dir); nil without
// Config.TrustConsolidated, or where none is above it.
func (t *Tree) covering(dir string) *consolidated {
	if !t.trust {
		return nil
	}
	for d := dir; d != "."; {
		d = path.Dir(d)
		if v, ok := t.dirs.Load(d); ok {
			if c := v.(loaded[*dirMeta]).v.cons; c != nil {
				return c
			}
		}
	}
	return nil
}

// rel returns dir relative to c's directory, if it is below it.
func (c *consolidated) rel(dir string) (string, bool) {
	if c.dir == "." {
		return dir, dir != "."
	}
	return strings.CutPrefix(dir, c.dir+"/")
}

// holdsArray reports whether c describes an array.
func (c *consolidated) holdsArray() bool {
	return len(zarr.ConsolidatedArrays(c.raw)) > 0
}

// described returns the provisional metadata of the directory dir, made
// from the consolidated metadata nearest above it that describes it; nil
// where none does (the directory reads its own documents).
func (t *Tree) described(ctx context.Context, dir string) *dirMeta {
	if c := t.covering(dir); c != nil {
		return t.fromEntry(ctx, dir, c)
	}
	return nil
}

// fromEntry returns the provisional metadata of the directory dir that c
// describes, or nil where it does not describe it, or its entry does not
// make an array (the directory reads its own documents).
func (t *Tree) fromEntry(ctx context.Context, dir string, c *consolidated) *dirMeta {
	rel, ok := c.rel(dir)
	if !ok {
		return nil
	}
	b, ok := c.describes(rel)
	if !ok {
		return nil
	}
	var m *dirMeta
	var err error
	switch {
	case b == nil: // a v2 group, or an implicit one
		m = &dirMeta{provisional: true}
	case c.v3:
		m, err = t.v3Meta(ctx, dir, b, true)
	default:
		m, err = t.v2Meta(ctx, dir, b, true)
	}
	if err != nil {
		return nil
	}
	return m
}

// entryMeta returns what the tree presents of the directory dir, which the
// consolidated metadata c describes: what it holds of dir already, else
// provisional metadata from c's entry, kept (nil c: what dir's own
// documents make of it).
func (t *Tree) entryMeta(ctx context.Context, dir string, c *consolidated) (*dirMeta, error) {
	if c == nil {
		return t.dirMeta(ctx, dir)
	}
	if m, ok := t.kept(dir); ok {
		return m, nil
	}
	at := time.Now()
	m := t.fromEntry(ctx, dir, c)
	if m == nil {
		return t.dirMeta(ctx, dir)
	}
	return t.keep(ctx, dir, m, at), nil
}

// loadConsolidated reads the .zmetadata of the directory dir, which holds
// neither .zarray nor zarr.json: the metadata of a plain directory (or v2
// group), which describes those below it where it holds consolidated
// metadata.
func (t *Tree) loadConsolidated(ctx context.Context, dir string) (*dirMeta, error) {
	key := join(dir, zarr.ConsolidatedFile)
	b, err := t.store.ReadKey(ctx, key)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return plainDir, nil
	case err != nil:
		return nil, err
	}
	c := parseConsolidated(dir, key, b)
	if c == nil {
		return plainDir, nil
	}
	return &dirMeta{cons: c}, nil
}

// storedConsolidated returns the stored .zmetadata at key: as its
// directory's metadata holds it (loadConsolidated), else read.
func (t *Tree) storedConsolidated(ctx context.Context, key string) ([]byte, error) {
	if m, ok := t.kept(path.Dir(key)); ok && m.cons != nil && m.cons.key == key {
		return m.cons.raw, nil
	}
	return t.store.ReadKey(ctx, key)
}

// needsOwn reports whether what is inside m's directory named name ("" for
// a listing) is made from the directory's own documents, where m is
// provisional: everything inside an array, and a v3 group's metadata
// files. A v2 group or a plain directory serves nothing of its own.
func (m *dirMeta) needsOwn(name string) bool {
	switch {
	case m.arr != nil:
		return true
	case m.format == 3:
		switch name {
		case "", zarr.MetadataFile, zarr.GroupFile, zarr.AttrsFile, zarr.ConsolidatedFile:
			return true
		}
	}
	return false
}

// own returns the metadata of the directory dir as its own documents make
// it, where m, what the tree held of it, is provisional: read once (and
// again after Config.Refresh), and kept. Where they describe what the
// entry did (sameArray), the entry's array is kept; where not, they win:
// logged, and t.gen grows, so that consolidated metadata is presented
// anew. Where they cannot be read, m is returned as it is (logged), and
// they are tried again ownRetry later.
func (t *Tree) own(ctx context.Context, dir string, m *dirMeta) (*dirMeta, error) {
	// current is what the tree holds of dir now: its own documents' reading
	// (nil if that is no longer believed), and else its provisional
	// metadata, and when that was read.
	current := func() (own, prov *dirMeta, at time.Time) {
		prov, at = m, time.Now()
		if v, ok := t.dirs.Load(dir); ok {
			l := v.(loaded[*dirMeta])
			switch {
			case !l.v.provisional && t.Fresh(l.at):
				return l.v, nil, l.at
			case l.v.provisional:
				prov, at = l.v, l.at
			}
		}
		return nil, prov, at
	}
	if cur, prov, _ := current(); cur != nil {
		return cur, nil
	} else if !prov.tried.IsZero() && time.Since(prov.tried) < ownRetry {
		return prov, nil
	}
	return t.loads.Do(ctx, "\x00own "+dir, func(ctx context.Context) (*dirMeta, error) {
		cur, prov, at := current()
		if cur != nil {
			return cur, nil // read meanwhile
		}
		now := time.Now()
		own, err := t.loadDir(ctx, dir)
		switch {
		case doubtful(err):
			if t.failed.first(dir, err, now) {
				t.log.WarnContext(ctx, "cannot read a directory's own metadata: served as consolidated metadata describes it", "key", dir, "err", err)
			}
			p := *prov
			p.tried = now
			t.keepMu.Lock()
			t.dirs.Store(dir, loaded[*dirMeta]{&p, at, 0})
			t.keepMu.Unlock()
			return &p, nil
		case err != nil:
			return nil, err
		}
		if !sameArray(prov, own) {
			t.log.WarnContext(ctx, "consolidated metadata describes a directory otherwise than its own documents: they win, and the consolidated metadata is presented anew", "key", dir)
			t.gen.Add(1)
			if p, o := prov.arr, own.arr; p != nil && o != nil && p.a != nil && o.a != nil && p.a.Legacy() && !o.a.Legacy() {
				c := *own // a legacy array found nested: flatChunk
				c.flat = p.a
				own = &c
			}
		}
		return t.keep(ctx, dir, own, now), nil
	})
}

// flatChunk returns the chunk file name in dir, the directory of a legacy
// array found nested once its own documents were read (dirMeta.flat),
// where name is a chunk key as its consolidated entry presented it before
// ("0.0"): the chunk stored under its nested key. A reader that read that
// presentation asks for those names, and a missing file would read as
// the fill value, silently wrong. It returns nil for other names.
func (t *Tree) flatChunk(ctx context.Context, dir *Node, name string) (*Node, error) {
	x := dir.arr
	if dir.rel != "" || x == nil || !x.raw() {
		return nil, nil
	}
	c, ok := dir.m.flat.ParseChunkKey(name)
	if !ok {
		return nil, nil
	}
	rel, _, _ := x.a.StoredKey(c)
	e, err := t.store.Stat(ctx, join(x.path, rel))
	if err != nil {
		return nil, nil // as the name itself said
	}
	return &Node{key: join(dir.key, name), kind: kindChunk, size: x.a.ChunkLen(), stored: e.Size, version: e.Version,
		arr: x, rel: name, coords: c}, nil
}

// openArrays replaces each node in ns that is the directory of an array
// whose metadata is provisional by the array as its own documents make it
// (own), reading them concurrently.
func (t *Tree) openArrays(ctx context.Context, ns []*Node) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(listConcurrency)
	for i, n := range ns {
		if n.kind != kindDir || n.m == nil || !n.m.provisional || n.m.arr == nil {
			continue
		}
		g.Go(func() error {
			c, err := t.current(ctx, n, "")
			if err == nil {
				ns[i] = c
			}
			return err
		})
	}
	return g.Wait()
}

// sameArray reports whether a and b, two readings of one directory's
// metadata, describe the same thing: the same kind of directory and, for
// an array, the same stored document (as JSON: consolidated metadata
// holds its copies in other spacing) resolved to the same chunk keys, so
// that what is made of one is right for the other.
func sameArray(a, b *dirMeta) bool {
	if a.err != nil || b.err != nil || a.format != b.format || (a.arr == nil) != (b.arr == nil) || (a.skip == nil) != (b.skip == nil) {
		return false
	}
	if a.arr == nil {
		return true
	}
	x, y := a.arr, b.arr
	if x.v3 != y.v3 || x.raw() != y.raw() || (x.a == nil) != (y.a == nil) || !bytes.Equal(x.doc, y.doc) {
		return false
	}
	return x.a == nil || x.a.Separator == y.a.Separator
}

// canonicalJSON returns the JSON document b with its objects' keys sorted
// and no space, numbers as written: two spellings of one document give the
// same bytes. A document that does not parse is returned as it is.
func canonicalJSON(b []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return b
	}
	c, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return c
}
