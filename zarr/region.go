package zarr

import (
	"bytes"
	"slices"
)

// A Box is a region of an array: Lo[i] <= x[i] < Hi[i] along each axis.
type Box struct{ Lo, Hi []int }

// ChunkBox returns the region of the array that the chunk at coords
// covers, clipped to the array's shape (edge chunks extend past it).
func (a *Array) ChunkBox(coords []int) Box {
	b := Box{Lo: make([]int, len(coords)), Hi: make([]int, len(coords))}
	for i, c := range coords {
		b.Lo[i] = c * a.Chunks[i]
		b.Hi[i] = min(b.Lo[i]+a.Chunks[i], a.Shape[i])
	}
	return b
}

// Empty reports whether the box holds no element.
func (b Box) Empty() bool {
	for i := range b.Lo {
		if b.Hi[i] <= b.Lo[i] {
			return true
		}
	}
	return false
}

// Intersect returns the region both boxes cover.
func (b Box) Intersect(c Box) Box {
	r := Box{Lo: make([]int, len(b.Lo)), Hi: make([]int, len(b.Lo))}
	for i := range b.Lo {
		r.Lo[i], r.Hi[i] = max(b.Lo[i], c.Lo[i]), min(b.Hi[i], c.Hi[i])
	}
	return r
}

// ChunksIn calls fn with the coordinates of every chunk of a that
// overlaps box, in C order, and stops when fn returns false. fn must not
// keep coords.
func (a *Array) ChunksIn(box Box, fn func(coords []int) bool) {
	if box.Empty() {
		return
	}
	rank := len(a.Chunks)
	lo, hi := make([]int, rank), make([]int, rank)
	for i := range rank {
		lo[i], hi[i] = box.Lo[i]/a.Chunks[i], (box.Hi[i]-1)/a.Chunks[i]+1
	}
	EachC(lo, hi, fn)
}

// EachC calls fn with every coordinate c, lo[i] <= c[i] < hi[i], in C
// order (the last axis fastest, as Linear counts), and stops when fn
// returns false. A rank-0 range holds one coordinate, an empty range
// none. fn must not keep c.
func EachC(lo, hi []int, fn func(c []int) bool) {
	for i := range lo {
		if lo[i] >= hi[i] {
			return
		}
	}
	c := slices.Clone(lo)
	for {
		if !fn(c) {
			return
		}
		i := len(c) - 1
		for ; i >= 0; i-- {
			if c[i]++; c[i] < hi[i] {
				break
			}
			c[i] = lo[i]
		}
		if i < 0 {
			return
		}
	}
}

// Unravel returns the coordinates of the C-order index i in a grid: the
// inverse of counting in C order, as Linear does.
func Unravel(i int64, grid []int) []int {
	c := make([]int, len(grid))
	for d := len(grid) - 1; d >= 0; d-- {
		g := int64(grid[d])
		c[d] = int(i % g)
		i /= g
	}
	return c
}

// A ChunkLayout places the elements of one chunk buffer: the array
// coordinates of its first element, its shape (the full chunk shape,
// padding included) and its memory order ("C" or "F").
type ChunkLayout struct {
	Origin []int
	Shape  []int
	Order  string
}

// Layout returns the layout of the chunk at coords of a.
func (a *Array) Layout(coords []int) ChunkLayout {
	o := make([]int, len(coords))
	for i, c := range coords {
		o[i] = c * a.Chunks[i]
	}
	return ChunkLayout{Origin: o, Shape: a.Chunks, Order: a.Order}
}

// strides returns the byte distance between neighbours along each axis.
func (l ChunkLayout) strides(itemSize int) []int {
	st := make([]int, len(l.Shape))
	s := itemSize
	if l.Order == "F" {
		for i := range l.Shape {
			st[i] = s
			s *= l.Shape[i]
		}
		return st
	}
	for i := len(l.Shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= l.Shape[i]
	}
	return st
}

// CopyBox copies the elements of box, which both chunks hold, from the
// chunk buffer src laid out as sl to dst laid out as dl. Elements are
// itemSize opaque bytes; the two orders may differ.
func CopyBox(dst []byte, dl ChunkLayout, src []byte, sl ChunkLayout, box Box, itemSize int) {
	rank := len(box.Lo)
	if box.Empty() {
		return
	}
	if rank == 0 {
		copy(dst[:itemSize], src[:itemSize])
		return
	}
	ds, ss := dl.strides(itemSize), sl.strides(itemSize)
	// The innermost loop runs along the axis that is contiguous in dst.
	inner := rank - 1
	if dl.Order == "F" {
		inner = 0
	}
	n := box.Hi[inner] - box.Lo[inner]
	run := ss[inner] == itemSize // contiguous in both: one copy per row
	d0, s0 := 0, 0
	for i := range rank {
		d0 += (box.Lo[i] - dl.Origin[i]) * ds[i]
		s0 += (box.Lo[i] - sl.Origin[i]) * ss[i]
	}
	idx := make([]int, rank) // offsets from box.Lo; idx[inner] stays 0
	for {
		d, s := d0, s0
		for i, v := range idx {
			d += v * ds[i]
			s += v * ss[i]
		}
		if run {
			copy(dst[d:d+n*itemSize], src[s:s+n*itemSize])
		} else {
			for range n {
				copy(dst[d:d+itemSize], src[s:s+itemSize])
				d += itemSize
				s += ss[inner]
			}
		}
		// Next row: count over the other axes, the fastest-varying in
		// dst first.
		k := 0
		for ; k < rank; k++ {
			ax := k
			if dl.Order != "F" {
				ax = rank - 1 - k
			}
			if ax == inner {
				continue
			}
			if idx[ax]++; idx[ax] < box.Hi[ax]-box.Lo[ax] {
				break
			}
			idx[ax] = 0
		}
		if k == rank {
			return
		}
	}
}

// FillChunk fills a chunk buffer with copies of one element (zeros when
// elem is nil).
func FillChunk(b, elem []byte) { fillBytes(b, elem) }

// AllFill reports whether every element of the chunk buffer b equals elem
// byte for byte (elem nil: no fill value, never). It compares 4 KiB at a
// time with bytes.Equal, so it runs at memory speed.
func AllFill(b, elem []byte) bool {
	n := len(elem)
	if n == 0 || len(b)%n != 0 {
		return false
	}
	var pattern [4096]byte
	m := len(pattern) / n * n
	if m == 0 { // elements over 4 KiB
		m = n
	}
	p := pattern[:0]
	if m <= len(pattern) {
		for len(p) < m {
			p = append(p, elem...)
		}
	} else {
		p = elem
	}
	for len(b) >= m {
		if !bytes.Equal(b[:m], p) {
			return false
		}
		b = b[m:]
	}
	return bytes.Equal(b, p[:len(b)])
}
