package tree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/zarr"
)

// The .npy view (Config.AsNpy).
//
// Every array at PARENT/NAME is one file PARENT/NAME.npy: a NumPy .npy
// file, its header (zarr.Array.NpyHeader) followed by the array's flat
// layout (zarr/flat.go), with chunks that do not exist read as the fill
// value; and PARENT/NAME.json, its attributes (zarr.Array.NpyAttrs). An
// array at the store root is RootName.npy and RootName.json in the root.
// Groups and plain directories are directories, as in the other views,
// without the Zarr metadata documents of groups (.zgroup, .zattrs,
// .zmetadata, zarr.json), which describe a hierarchy this view does not
// present; other files are served as stored (a stored file named as a
// presented one gives way). Array directories are not shown, nor arrays
// that cannot be presented raw (objects, variable-length strings, codecs
// zfuse cannot decode): one Warn line each, and zfuse info, say why.
//
// stat never decodes: a .npy file's size is its header's plus FlatLen. A
// read of a byte range decodes only the chunks it covers, through the same
// Chunks (decoded tier, budgets, readahead) as chunk files are read with:
// zarr.Array.Pieces maps the range onto pieces of chunks, and
// Chunks.ReadPieces copies each chunk's pieces at once. .npy files are
// always served through READ and the kernel's page cache, on every serving
// path: under Passthrough there is no one file to hand the kernel (each
// chunk is its own), so a .npy file is opened as Open opens it, and chunks
// are decoded onto the heap (SetServing). Memory maps work on every path.
//
// Under Config.Refresh a .npy file's version is its array's stored
// metadata document: when that changes, the file is another file, which a
// mount serves with a new inode; its chunks are forgotten (Forget), and
// readers holding the old one open get ESTALE. A chunk rewritten in the
// store under unchanged metadata is read as the Loader holds it.

// An npyFile is what an array's .npy file holds under AsNpy. It is
// immutable.
type npyFile struct {
	header  []byte // the .npy header
	attrs   []byte // NAME.json
	version string // a digest of the array's stored metadata document
	why     error  // non-nil: the array is not shown, and why
}

