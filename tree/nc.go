package tree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zfuse/zfuse/internal/flight"
	"github.com/zfuse/zfuse/netcdf"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/zarr"
)

// The netCDF view (Config.AsNc).
//
// Every group at PARENT/NAME is one file PARENT/NAME.nc, a netCDF classic
// file (package netcdf) whose variables are the arrays directly in the
// group; the root group is RootName.nc at the top, and a store whose root
// is an array is RootName.nc holding that one array. A directory is a
// group when it has group metadata (zarr.json of a group, .zgroup) or
// holds an array. Directories other than arrays stay directories, without
// the Zarr metadata documents (as under AsNpy); array directories are not
// shown: their arrays are variables. Other files are served as stored (a
// stored file named as a presented one gives way).
//
// What each file holds is ncFile's business (nc_file.go): the header from
// the group's attributes and its arrays' types, dimension names and
// attributes, then each variable's values big-endian in C order, each
// array presented through zarr.Array.Relayout so that its chunks decode
// so. A file is built when it is first looked up or listed, from the
// metadata alone, and kept (for Config.Refresh, when set): stat never
// decodes. A read of a byte range decodes only the chunks it covers
// (netcdf.Layout.Segments, then readFlat, as .npy files are read), through
// the same Chunks as chunk files, with chunks that do not exist read as
// the fill value; netCDF files are served as .npy files are, through READ
// and the page cache on every serving path (SetServing).
//
// Under Config.Refresh a file's version is a digest of its header and its
// arrays' metadata: a group whose arrays or attributes change is another
// file, which a mount serves with a new inode, and the old file's chunks
// are forgotten (Forget).

// ncExt is the extension of a group's netCDF file.
const ncExt = ".nc"

// ncFiles holds each group's netCDF file, by the group's directory key.
type ncFiles struct {
	loads flight.Group[*ncFile] // one build per group at a time
	m     sync.Map              // directory key -> loaded[*ncFile]; a nil file: not a group
}

// ncFileOf returns the netCDF file of the directory dir (of the store
// root, when it is an array), built once and kept (for Config.Refresh, if
// set); nil when dir is neither a group nor holds an array.
func (t *Tree) ncFileOf(ctx context.Context, dir *Node) (*ncFile, error) {
	if v, ok := t.ncs.m.Load(dir.key); ok && t.Fresh(v.(loaded[*ncFile]).at) {
		return v.(loaded[*ncFile]).v, nil
	}
	return t.ncs.loads.Do(ctx, dir.key, func(ctx context.Context) (*ncFile, error) {
		if v, ok := t.ncs.m.Load(dir.key); ok && t.Fresh(v.(loaded[*ncFile]).at) {
			return v.(loaded[*ncFile]).v, nil
		}
		at := time.Now()
		f, err := t.buildNc(ctx, dir)
		if err == nil {
			t.ncs.m.Store(dir.key, loaded[*ncFile]{v: f, at: at})
		}
		return f, err
	})
}

// ncNode is the node of the netCDF file f, named name in the directory
// parent.
func ncNode(parent string, name string, f *ncFile) *Node {
	return &Node{key: join(parent, name), kind: kindNc, data: f.layout.Header, size: f.layout.Size,
		stored: f.layout.Size, version: f.version, nc: f}
}

// ncName is the name of the file of the group at dir: its last element
// with ncExt, RootName's for the root.
func (t *Tree) ncName(dir string) string {
	if dir == "." {
		return t.rootName + ncExt
	}
	return path.Base(dir) + ncExt
}

