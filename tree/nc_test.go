package tree

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/netcdf"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
)

// ncValues is the values of a in C order, big-endian, as a netCDF file
// holds them: 0 (the fill value) in missing chunks.
func ncValues(a *testutil.V2Array) []byte {
	is := map[string]int{"u1": 1, "i2": 2, "i4": 4, "i8": 8, "f8": 8}[a.DType[1:]]
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	out := make([]byte, n*is)
	idx := make([]int, len(a.Shape))
	for lin := range n {
		r := lin
		parts := make([]string, len(idx))
		for d := len(a.Shape) - 1; d >= 0; d-- {
			idx[d] = r % a.Shape[d]
			r /= a.Shape[d]
		}
		for d, i := range idx {
			parts[d] = strconv.Itoa(i / a.Chunks[d])
		}
		if slices.Contains(a.Missing, strings.Join(parts, ".")) {
			continue
		}
		v, b := a.Value(idx), out[lin*is:(lin+1)*is]
		switch a.DType[1:] {
		case "u1":
			b[0] = byte(v)
		case "i2":
			binary.BigEndian.PutUint16(b, uint16(int16(v)))
		case "i4":
			binary.BigEndian.PutUint32(b, uint32(int32(v)))
		case "i8":
			binary.BigEndian.PutUint64(b, uint64(int64(v)))
		case "f8":
			binary.BigEndian.PutUint64(b, math.Float64bits(v))
		}
	}
	return out
}

// ncWant is the whole file f describes, its variables holding vals:
// header, then each variable's values and padding of its fill value.
func ncWant(t *testing.T, f *netcdf.File, vals ...[]byte) []byte {
	t.Helper()
	l, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	out := slices.Clone(l.Header)
	for i, e := range l.Vars {
		fill := f.Vars[i].Type.Fill()
		for _, a := range f.Vars[i].Attrs {
			if a.Name == "_FillValue" {
				fill = a.Values
			}
		}
		out = append(out, vals[i]...)
		for k := e.Len; k < e.VSize; k++ {
			out = append(out, fill[k%int64(len(fill))])
		}
	}
	return out
}

// be is the big-endian bytes of v, one value of the size of t.
func be(t netcdf.Type, v int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(v))
	return b[8-t.Size():]
}

