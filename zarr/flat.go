package zarr

import "math"

// The flat layout of an array is every element of it in one buffer, in
// the array's order (C: the last axis varies fastest; F: the first), as
// numpy holds an array in memory and a .npy file holds it on disk. zfuse's
// .npy view serves it. Along its contiguous axis the flat layout is rows of
// Shape[axis] elements; the chunks cut each row into runs of Chunks[axis]
// elements, and a chunk holds its runs in the same order, so a byte range
// of the flat layout maps onto runs of bytes of the chunks it covers
// (Pieces), each contiguous in both.

// FlatLen returns the size of the flat layout in bytes: the number of
// elements times the item size, or -1 when that does not fit in an int64.
func (a *Array) FlatLen() int64 {
	n := int64(a.ItemSize)
	for _, d := range a.Shape {
		if d != 0 && n > math.MaxInt64/int64(d) {
			return -1
		}
		n *= int64(d)
	}
	return n
}

// A Piece is a run of bytes of the flat layout that lies in one chunk: N
// bytes at offset Off of the decoded chunk whose linear index (Linear) is
// Chunk, and at At in the range given to Pieces.
type Piece struct {
	Chunk, Off, At, N int64
}

// fastAxis is the axis along which the array's elements are contiguous:
// the last for order C, the first for F. The array must have rank 1 or
// more.
func (a *Array) fastAxis() int {
	if a.Order == "F" {
		return 0
	}
	return len(a.Shape) - 1
}

// RunLen returns the bytes of one run of a chunk along its contiguous axis
// (Chunks[axis] elements): a chunk's first RunLen bytes are the first of
// its bytes that a scan of the flat layout meets. For a 0-d array it is
// the item size.
func (a *Array) RunLen() int64 {
	if len(a.Chunks) == 0 {
		return int64(a.ItemSize)
	}
	return int64(a.Chunks[a.fastAxis()]) * int64(a.ItemSize)
}

// Pieces appends to dst the pieces of the flat layout's bytes [off,
// off+n), clipped to FlatLen, in flat order, and returns the extended
// slice. Runs that are contiguous both in the flat layout and in one chunk
// (a chunk that spans whole rows) are one piece. Edge chunks extend past
// the array; the flat layout holds only the elements inside it. Offsets
// need not fall on element boundaries.
func (a *Array) Pieces(dst []Piece, off, n int64) []Piece {
	size := a.FlatLen()
	if off < 0 || n <= 0 || size <= 0 || off >= size {
		return dst
	}
	end := off + min(n, size-off)
	if len(a.Shape) == 0 {
		return append(dst, Piece{Chunk: 0, Off: off, At: 0, N: end - off})
	}
	rank, f, item := len(a.Shape), a.fastAxis(), int64(a.ItemSize)
	row := int64(a.Shape[f]) * item  // bytes of one row of the flat layout
	run := int64(a.Chunks[f]) * item // bytes of one run of a chunk
	// Element strides of a chunk's buffer along each axis, and the linear
	// index steps of the chunk grid (C order).
	cs, gs := make([]int64, rank), make([]int64, rank)
	s := int64(1)
	for k := range rank {
		ax := rank - 1 - k // C: the last axis is contiguous
		if a.Order == "F" {
			ax = k
		}
		cs[ax] = s
		s *= int64(a.Chunks[ax])
	}
	g := int64(1)
	for ax := rank - 1; ax >= 0; ax-- {
		gs[ax] = g
		g *= int64(a.grid[ax])
	}
	for o := off; o < end; {
		r, b := o/row, o%row // row index over the other axes, byte in the row
		var chunk, local int64
		// The other axes, fastest first: C from rank-2 down to 0, F from
		// 1 up.
		for k := range rank - 1 {
			ax := rank - 2 - k
			if a.Order == "F" {
				ax = k + 1
			}
			d := int64(a.Shape[ax])
			x := r % d
			r /= d
			c := int64(a.Chunks[ax])
			chunk += x / c * gs[ax]
			local += x % c * cs[ax]
		}
		cf, in := b/run, b%run
		chunk += cf * gs[f]
		k := min(end-o, min(row, (cf+1)*run)-b)
		p := Piece{Chunk: chunk, Off: local*item + in, At: o - off, N: k}
		if last := len(dst) - 1; last >= 0 && dst[last].Chunk == p.Chunk &&
			dst[last].Off+dst[last].N == p.Off && dst[last].At+dst[last].N == p.At {
			dst[last].N += k
		} else {
			dst = append(dst, p)
		}
		o += k
	}
	return dst
}

// FillPiece fills b, the bytes of piece p of a chunk that does not exist,
// with what such a chunk reads as: copies of the fill value (zeros when
// there is none), starting at the byte of an element where p.Off falls.
func (a *Array) FillPiece(b []byte, p Piece) {
	elem := a.Fill
	if len(elem) == 0 {
		clear(b)
		return
	}
	i := copy(b, elem[p.Off%int64(len(elem)):])
	fillBytes(b[i:], elem)
}
