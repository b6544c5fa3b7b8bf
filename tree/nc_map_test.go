package tree

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/zfuse/zfuse/netcdf"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/zarr"
)

// The mapping of a netCDF file's byte ranges onto its variables' chunks:
// Tree.readNc over Chunks that record what they are asked for and serve
// made-up chunk bytes.

// fakeChunks serves chunk bytes made up from the chunk's path and index
// and the byte's offset in it (chunkByte), records the pieces each
// ReadPieces call asks for, and has no chunk where missing says so.
type fakeChunks struct {
	missing func(path string, chunk int64) bool

	mu    sync.Mutex
	calls []pieceCall
}

type pieceCall struct {
	Path   string
	Coords []int
	Pieces []zarr.Piece
}

func chunkByte(path string, chunk, off int64) byte {
	return byte(int64(len(path))*31 + chunk*7 + off*13 + off/256)
}

func (c *fakeChunks) ReadPieces(_ context.Context, r readahead.Ref, p []byte, ps []zarr.Piece) (int, error) {
	c.mu.Lock()
	c.calls = append(c.calls, pieceCall{r.Path, slices.Clone(r.Coords), slices.Clone(ps)})
	c.mu.Unlock()
	i := r.Array.Linear(r.Coords)
	if c.missing != nil && c.missing(r.Path, i) {
		return 0, fs.ErrNotExist
	}
	n := 0
	for _, pc := range ps {
		if pc.Off < 0 || pc.Off+pc.N > r.Array.ChunkLen() {
			return n, fmt.Errorf("piece %+v outside chunk of %d bytes", pc, r.Array.ChunkLen())
		}
		for k := range pc.N {
			p[pc.At+k] = chunkByte(r.Path, i, pc.Off+k)
		}
		n += int(pc.N)
	}
	return n, nil
}

func (c *fakeChunks) ReadAt(context.Context, readahead.Ref, []byte, int64) (int, error) {
	return 0, fmt.Errorf("fakeChunks: ReadAt")
}
func (c *fakeChunks) Open(context.Context, readahead.Ref) (*readahead.File, error) {
	return nil, fmt.Errorf("fakeChunks: Open")
}
func (c *fakeChunks) ShardIndex(context.Context, *zarr.Array, string, int64) (*zarr.Index, error) {
	return nil, fmt.Errorf("fakeChunks: ShardIndex")
}
func (c *fakeChunks) Forget(readahead.Ref)         {}
func (c *fakeChunks) SetFiles(bool)                {}
func (c *fakeChunks) SetPlacer(p readahead.Placer) {}

// mapVar is a variable of a mapped file: a C-order array as Relayout
// serves it.
type mapVar struct {
	path          string
	shape, chunks []int
	dtype         string // a v2 typestr
	typ           netcdf.Type
}

// mapFile builds the ncFile of vars (fill value 7 each) as buildNc would.
func mapFile(t testing.TB, vars []mapVar) *ncFile {
	t.Helper()
	f := &netcdf.File{}
	nf := &ncFile{}
	for _, v := range vars {
		doc, _ := json.Marshal(map[string]any{"zarr_format": 2, "shape": v.shape, "chunks": v.chunks, "dtype": v.dtype,
			"compressor": nil, "filters": nil, "fill_value": 7, "order": "C"})
		a, err := zarr.ParseV2(doc)
		if err == nil {
			a, err = a.Relayout(true)
		}
		if err != nil {
			t.Fatal(err)
		}
		nv := netcdf.Var{Name: "v" + v.path, Type: v.typ}
		for i, d := range v.shape {
			nv.Dims = append(nv.Dims, len(f.Dims))
			f.Dims = append(f.Dims, netcdf.Dim{Name: fmt.Sprintf("%s_%d", nv.Name, i), Len: int64(d)})
		}
		f.Vars = append(f.Vars, nv)
		nf.vars = append(nf.vars, ncVar{path: v.path, a: a, fill: a.Fill})
	}
	f.Format = f.MinFormat()
	l, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	nf.layout = l
	return nf
}

