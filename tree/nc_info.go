package tree

import (
	"context"
	"path"

	"github.com/zfuse/zfuse/netcdf"
)

// What zfuse info says of the netCDF view.

// An NcFileInfo describes one group's netCDF file, for zfuse info.
type NcFileInfo struct {
	Path   string        // the file's presented path
	Group  string        // the group's directory key ("." for the root)
	Format netcdf.Format // CDF-2 or CDF-5
	Vars   []string      // its variables, in header order
	Size   int64         // its size in bytes
}

// NcFiles walks the tree as Arrays does and describes every group's
// netCDF file, in path order; none unless the Tree presents AsNc. It
// reads metadata, and decodes nothing.
func (t *Tree) NcFiles(ctx context.Context) ([]NcFileInfo, error) {
	if !t.asNc {
		return nil, nil
	}
	var out []NcFileInfo
	err := t.walkDirs(ctx, func(dir *Node) error {
		f, err := t.ncFileOf(ctx, dir)
		if err != nil || f == nil {
			return err
		}
		out = append(out, NcFileInfo{Path: t.ncPath(dir.key), Group: dir.key, Format: f.layout.Format,
			Vars: f.names, Size: f.layout.Size})
		return nil
	})
	return out, err
}

// ncPath is the presented path of the file of the group at dir.
func (t *Tree) ncPath(dir string) string {
	if dir == "." {
		return t.ncName(".")
	}
	return join(path.Dir(dir), t.ncName(dir))
}

// ncInfo completes info, of the array whose directory is dir, with what
// its group's netCDF file makes of it.
func (t *Tree) ncInfo(ctx context.Context, dir *Node, info *ArrayInfo) error {
	group := dir
	if dir.key != "." {
		g, err := t.Lookup(ctx, path.Dir(dir.key))
		if err != nil {
			return err
		}
		group = g
	}
	f, err := t.ncFileOf(ctx, group)
	if err != nil || f == nil {
		return err
	}
	a, ok := f.arrays[dir.key]
	switch {
	case !ok:
	case a.why != nil:
		info.Hidden = a.why
	default:
		info.Nc, info.NcVar, info.NcType = t.ncPath(group.key), a.name, a.typ.String()
	}
	return nil
}
