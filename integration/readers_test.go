package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// Readers that cannot decode compressed Zarr themselves, through the
// mount: netCDF-C 4.9.0 (ncdump, netCDF4-python) has no Zarr codecs in
// Debian and reads compressed arrays as wrong values without an error;
// GDAL 3.6.2 decodes some v2 codecs but not BZ2, raw LZMA or most filters,
// and opens final-spec Zarr v3 as an empty dataset; a PyTorch DataLoader
// with worker processes reads through zarr-python, as training jobs do.
// The stores are written at test time by testdata/readers.py (zarr-python
// 2.13, numcodecs 0.11; the sharded v3 store by hand, checked with
// zarrita), and every reader must get exactly what zarr-python (or, for
// v3, zarrita) reads from the original.

var readerStores = written("readers", "readers.py", "write")

// readers returns the directory readers.py wrote (once per run): nc.zarr,
// nc_raw.zarr, more.zarr, sharded.zarr and sharded.json.
func readers(t *testing.T) string {
	t.Helper()
	needMount(t)
	needPython(t)
	dir, err := readerStores()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// needTool skips (or fails in CI) without the program name on PATH.
func needTool(t *testing.T, name, what string) {
	t.Helper()
	_, err := exec.LookPath(name)
	testutil.Need(t, what+" (make deps)", err == nil)
}

// noErrors fails t if the mount logged an error: no reader may have been
// served EIO.
func noErrors(t *testing.T, m *mounted) {
	t.Helper()
	if strings.Contains(m.Stderr.String(), "level=ERROR") {
		t.Errorf("the mount logged errors:\n%s", m.Stderr)
	}
}

// TestReadersNetCDF: netCDF-C reads the compressed v2 store through the
// mount as it reads the same values stored uncompressed (ncdump prints the
// same), and netCDF4-python gets exactly what zarr-python reads from the
// original, dimensions named by _ARRAY_DIMENSIONS. Without the mount,
// ncdump reads every compressed variable of the original as wrong values
// and exits 0: the example in docs/usage.md (Readers) of why the mount
// matters.
func TestReadersNetCDF(t *testing.T) {
	dir := readers(t)
	needTool(t, "ncdump", "netCDF-C's ncdump (Debian's netcdf-bin)")
	m := mount(t, dir)
	t.Run("ncdump", func(t *testing.T) {
		pyChecks(t, "readers.py", "ncdump", filepath.Join(dir, "nc.zarr"), filepath.Join(dir, "nc_raw.zarr"), filepath.Join(m.Dir, "nc.zarr"))
	})
	t.Run("netCDF4-python", func(t *testing.T) {
		testutil.NeedPython(t, "netCDF4")
		pyChecks(t, "readers.py", "netcdf4", filepath.Join(dir, "nc.zarr"), filepath.Join(m.Dir, "nc.zarr"))
	})
	noErrors(t, m)
}

// TestReadersGDAL: GDAL's multidimensional API through the mount reads
// every v2 array (every compressor and filter, F order, big-endian, bool,
// missing chunks) as zarr-python reads the original, and gdal_translate
// reads a 2-D slice of a 3-D array (ZARR:"path":/array:index). Through
// --as-v2 it reads Zarr v3, sharded or not (readers.py's hand-written
// shards, which zarrita reads the same first), which it cannot open itself.
func TestReadersGDAL(t *testing.T) {
	dir := readers(t)
	testutil.NeedPython(t, "osgeo.gdal")
	needTool(t, "gdal_translate", "GDAL's gdal_translate (Debian's gdal-bin)")
	t.Run("v2", func(t *testing.T) {
		m := mount(t, dir)
		pyChecks(t, "readers.py", "gdal", filepath.Join(dir, "nc.zarr")+","+filepath.Join(dir, "more.zarr"), m.Dir)
		noErrors(t, m)
	})
	t.Run("sharded-v3-as-v2", func(t *testing.T) {
		src, wantFile := filepath.Join(dir, "sharded.zarr"), filepath.Join(dir, "sharded.json")
		var want map[string]testutil.Values
		if err := json.Unmarshal(testutil.Must(os.ReadFile(wantFile)), &want); err != nil || len(want) < 5 {
			t.Fatalf("%s: %d arrays, %v", wantFile, len(want), err)
		}
		// The shards are written by hand: zarrita must read them as
		// written (it reads the index at the end only).
		var paths []string
		for p := range want {
			if !strings.Contains(p, "index_start") {
				paths = append(paths, p)
			}
		}
		slices.Sort(paths)
		known := map[string]testutil.Values{}
		for _, p := range paths {
			known[p] = want[p]
		}
		sameValues(t, "zarrita reading readers.py's v3 store", zarritaRead(t, src, paths), known)
		m := mount(t, src, "--as-v2")
		pyChecks(t, "readers.py", "gdal-v3", src, wantFile, m.Dir)
		v3Py(t, "zarr2", m.Dir, wantFile) // and zarr-python 2.13, as a second v2 reader
		noErrors(t, m)
	})
}

// TestReadersTorch: a PyTorch DataLoader with two worker processes and a
// shuffled sampler, each worker opening the stores with zarr-python through
// the mount on its first item, yields every row of every array exactly as
// zarr-python reads it from the original.
func TestReadersTorch(t *testing.T) {
	dir := readers(t)
	testutil.NeedPython(t, "torch")
	m := mount(t, dir)
	pyChecks(t, "readers.py", "torch", filepath.Join(dir, "nc.zarr")+","+filepath.Join(dir, "more.zarr"), m.Dir)
	noErrors(t, m)
}