// mapRead reads [off, off+n) of f through readNc over fc.
func mapRead(t testing.TB, f *ncFile, fc *fakeChunks, off, n int64) ([]byte, error) {
	tr := New(Config{Chunks: fc, AsNc: true})
	node := ncNode(".", "x.nc", f)
	return tr.ReadAt(context.Background(), node, make([]byte, n), off, 0)
}

// mapWant is byte o of f as the formats say, computed element by element
// (not through Segments or Pieces): the header, a variable's element in C
// order, its chunk and the offset in it, or padding as the fill value.
func mapWant(f *ncFile, missing func(string, int64) bool, o int64) byte {
	if o < int64(len(f.layout.Header)) {
		return f.layout.Header[o]
	}
	for i, e := range f.layout.Vars {
		if o < e.Begin || o >= e.Begin+e.VSize {
			continue
		}
		v := f.vars[i]
		a := v.a
		size := int64(a.ItemSize)
		if o >= e.Begin+e.Len {
			return v.fill[(o-e.Begin-e.Len)%size]
		}
		el, b := (o-e.Begin)/size, (o-e.Begin)%size
		rank := len(a.Shape)
		coords, local := make([]int, rank), make([]int, rank)
		for d := rank - 1; d >= 0; d-- {
			x := int(el % int64(a.Shape[d]))
			el /= int64(a.Shape[d])
			coords[d], local[d] = x/a.Chunks[d], x%a.Chunks[d]
		}
		chunk := a.Linear(coords)
		if missing != nil && missing(v.path, chunk) {
			return a.Fill[b]
		}
		in := int64(0)
		for d := range rank {
			in = in*int64(a.Chunks[d]) + int64(local[d])
		}
		return chunkByte(v.path, chunk, in*size+b)
	}
	panic(fmt.Sprintf("offset %d outside the file", o))
}

// TestNcMap: rows of byte ranges of one file and the chunk pieces each
// variable's chunks are asked for, in order (At counts from where the
// range meets the variable's values).
func TestNcMap(t *testing.T) {
	// v0: 3×5 int16 in chunks of 2×2 (30 bytes, 2 of padding); v1: 4
	// uint8 in chunks of 3 (4 bytes).
	f := mapFile(t, []mapVar{
		{"a", []int{3, 5}, []int{2, 2}, "<i2", netcdf.Short},
		{"b", []int{4}, []int{3}, "|u1", netcdf.UByte},
	})
	h, b0, b1 := int64(len(f.layout.Header)), f.layout.Vars[0].Begin, f.layout.Vars[1].Begin
	if b0 != h || b1 != h+32 || f.layout.Size != h+36 {
		t.Fatalf("layout %+v, header %d", f.layout.Vars, h)
	}
	p := func(off, at, n int64) zarr.Piece { return zarr.Piece{Off: off, At: at, N: n} }
	call := func(path string, coords []int, ps ...zarr.Piece) pieceCall {
		for i := range ps {
			ps[i].Chunk = int64(coords[0])
			if len(coords) == 2 {
				ps[i].Chunk = int64(coords[0]*3 + coords[1])
			}
		}
		return pieceCall{path, coords, ps}
	}
	for _, tc := range []struct {
		name   string
		off, n int64
		want   []pieceCall
	}{
		{"the header only", 0, h, nil},
		{"a's first row", b0, 10, []pieceCall{call("a", []int{0, 0}, p(0, 0, 4)), call("a", []int{0, 1}, p(0, 4, 4)), call("a", []int{0, 2}, p(0, 8, 2))}},
		{"a's first two rows", b0, 20, []pieceCall{
			call("a", []int{0, 0}, p(0, 0, 4), p(4, 10, 4)), call("a", []int{0, 1}, p(0, 4, 4), p(4, 14, 4)), call("a", []int{0, 2}, p(0, 8, 2), p(4, 18, 2))}},
		{"the header's end and an element's second byte", b0 - 3, 5, []pieceCall{call("a", []int{0, 0}, p(0, 0, 2))}},
		{"a's last row, its padding, b", b0 + 20, 16, []pieceCall{
			call("a", []int{1, 0}, p(0, 0, 4)), call("a", []int{1, 1}, p(0, 4, 4)), call("a", []int{1, 2}, p(0, 8, 2)),
			call("b", []int{0}, p(0, 0, 3)), call("b", []int{1}, p(0, 3, 1))}},
		{"padding only", b0 + 30, 2, nil},
		{"b's edge chunk", b1 + 3, 1, []pieceCall{call("b", []int{1}, p(0, 0, 1))}},
		{"past the end", f.layout.Size, 4, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeChunks{}
			got, err := mapRead(t, f, fc, tc.off, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fc.calls, tc.want) {
				t.Errorf("asked for\n%v\nwant\n%v", fc.calls, tc.want)
			}
			for k, c := range got {
				if w := mapWant(f, nil, tc.off+int64(k)); c != w {
					t.Fatalf("byte %d: %d, want %d", tc.off+int64(k), c, w)
				}
			}
		})
	}
}

