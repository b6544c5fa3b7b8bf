package zarr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// flatArray parses a v2 array of the given shape, chunks, dtype and order,
// uncompressed.
func flatArray(t testing.TB, shape, chunks []int, dtype, order string, fill any) *Array {
	t.Helper()
	doc, _ := json.Marshal(map[string]any{"zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": dtype,
		"compressor": nil, "filters": nil, "fill_value": fill, "order": order})
	a, err := ParseV2(doc)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// chunkBytes is the decoded content of chunk i of a: every byte distinct
// from its neighbours and from the other chunks' (as far as a byte can).
func chunkBytes(a *Array, i int64) []byte {
	b := make([]byte, a.ChunkLen())
	r := rand.New(rand.NewPCG(uint64(i), 7))
	for j := range b {
		b[j] = byte(r.Uint32())
	}
	return b
}

// flatReference assembles a's whole flat layout from chunkBytes with
// CopyBox (the region code, which shares nothing with Pieces): the array
// is one chunk whose shape is the array's, at the origin, in a's order.
func flatReference(a *Array) []byte {
	whole := ChunkLayout{Origin: make([]int, len(a.Shape)), Shape: a.Shape, Order: a.Order}
	out := make([]byte, a.FlatLen())
	for i := range a.NumChunks() {
		c := a.Coords(i)
		CopyBox(out, whole, chunkBytes(a, i), a.Layout(c), a.ChunkBox(c), a.ItemSize)
	}
	return out
}

// assemble reads [off, off+n) of a's flat layout through Pieces, and
// checks the pieces' invariants: in order, back to back from At 0, each
// inside its chunk.
func assemble(t testing.TB, a *Array, off, n int64) []byte {
	t.Helper()
	ps := a.Pieces(nil, off, n)
	want := max(min(n, a.FlatLen()-off), 0)
	out := make([]byte, want)
	at := int64(0)
	for _, p := range ps {
		if p.At != at || p.N <= 0 || p.Off < 0 || p.Off+p.N > a.ChunkLen() || p.Chunk < 0 || p.Chunk >= a.NumChunks() {
			t.Fatalf("Pieces(%d, %d) of %v/%v %s: bad piece %+v after %d bytes", off, n, a.Shape, a.Chunks, a.Order, p, at)
		}
		copy(out[p.At:], chunkBytes(a, p.Chunk)[p.Off:p.Off+p.N])
		at += p.N
	}
	if at != want {
		t.Fatalf("Pieces(%d, %d) of %v/%v: %d bytes, want %d", off, n, a.Shape, a.Chunks, at, want)
	}
	return out
}

func TestPieces(t *testing.T) {
	tests := []struct {
		name          string
		shape, chunks []int
		dtype, order  string
		off, n        int64
		want          []Piece
	}{
		{"1-D, inside one chunk", []int{10}, []int{4}, "<i4", "C", 4, 8, []Piece{{0, 4, 0, 8}}},
		{"1-D, across chunks", []int{10}, []int{4}, "<i4", "C", 12, 12, []Piece{{0, 12, 0, 4}, {1, 0, 4, 8}}},
		{"1-D, edge chunk: only the elements inside", []int{10}, []int{4}, "<i4", "C", 30, 100, []Piece{{1, 14, 0, 2}, {2, 0, 2, 8}}},
		{"1-D, past the end", []int{10}, []int{4}, "<i4", "C", 40, 8, nil},
		{"0-d", []int{}, []int{}, "<f8", "C", 3, 100, []Piece{{0, 3, 0, 5}}},
		{"empty array", []int{0, 3}, []int{2, 2}, "<i4", "C", 0, 100, nil},
		// 3×5 |u1 in 2×2 chunks: grid 2×3; row 0 is chunks 0, 1, 2.
		{"C: one row crosses chunks", []int{3, 5}, []int{2, 2}, "|u1", "C", 0, 5,
			[]Piece{{0, 0, 0, 2}, {1, 0, 2, 2}, {2, 0, 4, 1}}},
		{"C: second row, odd offsets", []int{3, 5}, []int{2, 2}, "|u1", "C", 6, 3,
			[]Piece{{0, 3, 0, 1}, {1, 2, 1, 2}}},
		{"C: the edge row", []int{3, 5}, []int{2, 2}, "|u1", "C", 10, 5,
			[]Piece{{3, 0, 0, 2}, {4, 0, 2, 2}, {5, 0, 4, 1}}},
		// F: the flat layout runs down axis 0. Column 0 is chunks 0 and 3
		// (grid 2×3, C-order linear indices).
		{"F: one column crosses chunks", []int{3, 5}, []int{2, 2}, "|u1", "F", 0, 3,
			[]Piece{{0, 0, 0, 2}, {3, 0, 2, 1}}},
		{"F: second column", []int{3, 5}, []int{2, 2}, "|u1", "F", 3, 3,
			[]Piece{{0, 2, 0, 2}, {3, 2, 2, 1}}},
		// Chunks spanning whole rows: consecutive rows are one piece.
		{"C: whole rows merge", []int{4, 3}, []int{2, 3}, "<i2", "C", 2, 20,
			[]Piece{{0, 2, 0, 10}, {1, 0, 10, 10}}},
		{"C: padded rows do not merge", []int{4, 3}, []int{2, 4}, "<i2", "C", 0, 12,
			[]Piece{{0, 0, 0, 6}, {0, 8, 6, 6}}},
		{"every itemsize: |V5, mid element", []int{3}, []int{2}, "|V5", "C", 7, 6, []Piece{{0, 7, 0, 3}, {1, 0, 3, 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := flatArray(t, tc.shape, tc.chunks, tc.dtype, tc.order, 0)
			if got := a.Pieces(nil, tc.off, tc.n); !slices.Equal(got, tc.want) {
				t.Errorf("Pieces(%d, %d) = %v, want %v", tc.off, tc.n, got, tc.want)
			}
		})
	}
}

// TestPiecesAssemble compares every range of small arrays, read through
// Pieces, with the flat layout CopyBox assembles: C and F, edge chunks in
// every axis, every item size zfuse presents.
func TestPiecesAssemble(t *testing.T) {
	dtypes := []string{"|b1", "|u1", "<i2", ">i2", "<f4", "<f8", "<c16", "<f16", "|S3", "<U3", "|V5", "<M8[ns]"}
	layouts := []struct{ shape, chunks []int }{
		{[]int{7}, []int{3}},
		{[]int{5, 7}, []int{2, 3}},
		{[]int{4, 6}, []int{4, 6}},
		{[]int{4, 6}, []int{3, 6}},
		{[]int{4, 6}, []int{5, 7}}, // one chunk larger than the array
		{[]int{3, 4, 5}, []int{2, 3, 2}},
		{[]int{2, 3, 2, 3}, []int{1, 2, 2, 2}},
		{[]int{}, []int{}},
	}
	for _, dt := range dtypes {
		for _, l := range layouts {
			for _, order := range []string{"C", "F"} {
				a := flatArray(t, l.shape, l.chunks, dt, order, nil)
				ref := flatReference(a)
				name := fmt.Sprintf("%s %v/%v %s", dt, l.shape, l.chunks, order)
				size := a.FlatLen()
				step := max(size/40, 1) // every offset of small arrays, a sample of larger ones
				for off := int64(0); off <= size; off += step {
					for _, n := range []int64{1, int64(a.ItemSize) + 1, 7, size} {
						got := assemble(t, a, off, n)
						if want := ref[off:min(off+n, size)]; !bytes.Equal(got, want) {
							t.Fatalf("%s: [%d, +%d) = %x, want %x", name, off, n, got, want)
						}
					}
				}
			}
		}
	}
}

func TestRunLen(t *testing.T) {
	for _, tc := range []struct {
		order string
		want  int64
	}{{"C", 3 * 8}, {"F", 2 * 8}} {
		if got := flatArray(t, []int{5, 7}, []int{2, 3}, "<f8", tc.order, 0).RunLen(); got != tc.want {
			t.Errorf("order %s: RunLen %d, want %d", tc.order, got, tc.want)
		}
	}
}

func TestFillPiece(t *testing.T) {
	a := flatArray(t, []int{10}, []int{4}, "<i4", "C", 0x01020304)
	b := make([]byte, 9)
	a.FillPiece(b, Piece{Off: 6, N: 9}) // from the third byte of an element
	if want := []byte{2, 1, 4, 3, 2, 1, 4, 3, 2}; !bytes.Equal(b, want) {
		t.Errorf("FillPiece = %v, want %v", b, want)
	}
	none := flatArray(t, []int{10}, []int{4}, "<i4", "C", nil)
	b = []byte{9, 9, 9}
	none.FillPiece(b, Piece{Off: 1, N: 3})
	if !bytes.Equal(b, []byte{0, 0, 0}) {
		t.Errorf("FillPiece without a fill value = %v, want zeros", b)
	}
}

func TestFlatLen(t *testing.T) {
	if n := flatArray(t, []int{1 << 40, 1 << 30}, []int{1 << 20, 1}, "<f8", "C", 0).FlatLen(); n != -1 {
		t.Errorf("FlatLen of 2^70 elements = %d, want -1", n)
	}
	if n := flatArray(t, []int{3, 0}, []int{2, 2}, "<f8", "C", 0).FlatLen(); n != 0 {
		t.Errorf("FlatLen of an empty array = %d, want 0", n)
	}
}

// FuzzPieces maps arbitrary ranges of arbitrary small layouts: the pieces
// tile the range, lie inside their chunks, and carry the bytes the
// region code places there.
func FuzzPieces(f *testing.F) {
	f.Add(uint8(5), uint8(7), uint8(0), uint8(2), uint8(3), uint8(0), uint8(4), false, int64(3), int64(50))
	f.Add(uint8(3), uint8(4), uint8(5), uint8(2), uint8(3), uint8(2), uint8(1), true, int64(0), int64(1000))
	f.Add(uint8(0), uint8(0), uint8(0), uint8(1), uint8(1), uint8(1), uint8(8), false, int64(0), int64(8))
	sizes := []string{"|u1", "<i2", "|S3", "<f4", "|V5", "<f8", "<U3", "<c16"}
	f.Fuzz(func(t *testing.T, s0, s1, s2, c0, c1, c2, dt uint8, fortran bool, off, n int64) {
		shape, chunks := []int{}, []int{}
		for i, s := range []uint8{s0, s1, s2} { // rank: the leading non-zero chunk sizes
			c := []uint8{c0, c1, c2}[i]
			if c == 0 {
				break
			}
			shape, chunks = append(shape, int(s%9)), append(chunks, int(c%9)+1)
		}
		order := "C"
		if fortran {
			order = "F"
		}
		a := flatArray(t, shape, chunks, sizes[int(dt)%len(sizes)], order, nil)
		size := a.FlatLen()
		off, n = off%(size+2), n%(size+3)
		if off < 0 || n < 0 {
			return
		}
		got := assemble(t, a, off, n)
		if want := flatReference(a)[min(off, size):min(off+n, size)]; !bytes.Equal(got, want) {
			t.Fatalf("%v/%v %s [%d, +%d) = %x, want %x", shape, chunks, order, off, n, got, want)
		}
	})
}

// BenchmarkPieces maps 1 MiB reads (a FUSE request) of the flat layout
// of a 128×1024×1024 float32 array in chunks of 1×128×128 (64 KiB) and
// 1×512×512 (1 MiB): MB/s of the flat layout mapped.
func BenchmarkPieces(b *testing.B) {
	for _, side := range []int{128, 512} {
		b.Run(fmt.Sprintf("chunks_%dx%d", side, side), func(b *testing.B) {
			a := flatArray(b, []int{128, 1024, 1024}, []int{1, side, side}, "<f4", "C", 0)
			var ps []Piece
			b.SetBytes(1 << 20)
			b.ReportAllocs()
			off := int64(0)
			for b.Loop() {
				ps = a.Pieces(ps[:0], off, 1<<20)
				off = (off + 1<<20) % a.FlatLen()
			}
			b.ReportMetric(float64(len(ps)), "pieces/op")
		})
	}
}
