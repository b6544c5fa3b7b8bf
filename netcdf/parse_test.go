package netcdf

import (
	"encoding/binary"
	"fmt"
)

// parseHeader reads the header of a classic file, as netCDF-C's v1hpg.c
// does, into the File it describes and each variable's Extent (Len is
// vsize as the header says it; Begin as written). It is the test's
// independent reading of files written by Encode and by netCDF-C.
func parseHeader(b []byte) (*File, []Extent, int, error) {
	r := &reader{b: b}
	if len(b) < 4 || string(b[:3]) != "CDF" {
		return nil, nil, 0, fmt.Errorf("no CDF magic")
	}
	f := &File{Format: Format(b[3])}
	r.i = 4
	r.wide = f.Format == CDF5
	if n := r.nonNeg(); n != 0 {
		return nil, nil, 0, fmt.Errorf("numrecs %d", n)
	}
	tag, n := r.int32(), r.nonNeg()
	if tag != tagDimension && (tag != 0 || n != 0) {
		return nil, nil, 0, fmt.Errorf("dim_list tag %d", tag)
	}
	for range n {
		f.Dims = append(f.Dims, Dim{Name: r.name(), Len: r.nonNeg()})
	}
	f.Attrs = r.attrs()
	tag, n = r.int32(), r.nonNeg()
	if tag != tagVariable && (tag != 0 || n != 0) {
		return nil, nil, 0, fmt.Errorf("var_list tag %d", tag)
	}
	var ext []Extent
	for range n {
		v := Var{Name: r.name()}
		for range r.nonNeg() {
			v.Dims = append(v.Dims, int(r.nonNeg()))
		}
		v.Attrs = r.attrs()
		v.Type = Type(r.int32())
		e := Extent{VSize: r.nonNeg()}
		if f.Format == CDF1 {
			e.Begin = int64(r.int32())
		} else {
			e.Begin = int64(r.uint64())
		}
		f.Vars = append(f.Vars, v)
		ext = append(ext, e)
	}
	if r.err != nil {
		return nil, nil, 0, r.err
	}
	return f, ext, r.i, nil
}

type reader struct {
	b    []byte
	i    int
	wide bool
	err  error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || r.i+n > len(r.b) {
		if r.err == nil {
			r.err = fmt.Errorf("header ends at %d", len(r.b))
		}
		return make([]byte, max(n, 0))
	}
	b := r.b[r.i : r.i+n]
	r.i += n
	return b
}

func (r *reader) int32() int32   { return int32(binary.BigEndian.Uint32(r.take(4))) }
func (r *reader) uint64() uint64 { return binary.BigEndian.Uint64(r.take(8)) }

func (r *reader) nonNeg() int64 {
	if r.wide {
		return int64(r.uint64())
	}
	return int64(uint32(r.int32()))
}

func (r *reader) padded(n int) []byte {
	b := r.take(n)
	r.take((4 - n%4) % 4)
	return b
}

func (r *reader) name() string { return string(r.padded(int(r.nonNeg()))) }

func (r *reader) attrs() []Attr {
	tag, n := r.int32(), r.nonNeg()
	if tag != tagAttribute && (tag != 0 || n != 0) {
		r.err = fmt.Errorf("att_list tag %d", tag)
		return nil
	}
	var as []Attr
	for range n {
		a := Attr{Name: r.name(), Type: Type(r.int32())}
		a.Values = append([]byte{}, r.padded(int(r.nonNeg())*a.Type.Size())...)
		as = append(as, a)
	}
	return as
}
