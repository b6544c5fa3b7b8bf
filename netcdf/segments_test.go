package netcdf

import (
	"fmt"
	"reflect"
	"testing"
)

// segFile is a file of three variables: 5 shorts (10 bytes, 2 of
// padding), a scalar double, 3 bytes (1 of padding).
var segFile = File{Format: CDF2, Dims: []Dim{{"x", 5}, {"y", 3}},
	Vars: []Var{{Name: "s", Dims: []int{0}, Type: Short}, {Name: "d", Type: Double}, {Name: "b", Dims: []int{1}, Type: Byte}}}

func TestSegments(t *testing.T) {
	l, err := segFile.Encode()
	if err != nil {
		t.Fatal(err)
	}
	h := int64(len(l.Header))
	if want := []Extent{{h, 10, 12}, {h + 12, 8, 8}, {h + 20, 3, 4}}; !reflect.DeepEqual(l.Vars, want) || l.Size != h+24 {
		t.Fatalf("extents %v, size %d; want %v, %d", l.Vars, l.Size, want, h+24)
	}
	hdr := func(off, at, n int64) Segment { return Segment{Var: -1, Off: off, At: at, N: n} }
	val := func(v int, off, at, n int64) Segment { return Segment{Var: v, Off: off, At: at, N: n} }
	pad := func(v int, off, at, n int64) Segment { return Segment{Var: v, Pad: true, Off: off, At: at, N: n} }
	for _, tc := range []struct {
		name   string
		off, n int64
		want   []Segment
	}{
		{"the header", 0, h, []Segment{hdr(0, 0, h)}},
		{"in the header", 3, 5, []Segment{hdr(3, 0, 5)}},
		{"header and values", h - 2, 4, []Segment{hdr(h-2, 0, 2), val(0, 0, 2, 2)}},
		{"values and padding", h + 8, 3, []Segment{val(0, 8, 0, 2), pad(0, 0, 2, 1)}},
		{"padding only", h + 10, 2, []Segment{pad(0, 0, 0, 2)}},
		{"across a variable", h + 11, 10, []Segment{pad(0, 1, 0, 1), val(1, 0, 1, 8), val(2, 0, 9, 1)}},
		{"the whole file", 0, 1 << 20, []Segment{hdr(0, 0, h), val(0, 0, h, 10), pad(0, 0, h+10, 2),
			val(1, 0, h+12, 8), val(2, 0, h+20, 3), pad(2, 0, h+23, 1)}},
		{"the last byte", h + 23, 1, []Segment{pad(2, 0, 0, 1)}},
		{"past the end", h + 24, 5, nil},
		{"negative offset", -1, 5, nil},
		{"nothing", 4, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := l.Segments(nil, tc.off, tc.n); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Segments(%d, %d) =\n%v\nwant\n%v", tc.off, tc.n, got, tc.want)
			}
		})
	}
}

// FuzzSegments: the segments of any range tile it (clipped to the file)
// in order, each within its source: the header, a variable's values, or
// its padding.
func FuzzSegments(f *testing.F) {
	f.Add(uint8(5), uint8(3), uint8(2), int64(0), int64(1000))
	f.Add(uint8(1), uint8(1), uint8(0), int64(100), int64(7))
	f.Fuzz(func(t *testing.T, n0, n1, types uint8, off, n int64) {
		file := File{Format: CDF5, Dims: []Dim{{"a", int64(n0) + 1}, {"b", int64(n1) + 1}}}
		for i := range 3 {
			typ := Type(1 + (int(types)>>(2*i))%11)
			file.Vars = append(file.Vars, Var{Name: fmt.Sprint("v", i), Dims: []int{i % 2, 1}[:1+i%2], Type: typ})
		}
		l, err := file.Encode()
		if err != nil {
			t.Fatal(err)
		}
		segs := l.Segments(nil, off, n)
		end := min(off+max(n, 0), l.Size)
		if off < 0 || n <= 0 || off >= l.Size {
			if len(segs) != 0 {
				t.Fatalf("Segments(%d, %d) of a %d-byte file: %v", off, n, l.Size, segs)
			}
			return
		}
		at := int64(0)
		for _, s := range segs {
			if s.At != at || s.N <= 0 {
				t.Fatalf("segment %+v at %d", s, at)
			}
			o := off + at // the file offset of the segment
			switch {
			case s.Var == -1:
				if s.Off != o || o+s.N > int64(len(l.Header)) {
					t.Fatalf("header segment %+v at file offset %d", s, o)
				}
			case s.Pad:
				e := l.Vars[s.Var]
				if e.Begin+e.Len+s.Off != o || s.Off+s.N > e.VSize-e.Len {
					t.Fatalf("padding segment %+v at file offset %d, extent %+v", s, o, e)
				}
			default:
				e := l.Vars[s.Var]
				if e.Begin+s.Off != o || s.Off+s.N > e.Len {
					t.Fatalf("values segment %+v at file offset %d, extent %+v", s, o, e)
				}
			}
			at += s.N
		}
		if off+at != end {
			t.Fatalf("segments cover [%d, %d), want [%d, %d)", off, off+at, off, end)
		}
	})
}
