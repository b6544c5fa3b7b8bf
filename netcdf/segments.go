package netcdf

import "sort"

// A Segment is a run of bytes of a file that one source serves: the
// header (Var is -1), the values of variable Var, or the padding after
// them (Pad). Off is the offset in that source (in the header, in the
// variable's values, or in its padding), At the offset in the range given
// to Segments, N the length.
type Segment struct {
	Var        int
	Pad        bool
	Off, At, N int64
}

// Segments appends to dst the segments of the file's bytes [off, off+n),
// clipped to Size, in file order, and returns the extended slice.
func (l *Layout) Segments(dst []Segment, off, n int64) []Segment {
	if off < 0 || n <= 0 || off >= l.Size {
		return dst
	}
	end := off + min(n, l.Size-off)
	o := off
	if h := int64(len(l.Header)); o < h {
		k := min(end, h) - o
		dst = append(dst, Segment{Var: -1, Off: o, At: o - off, N: k})
		o += k
	}
	// The first variable whose extent reaches past o.
	i := sort.Search(len(l.Vars), func(i int) bool { return l.Vars[i].Begin+l.Vars[i].VSize > o })
	for ; o < end && i < len(l.Vars); i++ {
		e := l.Vars[i]
		if in := o - e.Begin; in < e.Len {
			k := min(end, e.Begin+e.Len) - o
			dst = append(dst, Segment{Var: i, Off: in, At: o - off, N: k})
			o += k
		}
		if o < end && o < e.Begin+e.VSize {
			k := min(end, e.Begin+e.VSize) - o
			dst = append(dst, Segment{Var: i, Pad: true, Off: o - e.Begin - e.Len, At: o - off, N: k})
			o += k
		}
	}
	return dst
}