// TestNcTree: under AsNc the root group is RootName.nc and each group
// NAME.nc beside its directory; arrays are variables, typed, named and
// attributed as nc_file.go says (fallback dimension names, _FillValue
// from fill_value, the group's attributes global), values big-endian in
// C order (order F converted), missing chunks as the fill value; arrays
// with no netCDF type are left out and say why; stat never decodes;
// byte ranges at any offset read the same bytes; a corrupt chunk fails
// the reads of its range only, naming its key.
func TestNcTree(t *testing.T) {
	ctx := context.Background()
	s := testutil.NewV2Store(t)
	tr, logs := newTestTree(t, s, func(c *Config) { c.AsNc, c.RootName = true, "store" })
	loader := tr.chunks.(*readahead.Loader)
	for dir, want := range map[string][]string{
		".":     {"README.txt", "group", "group.nc", "store.nc"},
		"group": nil,
	} {
		if got := childNames(t, tr, dir); !slices.Equal(got, want) {
			t.Errorf("%s lists %v, want %v", dir, got, want)
		}
	}
	u, i2, i4, i8, f8 := netcdf.UByte, netcdf.Short, netcdf.Int, netcdf.Int64, netcdf.Double
	fill := func(t netcdf.Type) netcdf.Attr {
		return netcdf.Attr{Name: "_FillValue", Type: t, Values: make([]byte, t.Size())}
	}
	root := netcdf.File{Format: netcdf.CDF5,
		Dims:  []netcdf.Dim{{Name: "corrupt_dim0", Len: 4}, {Name: "legacy_dim0", Len: 4}, {Name: "legacy_dim1", Len: 4}, {Name: "temp_dim0", Len: 5}, {Name: "temp_dim1", Len: 7}},
		Attrs: []netcdf.Attr{{Name: "answer", Type: netcdf.Int, Values: be(netcdf.Int, 42)}},
		Vars: []netcdf.Var{
			{Name: "corrupt", Dims: []int{0}, Type: u, Attrs: []netcdf.Attr{fill(u)}},
			{Name: "legacy", Dims: []int{1, 2}, Type: i2, Attrs: []netcdf.Attr{fill(i2)}},
			{Name: "scalar", Type: i8, Attrs: []netcdf.Attr{fill(i8)}},
			{Name: "temp", Dims: []int{3, 4}, Type: i4, Attrs: []netcdf.Attr{fill(i4), netcdf.Text("units", "K")}},
		}}
	group := netcdf.File{Format: netcdf.CDF2, Dims: []netcdf.Dim{{Name: "nested_dim0", Len: 4}, {Name: "nested_dim1", Len: 4}},
		Vars: []netcdf.Var{{Name: "nested", Dims: []int{0, 1}, Type: f8, Attrs: []netcdf.Attr{fill(f8)}}}}
	corrupt := []byte{7, 8, 9, 10}
	files := map[string][]byte{
		"store.nc": ncWant(t, &root, corrupt, ncValues(s.Arrays["legacy"]), ncValues(s.Arrays["scalar"]), ncValues(s.Arrays["temp"])),
		"group.nc": ncWant(t, &group, ncValues(s.Arrays["group/nested"])),
	}
	for p, want := range files {
		if n := mustLookup(t, tr, p); n.Size() != int64(len(want)) {
			t.Errorf("%s: size %d, want %d", p, n.Size(), len(want))
		}
	}
	if st := loader.Stats(); st.Reads != 0 {
		t.Errorf("listing and stat read %d chunks, want none", st.Reads)
	}
	// The corrupt chunk: corrupt's bytes 2 and 3.
	l, _ := root.Encode()
	bad := l.Vars[0].Begin + 2
	for p, want := range files {
		n := mustLookup(t, tr, p)
		r := rand.New(rand.NewPCG(1, uint64(len(p))))
		for range 200 {
			off, k := r.Int64N(int64(len(want))+1), r.Int64N(300)+1
			if p == "store.nc" && off < bad+2 && off+k > bad {
				continue
			}
			got, err := tr.ReadAt(ctx, n, make([]byte, k), off, 0)
			if w := want[min(off, int64(len(want))):min(off+k, int64(len(want)))]; err != nil || !bytes.Equal(got, w) {
				t.Fatalf("%s [%d, +%d): %x, %v; want %x", p, off, k, got, err, w)
			}
		}
	}
	if b, err := tr.ReadFile(ctx, "group.nc"); err != nil || !bytes.Equal(b, files["group.nc"]) {
		t.Errorf("group.nc whole: %d bytes, %v", len(b), err)
	}
	c := mustLookup(t, tr, "store.nc")
	if _, err := tr.ReadAt(ctx, c, make([]byte, 2), bad-2, 0); err != nil {
		t.Errorf("store.nc, corrupt's chunk 0: %v", err)
	}
	if _, err := tr.ReadAt(ctx, c, make([]byte, 1), bad+1, 0); err == nil || !strings.Contains(err.Error(), "corrupt/1") {
		t.Errorf("store.nc, corrupt's chunk 1: %v, want an error naming corrupt/1", err)
	}
	for _, p := range []string{"temp", "temp/0.0", "group/nested", ".zgroup", ".zattrs", ".zmetadata", "group/.zgroup", "nosuch.nc", "temp.nc", "README.txt.nc"} {
		if _, err := tr.ReadFile(ctx, p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want it not shown", p, err)
		}
	}
	for _, key := range []string{"odd", "bad"} {
		if !strings.Contains(logs.String(), `msg="array left out of the netCDF file" key=`+key) {
			t.Errorf("no Warn line says %s is left out:\n%s", key, logs)
		}
	}
	if b, err := tr.ReadFile(ctx, "README.txt"); err != nil || string(b) != "not zarr\n" {
		t.Errorf("README.txt: %q, %v", b, err)
	}
}

// TestNcRoot: a store whose root is an array is one file, RootName.nc,
// with one variable of that name.
func TestNcRoot(t *testing.T) {
	s := testutil.EmptyV2Store(t)
	s.Add(t, testutil.V2Array{Path: "", Shape: []int{3, 4}, Chunks: []int{2, 3}, DType: "<f8", Order: "F", Sep: ".",
		Value: func(i []int) float64 { return float64(i[0]) - float64(i[1])/4 }})
	s.Write(t, ".zattrs", []byte(`{"_ARRAY_DIMENSIONS": ["y", "x"], "long_name": "air"}`))
	tr, _ := newTestTree(t, s, func(c *Config) { c.AsNc, c.RootName = true, "t2m" })
	if got := childNames(t, tr, "."); !slices.Equal(got, []string{"t2m.nc"}) {
		t.Errorf("root lists %v, want t2m.nc", got)
	}
	f := netcdf.File{Format: netcdf.CDF2, Dims: []netcdf.Dim{{Name: "y", Len: 3}, {Name: "x", Len: 4}},
		Vars: []netcdf.Var{{Name: "t2m", Dims: []int{0, 1}, Type: netcdf.Double,
			Attrs: []netcdf.Attr{{Name: "_FillValue", Type: netcdf.Double, Values: make([]byte, 8)}, netcdf.Text("long_name", "air")}}}}
	b, err := tr.ReadFile(context.Background(), "t2m.nc")
	if want := ncWant(t, &f, ncValues(s.Arrays[""])); err != nil || !bytes.Equal(b, want) {
		t.Errorf("t2m.nc: %x, %v\nwant %x", b, err, want)
	}
}

