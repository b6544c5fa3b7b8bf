package netcdf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A File describes a classic file: its format, dimensions, global
// attributes and variables, in the order the header lists them. The
// strings are names as Name returns them.
type File struct {
	Format Format
	Dims   []Dim
	Attrs  []Attr // global attributes
	Vars   []Var
}

// A Dim is a dimension: a name and a fixed, positive length.
type Dim struct {
	Name string
	Len  int64
}

// A Var is a variable: its dimensions (indexes into File.Dims, slowest
// first), its type and its attributes.
type Var struct {
	Name  string
	Dims  []int
	Type  Type
	Attrs []Attr
}

// An Attr is an attribute: a type and its values, big-endian, len(Values)
// a multiple of the type's size (for Char, the bytes of the text).
type Attr struct {
	Name   string
	Type   Type
	Values []byte
}

// Len returns the number of values of a.
func (a Attr) Len() int {
	if s := a.Type.Size(); s > 0 {
		return len(a.Values) / s
	}
	return 0
}

// ErrInvalid means a File cannot be written in its format, or breaks
// netCDF-C's limits; the wrapping error says how.
var ErrInvalid = errors.New("netcdf: invalid file")

// Elems returns the number of values of variable v of f (1 for a scalar),
// or -1 when that overflows an int64 or v names a dimension f lacks.
func (f *File) Elems(v *Var) int64 {
	n := int64(1)
	for _, d := range v.Dims {
		if d < 0 || d >= len(f.Dims) {
			return -1
		}
		l := f.Dims[d].Len
		if l < 0 || (l > 0 && n > math.MaxInt64/l) {
			return -1
		}
		n *= l
	}
	return n
}

// dataLen returns the bytes of variable v's values, unpadded; -1 on
// overflow.
func (f *File) dataLen(v *Var) int64 {
	n, s := f.Elems(v), int64(v.Type.Size())
	if n < 0 || s == 0 || n > (math.MaxInt64-3)/s {
		return -1
	}
	return n * s
}

// MinFormat returns the first of CDF-2 and CDF-5 that can hold f's
// dimensions and variables: CDF-2 unless a variable has one of the types
// only CDF-5 has, or more than 2^32 - 4 bytes, or a dimension is 2^31 or
// longer. Attributes are not considered: callers choose their types for
// the format (FromJSON).
func (f *File) MinFormat() Format {
	for _, d := range f.Dims {
		if d.Len > maxLen32 {
			return CDF5
		}
	}
	for i := range f.Vars {
		v := &f.Vars[i]
		if !v.Type.In(CDF2) || f.dataLen(v) > maxVSize {
			return CDF5
		}
	}
	return CDF2
}

// An Extent is where one variable's values lie in the file: Len bytes
// from Begin, then padding to VSize (Len rounded up to a multiple of 4),
// which reads as the variable's fill value, as netCDF-C writes it.
type Extent struct {
	Begin, Len, VSize int64
}

// A Layout is an encoded file: its header, where each variable lies (in
// File.Vars order), and the size of the whole file. It is immutable.
type Layout struct {
	Format Format
	Header []byte
	Vars   []Extent
	Size   int64
}

// Encode checks f and returns its layout. The header is netCDF-C's for
// the same file: the data part starts right after it, and each variable
// follows the one before, at multiples of 4. It fails, with an error
// wrapping ErrInvalid (or ErrName), where f breaks the grammar of its
// format (a type it lacks, a length or count its fields cannot hold, a
// repeated name, a dimension of length 0, which would be the record
// dimension), or netCDF-C's limits (MaxDims, MaxVars, MaxAttrs,
// MaxVarDims).
func (f *File) Encode() (*Layout, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	w := &writer{wide: f.Format == CDF5}
	w.b = append(w.b, 'C', 'D', 'F', byte(f.Format))
	w.nonNeg(0) // numrecs
	if len(f.Dims) == 0 {
		w.absent()
	} else {
		w.tag(tagDimension, len(f.Dims))
		for _, d := range f.Dims {
			w.name(d.Name)
			w.nonNeg(d.Len)
		}
	}
	w.attrs(f.Attrs)
	begins := make([]int, len(f.Vars)) // where each begin field lies in the header
	if len(f.Vars) == 0 {
		w.absent()
	} else {
		w.tag(tagVariable, len(f.Vars))
		for i := range f.Vars {
			v := &f.Vars[i]
			w.name(v.Name)
			w.nonNeg(int64(len(v.Dims)))
			for _, d := range v.Dims {
				w.nonNeg(int64(d))
			}
			w.attrs(v.Attrs)
			w.int32(int32(v.Type))
			w.nonNeg(round4(f.dataLen(v))) // check keeps it within 32 bits outside CDF-5
			begins[i] = len(w.b)
			if f.Format == CDF1 {
				w.int32(0)
			} else {
				w.int64(0)
			}
		}
	}
	l := &Layout{Format: f.Format, Header: w.b, Vars: make([]Extent, len(f.Vars))}
	at := int64(len(w.b))
	for i := range f.Vars {
		n := f.dataLen(&f.Vars[i])
		l.Vars[i] = Extent{Begin: at, Len: n, VSize: round4(n)}
		if f.Format == CDF1 {
			binary.BigEndian.PutUint32(w.b[begins[i]:], uint32(at))
		} else {
			binary.BigEndian.PutUint64(w.b[begins[i]:], uint64(at))
		}
		at += round4(n)
	}
	l.Size = at
	if f.Format == CDF1 && len(f.Vars) > 0 && l.Vars[len(f.Vars)-1].Begin > math.MaxInt32 {
		return nil, fmt.Errorf("%w: a begin offset past 2 GiB in a CDF-1 file", ErrInvalid)
	}
	return l, nil
}