// loadNpy completes m, the metadata of the array directory dir whose
// stored metadata document is doc, with its .npy file; it does nothing
// unless the Tree presents AsNpy.
func (t *Tree) loadNpy(ctx context.Context, dir string, m *dirMeta, doc []byte) error {
	if !t.asNpy {
		return nil
	}
	sum := sha256.Sum256(doc)
	f := &npyFile{version: "meta:" + hex.EncodeToString(sum[:16]), why: m.arr.why}
	m.npy = f
	if f.why != nil {
		return nil
	}
	a := m.arr.a
	var zattrs []byte
	if a.Format == 2 {
		b, err := t.store.ReadKey(ctx, join(dir, zarr.AttrsFile))
		switch {
		case err == nil:
			zattrs = b
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
	}
	var err error
	if f.header, err = a.NpyHeader(); err == nil {
		f.attrs, err = a.NpyAttrs(zattrs)
	}
	if err != nil {
		f.why = err // logged as the array is kept (Tree.warn)
	}
	return nil
}

// passedThrough is the Warn message for an array that cannot be presented
// raw: passed through, or under AsNpy not shown.
func (t *Tree) passedThrough() string {
	if t.asNpy {
		return "array not shown under --as-npy"
	}
	return "array passed through unchanged"
}

// The extensions of the files an array becomes.
const (
	npyExt  = ".npy"
	jsonExt = ".json"
)

// npyHidden reports whether name, in a directory outside arrays, is a Zarr
// metadata document that AsNpy does not show.
func npyHidden(name string) bool {
	switch name {
	case zarr.GroupFile, zarr.AttrsFile, zarr.ConsolidatedFile, zarr.MetadataFile:
		return true
	}
	return false
}

// npyNodes returns the .npy and .json files that the array directory
// described by m becomes in dir, as name.npy and name.json; none when the
// array is not shown.
func npyNodes(dir *Node, name string, m *dirMeta) []*Node {
	f := m.npy
	if f == nil || f.why != nil {
		return nil
	}
	base := join(dir.key, name)
	return []*Node{ // in name order
		{key: base + jsonExt, kind: kindMeta, data: f.attrs, size: int64(len(f.attrs)), stored: int64(len(f.attrs))},
		{key: base + npyExt, kind: kindNpy, data: f.header, size: int64(len(f.header)) + m.arr.a.FlatLen(),
			version: f.version, arr: m.arr},
	}
}

// npyChild is child under AsNpy.
func (t *Tree) npyChild(ctx context.Context, dir *Node, name string) (*Node, error) {
	dir, err := t.current(ctx, dir, "")
	if err != nil {
		return nil, err
	}
	if dir.arr != nil { // the store root is an array: its two files
		for _, n := range npyNodes(dir, t.rootName, dir.m) {
			if n.Name() == name {
				return n, nil
			}
		}
		return nil, notExist(join(dir.key, name))
	}
	if npyHidden(name) {
		return nil, notExist(join(dir.key, name))
	}
	for _, ext := range []string{npyExt, jsonExt} {
		base, ok := strings.CutSuffix(name, ext)
		if !ok || base == "" || base == "." || base == ".." {
			continue
		}
		m, err := t.dirMeta(ctx, join(dir.key, base))
		if err == nil && m.provisional && m.arr != nil { // its .npy file is made from its own documents
			if m, err = t.own(ctx, join(dir.key, base), m); err == nil && m.provisional {
				err = &fs.PathError{Op: "lookup", Path: join(dir.key, name), Err: errOwnUnread}
			}
		}
		if err != nil {
			return nil, err
		}
		if m.arr == nil {
			break // no array of that name: perhaps a stored file
		}
		for _, n := range npyNodes(dir, base, m) {
			if n.Name() == name {
				return n, nil
			}
		}
		return nil, notExist(join(dir.key, name)) // an array not shown
	}
	n, err := t.zarrChild(ctx, dir, name)
	if err == nil && n.kind == kindDir && n.arr != nil {
		return nil, notExist(n.key) // an array directory: its files stand for it
	}
	return n, err
}

// errOwnUnread means the own documents of an array, which its .npy file
// is made from, could not be read yet (Tree.own logged why).
var errOwnUnread = errors.New("tree: the array's own metadata could not be read yet")

// npyChildren is children under AsNpy. An array whose own documents
// cannot be read yet is left out (Tree.own logged it).
func (t *Tree) npyChildren(ctx context.Context, dir *Node) ([]*Node, error) {
	dir, err := t.current(ctx, dir, "")
	if err != nil {
		return nil, err
	}
	if dir.arr != nil { // the store root is an array
		return npyNodes(dir, t.rootName, dir.m), nil
	}
	ns, err := t.list(ctx, dir)
	if err == nil {
		err = t.openArrays(ctx, ns) // their .npy files are made from their own documents
	}
	if err != nil {
		return nil, err
	}
	var out, stored []*Node
	for _, n := range ns {
		switch {
		case n.kind == kindDir && n.arr != nil:
			out = append(out, npyNodes(dir, n.Name(), n.m)...)
		case !npyHidden(n.Name()):
			stored = append(stored, n)
		}
	}
	for _, n := range stored { // a stored file named as an array's file gives way
		if !slices.ContainsFunc(out, func(o *Node) bool { return o.key == n.key }) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *Node) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// readNpy copies the bytes of the .npy file n in [off, off+len(dest)) into
// dest and returns them (fewer only at the end): the header from memory,
// the rest from the chunks that hold it (readFlat). A chunk that fails
// fails the read.
func (t *Tree) readNpy(ctx context.Context, n *Node, dest []byte, off int64, pid uint32) ([]byte, error) {
	if off >= n.size {
		return dest[:0], nil
	}
	dest = dest[:min(int64(len(dest)), n.size-off)]
	k := 0
	if off < int64(len(n.data)) {
		k = copy(dest, n.data[off:])
	}
	if k == len(dest) {
		return dest, nil
	}
	if err := t.readFlat(ctx, n.arr.path, n.arr.a, dest[k:], off+int64(k)-int64(len(n.data)), pid); err != nil {
		return nil, err
	}
	return dest, nil
}

// forgetNpy drops every copy the chunk source holds of the chunks of the
// array behind the .npy file n, whose metadata changed (Config.Refresh):
// the next version may decode the same keys differently, and chunks
// rewritten with the metadata must not be served from the old.
func (t *Tree) forgetNpy(n *Node) {
	a := n.arr.a
	for i := range a.NumChunks() {
		t.chunks.Forget(readahead.Ref{Array: a, Path: n.arr.path, Coords: a.Coords(i)})
	}
}

// RootNameOf is Config.RootName for SOURCE, the name (without .npy) of
// the file that an array at the root of SOURCE becomes under AsNpy: SOURCE's last path element, or a
// URL's, without ".zarr" (t2m.zarr is t2m.npy); "array" when there is none.
func RootNameOf(source string) string {
	p := source
	if _, rest, ok := strings.Cut(source, "://"); ok {
		p, _, _ = strings.Cut(rest, "?")
		p, _, _ = strings.Cut(p, "#")
	}
	name := strings.TrimSuffix(path.Base(strings.TrimRight(filepath.ToSlash(p), "/")), ".zarr")
	if name == "" || name == "." || name == "/" || name == ".." {
		return "array"
	}
	return name
}