// TestNcV3: a v3 group's file: dimensions from dimension_names (a null
// one NAME_dimK), shared by name, and renamed where a name comes with
// another length; _FillValue from xarray's base64 attribute, else the
// fill value (NaT for a datetime); datetimes as int64 with CF units;
// big-endian chunks served as stored, little-endian ones swapped;
// attributes in stored order, a bad name left out; arrays with a
// zero-length dimension or a name netCDF refuses left out.
func TestNcV3(t *testing.T) {
	root := t.TempDir()
	w := func(key, doc string) { testutil.WriteFile(t, root, key, []byte(doc)) }
	array := func(dtype string, shape string, endian string, fill, extra string) string {
		return `{"zarr_format": 3, "node_type": "array", "shape": ` + shape + `, "data_type": ` + dtype + `,
			"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": ` + shape + `}},
			"chunk_key_encoding": {"name": "default"}, "fill_value": ` + fill + `,
			"codecs": [{"name": "bytes", "configuration": {"endian": "` + endian + `"}}]` + extra + `}`
	}
	w("zarr.json", `{"zarr_format": 3, "node_type": "group", "attributes": {"title": "v3", "z_first": 1, "a_second": [1.5, 2]}}`)
	w("t/zarr.json", array(`"float32"`, "[2, 3]", "big", "0",
		`, "attributes": {"_FillValue": "AAAAAAAA+H8=", "units": "K", "bad/name": 1}, "dimension_names": ["time", null]`))
	tvals := []byte{}
	for i := range 6 {
		tvals = binary.BigEndian.AppendUint32(tvals, math.Float32bits(float32(i)+0.5))
	}
	w("t/c/0/0", string(tvals))
	w("d/zarr.json", array(`{"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}`, "[2]", "little", `"NaT"`,
		`, "dimension_names": ["time"]`))
	w("d/c/0", string(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 0), 3600)))
	w("x/zarr.json", array(`"int16"`, "[3]", "little", "0", `, "dimension_names": ["time"]`))
	w("x/c/0", "\x01\x00\x02\x00\x03\x00")
	w("e/zarr.json", array(`"int8"`, "[0]", "little", "0", ""))
	w("-bad/zarr.json", array(`"int8"`, "[1]", "little", "0", ""))
	tr, logs := treeOver(t, dirStore(t, root), func(c *Config) { c.AsNc, c.RootName = true, "g" })
	i64, f4, i2 := netcdf.Int64, netcdf.Float, netcdf.Short
	nan := binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(math.NaN())))
	f := netcdf.File{Format: netcdf.CDF5,
		Dims: []netcdf.Dim{{Name: "time", Len: 2}, {Name: "t_dim1", Len: 3}, {Name: "time_3", Len: 3}},
		Attrs: []netcdf.Attr{netcdf.Text("title", "v3"), {Name: "z_first", Type: netcdf.Int, Values: be(netcdf.Int, 1)},
			{Name: "a_second", Type: netcdf.Double, Values: append(be(i64, int64(math.Float64bits(1.5))), be(i64, int64(math.Float64bits(2)))...)}},
		Vars: []netcdf.Var{
			{Name: "d", Dims: []int{0}, Type: i64, Attrs: []netcdf.Attr{{Name: "_FillValue", Type: i64, Values: be(i64, math.MinInt64)},
				netcdf.Text("units", "seconds since 1970-01-01"), netcdf.Text("calendar", "proleptic_gregorian")}},
			{Name: "t", Dims: []int{0, 1}, Type: f4, Attrs: []netcdf.Attr{{Name: "_FillValue", Type: f4, Values: nan}, netcdf.Text("units", "K")}},
			{Name: "x", Dims: []int{2}, Type: i2, Attrs: []netcdf.Attr{{Name: "_FillValue", Type: i2, Values: be(i2, 0)}}},
		}}
	want := ncWant(t, &f, append(be(i64, 0), be(i64, 3600)...), tvals, []byte{0, 1, 0, 2, 0, 3})
	got, err := tr.ReadFile(context.Background(), "g.nc")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("g.nc: %v\n%x\nwant\n%x", err, got, want)
	}
	for _, line := range []string{`msg="array left out of the netCDF file" key=-bad`, `msg="array left out of the netCDF file" key=e`,
		`msg="attribute left out of the netCDF file" key=t attribute=bad/name`, `"dimension renamed in the netCDF file: another array`} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("no log line %s in\n%s", line, logs)
		}
	}
}