// FuzzNcMap: any byte range of a file of up to three variables (any
// shapes, chunk shapes and element sizes, some chunks missing) reads the
// bytes computed element by element (mapWant).
func FuzzNcMap(f *testing.F) {
	f.Add([]byte{3, 5, 2, 2, 4, 3}, uint8(7), int64(0), int64(4096))
	f.Add([]byte{1, 1, 1, 1}, uint8(0), int64(90), int64(3))
	f.Add([]byte{9, 2, 7, 3, 2, 2, 5, 1, 3, 4, 4, 4}, uint8(0x93), int64(200), int64(77))
	types := []struct {
		dtype string
		typ   netcdf.Type
	}{{"|u1", netcdf.UByte}, {"<i2", netcdf.Short}, {">f4", netcdf.Float}, {"<f8", netcdf.Double}}
	f.Fuzz(func(t *testing.T, dims []byte, kinds uint8, off, n int64) {
		var vars []mapVar
		// dims: per variable a rank byte, then rank (length, chunk) pairs.
		for i := 0; i < len(dims) && len(vars) < 3; {
			rank := int(dims[i]) % 4
			i++
			if i+2*rank > len(dims) {
				break
			}
			v := mapVar{path: fmt.Sprint(len(vars)), shape: []int{}, chunks: []int{}}
			for d := range rank {
				l, c := 1+int(dims[i+2*d])%12, 1+int(dims[i+2*d+1])%12
				v.shape, v.chunks = append(v.shape, l), append(v.chunks, c)
			}
			i += 2 * rank
			k := types[int(kinds>>(2*len(vars)))%len(types)]
			v.dtype, v.typ = k.dtype, k.typ
			vars = append(vars, v)
		}
		file := mapFile(t, vars)
		missing := func(path string, chunk int64) bool { return (chunk+int64(len(path)))%4 == 3 }
		if n = n % (1 << 16); n <= 0 {
			return
		}
		got, err := mapRead(t, file, &fakeChunks{missing: missing}, off, n)
		if off < 0 || off >= file.layout.Size {
			if err != nil || len(got) != 0 {
				t.Fatalf("read [%d, +%d) outside a file of %d bytes: %d bytes, %v", off, n, file.layout.Size, len(got), err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := min(n, file.layout.Size-off); int64(len(got)) != want {
			t.Fatalf("read [%d, +%d) of %d bytes: %d bytes, want %d", off, n, file.layout.Size, len(got), want)
		}
		want := make([]byte, len(got))
		for k := range want {
			want[k] = mapWant(file, missing, off+int64(k))
		}
		if !bytes.Equal(got, want) {
			i := 0
			for got[i] == want[i] {
				i++
			}
			t.Fatalf("read [%d, +%d): byte %d is %d, want %d", off, n, off+int64(i), got[i], want[i])
		}
	})
}
