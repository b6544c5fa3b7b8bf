package tree

import (
	"context"
	"errors"
	"io/fs"

	"github.com/zfuse/zfuse/zarr"
)

// Directories holding both .zarray and zarr.json.
//
// An array converted from v2 to v3 in place keeps its chunk files and gets
// a zarr.json (with the v2 chunk key encoding) beside its .zarray; zarrs'
// test data holds such directories. The tree presents the directory's v2
// view: .zarray rewritten, chunk keys parsed as v2, chunks decoded by the
// v2 pipeline. Every metadata document it serves must describe those
// bytes, so zarr.json is
//
//   - served rewritten too when it describes the same chunks
//     (zarr.PresentBeside: one bytes codec, after a transpose for F order),
//     so that v3 readers read the same values;
//   - hidden, with a Warn line naming the directory and why, when it does
//     not (another shape, data type, fill value, chunk keys, a sharded or
//     passed-through array, a group);
//   - hidden under AsV2, as every zarr.json is;
//   - served as stored when the array is passed through: then every file
//     is, and both documents describe the stored chunks.
//
// zfuse info says which (ArrayInfo.ZarrJSON).

// besideV2 completes m, the metadata of the v2 array directory dir, with
// what dir serves of a zarr.json stored beside its .zarray.
func (t *Tree) besideV2(ctx context.Context, dir string, m *dirMeta) error {
	b, err := t.store.ReadKey(ctx, join(dir, zarr.MetadataFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	x := m.arr
	switch {
	case t.asV2:
		m.hide, m.zarrJSON = zarr.MetadataFile, "hidden (--as-v2)"
	case !x.raw():
		m.zarrJSON = "as stored"
	default:
		r, err := zarr.PresentBeside(b, x.a)
		if err != nil {
			m.hide, m.zarrJSON = zarr.MetadataFile, "hidden: "+err.Error()
			t.log.WarnContext(ctx, "zarr.json hidden: it does not describe the chunks .zarray does", "key", dir, "err", err)
			return nil
		}
		m.files[zarr.MetadataFile] = r
		m.zarrJSON = "rewritten too"
	}
	return nil
}