// knownFS is m, where opening a name that is neither a file of m nor a
// directory of m's files fails at once: fstest.MapFS looks through every
// file for one under it, which 8,000 arrays, each probed for a zarr.json
// it lacks, make quadratic.
type knownFS struct{ m fstest.MapFS }

func (f knownFS) Open(name string) (fs.File, error) {
	if _, ok := f.m[name]; !ok && name != "." {
		if _, ok := f.m[name+"/.zarray"]; !ok {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
	}
	return f.m.Open(name)
}

// TestNcLimits: netCDF-C's limits hold: arrays whose dimensions would take
// the file past 1024, or its variables past 8192, are left out, with a
// Warn line; an attribute name longer than 256 bytes is left out; the file
// netCDF-C would read stays.
func TestNcLimits(t *testing.T) {
	s := testutil.EmptyV2Store(t)
	s.Write(t, ".zgroup", []byte(`{"zarr_format": 2}`))
	s.Write(t, ".zattrs", []byte(`{"`+strings.Repeat("n", 300)+`": 1, "ok": 2}`))
	for i := range netcdf.MaxDims + 6 {
		s.Write(t, fmt.Sprintf("a%04d/.zarray", i), []byte(`{"zarr_format": 2, "shape": [1], "chunks": [1], "dtype": "|u1",
			"compressor": null, "fill_value": null, "order": "C", "filters": null}`))
	}
	tr, logs := newTestTree(t, s, func(c *Config) { c.AsNc, c.RootName = true, "g" })
	files, err := tr.NcFiles(context.Background())
	if err != nil || len(files) != 1 || len(files[0].Vars) != netcdf.MaxDims {
		t.Fatalf("NcFiles: %v, %v; want one file of %d variables", len(files), err, netcdf.MaxDims)
	}
	for i := netcdf.MaxDims; i < netcdf.MaxDims+6; i++ {
		if !strings.Contains(logs.String(), fmt.Sprintf(`msg="array left out of the netCDF file" key=a%04d err="its dimensions would take`, i)) {
			t.Errorf("no Warn line says a%04d is left out", i)
		}
	}
	if !strings.Contains(logs.String(), `msg="attribute left out of the netCDF file" key=.`) {
		t.Errorf("no Warn line says the long attribute name is left out:\n%.2000s", logs)
	}
	b, err := tr.ReadFile(context.Background(), "g.nc")
	if err != nil || !bytes.Contains(b, []byte("\x00\x00\x00\x02ok\x00\x00")) || bytes.Contains(b, []byte("nnnn")) {
		t.Errorf("g.nc: %d bytes, %v; want the attribute ok and not the long one", len(b), err)
	}

	// The limit of variables: 8 arrays past it, all of one dimension.
	m := fstest.MapFS{".zgroup": {Data: []byte(`{"zarr_format": 2}`)}}
	for i := range netcdf.MaxVars + 8 {
		m[fmt.Sprintf("v%04d/.zarray", i)] = &fstest.MapFile{Data: []byte(`{"zarr_format": 2, "shape": [1], "chunks": [1],
			"dtype": "|u1", "compressor": null, "fill_value": null, "order": "C", "filters": null}`)}
		m[fmt.Sprintf("v%04d/.zattrs", i)] = &fstest.MapFile{Data: []byte(`{"_ARRAY_DIMENSIONS": ["x"]}`)}
	}
	tr, logs = treeOver(t, store.FS(knownFS{m}), func(c *Config) { c.AsNc, c.RootName = true, "g" })
	files, err = tr.NcFiles(context.Background())
	if err != nil || len(files) != 1 || len(files[0].Vars) != netcdf.MaxVars {
		t.Fatalf("NcFiles of %d arrays: %v, %v; want one file of %d variables", netcdf.MaxVars+8, len(files), err, netcdf.MaxVars)
	}
	for i := netcdf.MaxVars; i < netcdf.MaxVars+8; i++ {
		if !strings.Contains(logs.String(), fmt.Sprintf(`msg="array left out of the netCDF file" key=v%04d err="the file has netCDF-C's limit of %d variables"`, i, netcdf.MaxVars)) {
			t.Errorf("no Warn line says v%04d is left out", i)
		}
	}
}