// check reports what keeps f from being written.
func (f *File) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
	switch f.Format {
	case CDF1, CDF2, CDF5:
	default:
		return bad("format %v", f.Format)
	}
	if len(f.Dims) > MaxDims || len(f.Vars) > MaxVars {
		return bad("%d dimensions and %d variables: netCDF-C's limits are %d and %d", len(f.Dims), len(f.Vars), MaxDims, MaxVars)
	}
	names := map[string]bool{}
	for _, d := range f.Dims {
		if err := unique(names, d.Name); err != nil {
			return fmt.Errorf("dimension: %w", err)
		}
		switch {
		case d.Len <= 0:
			return bad("dimension %s has length %d (0 would be the record dimension)", d.Name, d.Len)
		case d.Len > maxLen32 && f.Format != CDF5:
			return bad("dimension %s of length %d needs CDF-5", d.Name, d.Len)
		}
	}
	if err := f.checkAttrs("global", f.Attrs); err != nil {
		return err
	}
	clear(names)
	for i := range f.Vars {
		v := &f.Vars[i]
		if err := unique(names, v.Name); err != nil {
			return fmt.Errorf("variable: %w", err)
		}
		if !v.Type.In(f.Format) {
			return bad("variable %s of type %v needs CDF-5", v.Name, v.Type)
		}
		if len(v.Dims) > MaxVarDims {
			return bad("variable %s has %d dimensions: netCDF-C's limit is %d", v.Name, len(v.Dims), MaxVarDims)
		}
		n := f.dataLen(v)
		switch {
		case n < 0:
			return bad("variable %s: bad dimensions %v, or too large", v.Name, v.Dims)
		case n > maxVSize && f.Format != CDF5:
			return bad("variable %s of %d bytes needs CDF-5", v.Name, n)
		}
		if err := f.checkAttrs("variable "+v.Name, v.Attrs); err != nil {
			return err
		}
	}
	return nil
}

// checkAttrs checks one attribute list of f.
func (f *File) checkAttrs(of string, as []Attr) error {
	if len(as) > MaxAttrs {
		return fmt.Errorf("%w: %s: %d attributes, netCDF-C's limit is %d", ErrInvalid, of, len(as), MaxAttrs)
	}
	names := map[string]bool{}
	for _, a := range as {
		if err := unique(names, a.Name); err != nil {
			return fmt.Errorf("%s attribute: %w", of, err)
		}
		switch s := a.Type.Size(); {
		case !a.Type.In(f.Format):
			return fmt.Errorf("%w: %s attribute %s of type %v in a %v file", ErrInvalid, of, a.Name, a.Type, f.Format)
		case len(a.Values)%s != 0:
			return fmt.Errorf("%w: %s attribute %s: %d bytes of %v", ErrInvalid, of, a.Name, len(a.Values), a.Type)
		case f.Format != CDF5 && a.Len() > maxLen32:
			return fmt.Errorf("%w: %s attribute %s: %d values", ErrInvalid, of, a.Name, a.Len())
		}
	}
	return nil
}

// unique checks that name is a valid name not in seen, and adds it.
func unique(seen map[string]bool, name string) error {
	n, err := Name(name)
	switch {
	case err != nil:
		return err
	case n != name:
		return fmt.Errorf("%w %q: not NFC-normalised (Name returns the name to use)", ErrName, name)
	case seen[name]:
		return fmt.Errorf("%w: %q twice", ErrInvalid, name)
	}
	seen[name] = true
	return nil
}

// round4 rounds n up to a multiple of 4.
func round4(n int64) int64 { return (n + 3) &^ 3 }

// The tags of the header's lists.
const (
	tagDimension = 0x0a
	tagVariable  = 0x0b
	tagAttribute = 0x0c
)

// A writer appends header fields: 32-bit ones, and NON_NEG counts and
// lengths, which are 64-bit in CDF-5 (wide).
type writer struct {
	b    []byte
	wide bool
}

func (w *writer) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *writer) int64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }

func (w *writer) nonNeg(v int64) {
	if w.wide {
		w.int64(v)
	} else {
		w.int32(int32(v))
	}
}

// absent writes an empty list: ZERO and a zero count.
func (w *writer) absent() { w.int32(0); w.nonNeg(0) }

// tag starts a list of n elements.
func (w *writer) tag(tag int32, n int) { w.int32(tag); w.nonNeg(int64(n)) }

// name writes a name: its length, its bytes, NUL padding to 4.
func (w *writer) name(s string) {
	w.nonNeg(int64(len(s)))
	w.padded([]byte(s))
}

// padded writes b and NUL bytes to the next multiple of 4.
func (w *writer) padded(b []byte) {
	w.b = append(w.b, b...)
	for len(w.b)%4 != 0 {
		w.b = append(w.b, 0)
	}
}

func (w *writer) attrs(as []Attr) {
	if len(as) == 0 {
		w.absent()
		return
	}
	w.tag(tagAttribute, len(as))
	for _, a := range as {
		w.name(a.Name)
		w.int32(int32(a.Type))
		w.nonNeg(int64(a.Len()))
		w.padded(a.Values)
	}
}