// ncChild is Child under AsNc.
func (t *Tree) ncChild(ctx context.Context, dir *Node, name string) (*Node, error) {
	if dir.arr != nil { // the store root is an array: its one file
		if name == t.ncName(".") {
			if f, err := t.ncFileOf(ctx, dir); err != nil || f != nil {
				return t.ncOf(dir, name, f, err)
			}
		}
		return nil, notExist(join(dir.key, name))
	}
	if npyHidden(name) {
		return nil, notExist(join(dir.key, name))
	}
	if base, ok := strings.CutSuffix(name, ncExt); ok && base != "" && base != "." && base != ".." {
		if dir.key == "." && name == t.ncName(".") {
			if f, err := t.ncFileOf(ctx, dir); err != nil || f != nil {
				return t.ncOf(dir, name, f, err)
			}
		}
		g, err := t.zarrChild(ctx, dir, base)
		switch {
		case err == nil && g.kind == kindDir && g.arr == nil:
			if f, err := t.ncFileOf(ctx, g); err != nil || f != nil {
				return t.ncOf(dir, name, f, err)
			}
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	n, err := t.zarrChild(ctx, dir, name)
	if err == nil && n.kind == kindDir && n.arr != nil {
		return nil, notExist(n.key) // an array directory: a variable of its group's file
	}
	return n, err
}

// ncOf is the node of file f, name in dir, or err.
func (t *Tree) ncOf(dir *Node, name string, f *ncFile, err error) (*Node, error) {
	if err != nil {
		return nil, err
	}
	return ncNode(dir.key, name, f), nil
}

// ncChildren is Children under AsNc.
func (t *Tree) ncChildren(ctx context.Context, dir *Node) ([]*Node, error) {
	if dir.arr != nil { // the store root is an array
		f, err := t.ncFileOf(ctx, dir)
		if err != nil || f == nil {
			return nil, err
		}
		return []*Node{ncNode(dir.key, t.ncName("."), f)}, nil
	}
	ns, err := t.list(ctx, dir)
	if err != nil {
		return nil, err
	}
	var out, stored []*Node
	if dir.key == "." {
		f, err := t.ncFileOf(ctx, dir)
		if err != nil {
			return nil, err
		}
		if f != nil {
			out = append(out, ncNode(dir.key, t.ncName("."), f))
		}
	}
	for _, n := range ns {
		switch {
		case n.kind == kindDir && n.arr != nil: // a variable of dir's file
		case n.kind == kindDir:
			out = append(out, n)
			f, err := t.ncFileOf(ctx, n)
			if err != nil {
				return nil, err
			}
			if name := t.ncName(n.key); f != nil && !slices.ContainsFunc(out, func(o *Node) bool { return o.Name() == name }) {
				out = append(out, ncNode(dir.key, name, f))
			}
		case !npyHidden(n.Name()):
			stored = append(stored, n)
		}
	}
	for _, n := range stored { // a stored file named as a presented one gives way
		if !slices.ContainsFunc(out, func(o *Node) bool { return o.key == n.key }) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *Node) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// An ncFile is what a group's netCDF file holds. It is immutable.
type ncFile struct {
	layout  *netcdf.Layout
	vars    []ncVar            // in header order
	names   []string           // the variables' names, in header order
	version string             // a digest of the header and of the arrays' metadata
	arrays  map[string]ncArray // every array directly in the group, by directory key
}

// An ncVar is the array behind one variable.
type ncVar struct {
	path string      // the array's key prefix in the store
	a    *zarr.Array // as served: C order, big-endian (Relayout)
	fill []byte      // one value, big-endian, that its padding reads as
}

// An ncArray says what became of one array of a group, for zfuse info.
type ncArray struct {
	name string      // the variable
	typ  netcdf.Type // its type
	why  error       // non-nil: left out of the file, and why
}

// version returns the digest of a file with header h over the arrays vs:
// the header says everything a reader sees but how the values are
// decoded, which each array's stored layout and codecs say.
func ncVersion(h []byte, arrays []*zarr.Array) string {
	d := sha256.New()
	d.Write(h)
	for _, a := range arrays {
		fmt.Fprintf(d, "\x00%s|%s|%s|%v|%v|%s|%v", a.Codecs, a.DType, a.Order, a.Chunks, a.ShardShape(), a.Separator, a.Relaid())
	}
	return "nc:" + hex.EncodeToString(d.Sum(nil)[:16])
}

// readNc copies the bytes of the netCDF file n in [off, off+len(dest))
// into dest and returns them (fewer only at the end): the header from
// memory, padding as each variable's fill value, values from the chunks
// that hold them (readFlat). A chunk that fails fails the read.
func (t *Tree) readNc(ctx context.Context, n *Node, dest []byte, off int64, pid uint32) ([]byte, error) {
	f := n.nc
	if off < 0 || off >= n.size {
		return dest[:0], nil
	}
	dest = dest[:min(int64(len(dest)), n.size-off)]
	var small [8]netcdf.Segment
	for _, s := range f.layout.Segments(small[:0], off, int64(len(dest))) {
		b := dest[s.At : s.At+s.N]
		switch {
		case s.Var < 0:
			copy(b, f.layout.Header[s.Off:])
		case s.Pad:
			fill := f.vars[s.Var].fill
			for i := range b {
				b[i] = fill[(s.Off+int64(i))%int64(len(fill))]
			}
		default:
			v := &f.vars[s.Var]
			if err := t.readFlat(ctx, v.path, v.a, b, s.Off, pid); err != nil {
				return nil, err
			}
		}
	}
	return dest, nil
}

// forgetNc drops every copy the chunk source holds of the chunks of the
// variables of the netCDF file n, whose group changed (Config.Refresh).
func (t *Tree) forgetNc(n *Node) {
	for _, v := range n.nc.vars {
		for i := range v.a.NumChunks() {
			t.chunks.Forget(readahead.Ref{Array: v.a, Path: v.path, Coords: v.a.Coords(i)})
		}
	}
}
