package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A DType is a fixed-size numpy dtype, as the numcodecs filter
// configurations name it ("<f8", ">i2", "|b1", "<M8[ns]", or a Zarr v3 name
// such as "int32"). DTypes are comparable values; the zero DType is invalid.
type DType struct {
	Kind byte   // 'b' bool, 'i' int, 'u' uint, 'f' float, 'c' complex, 'M' datetime, 'm' timedelta
	Size int    // bytes per element: 1, 2, 4, 8 or 16 (complex128)
	Big  bool   // big-endian; always false for Size 1
	Unit string // datetime unit for M and m ("ns", "10s"); "" otherwise
}

// names maps the dtype names that are not typestrs (Zarr v3 data types and
// numpy's spelled-out names) to typestrs.
var names = map[string]string{
	"bool": "|b1", "?": "|b1",
	"int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
	"uint8": "|u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
	"float16": "<f2", "float32": "<f4", "float64": "<f8",
	"complex64": "<c8", "complex128": "<c16",
	"int": "<i8", "uint": "<u8", "float": "<f8", "double": "<f8", "complex": "<c16",
}

// ParseDType parses a numpy typestr or dtype name. Errors wrap ErrConfig.
// Only the fixed-size numeric, bool and datetime dtypes are accepted: the
// filters cannot operate on strings, objects or records.
func ParseDType(s string) (DType, error) {
	t := s
	if n, ok := names[t]; ok {
		t = n
	} else if u, ok := strings.CutPrefix(t, "datetime64"); ok {
		t = "<M8" + u
	} else if u, ok := strings.CutPrefix(t, "timedelta64"); ok {
		t = "<m8" + u
	}
	bad := func(why string) (DType, error) {
		return DType{}, fmt.Errorf("%w: dtype %q: %s", ErrConfig, s, why)
	}
	var d DType
	if t != "" && strings.IndexByte("<>|=", t[0]) >= 0 {
		d.Big = t[0] == '>'
		t = t[1:]
	}
	if t == "" {
		return bad("empty")
	}
	d.Kind = t[0]
	t = t[1:]
	if d.Kind == 'M' || d.Kind == 'm' {
		num, unit, ok := strings.Cut(t, "[")
		if !ok || !strings.HasSuffix(unit, "]") || len(unit) < 2 {
			return bad("datetime without unit")
		}
		t, d.Unit = num, strings.TrimSuffix(unit, "]")
		if !validUnit(d.Unit) {
			return bad("unknown datetime unit")
		}
	}
	size, err := strconv.Atoi(t)
	if err != nil {
		return bad("no item size")
	}
	d.Size = size
	ok := false
	switch d.Kind {
	case 'b':
		ok = size == 1
	case 'i', 'u':
		ok = size == 1 || size == 2 || size == 4 || size == 8
	case 'f':
		ok = size == 2 || size == 4 || size == 8
	case 'c':
		ok = size == 8 || size == 16
	case 'M', 'm':
		ok = size == 8
	default:
		return bad("kind not supported by filters")
	}
	if !ok {
		return bad("item size not supported")
	}
	if size == 1 {
		d.Big = false
	}
	return d, nil
}

// validUnit reports whether u is a numpy datetime unit with an optional
// positive multiplier ("s", "10ms").
func validUnit(u string) bool {
	i := 0
	for i < len(u) && u[i] >= '0' && u[i] <= '9' {
		i++
	}
	if i > 0 && (u[0] == '0' || i > 9) {
		return false
	}
	switch u[i:] {
	case "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as":
		return true
	}
	return false
}

// String returns the numpy typestr, as numcodecs' get_config writes it.
func (d DType) String() string {
	o := byte('<')
	switch {
	case d.Size == 1:
		o = '|'
	case d.Big:
		o = '>'
	}
	s := fmt.Sprintf("%c%c%d", o, d.Kind, d.Size)
	if d.Unit != "" {
		s += "[" + d.Unit + "]"
	}
	return s
}

// sameType reports whether a and b hold the same values (byte order aside).
func (d DType) sameType(e DType) bool {
	return d.Kind == e.Kind && d.Size == e.Size && d.Unit == e.Unit
}

func (d DType) order() binary.ByteOrder {
	if d.Big {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// Uint returns the raw bits of the element at the start of b, zero-extended.
func (d DType) Uint(b []byte) uint64 { return getBits(b, d.Size, d.Big) }

// Int returns the element at the start of b sign-extended (zero-extended for
// kinds b and u), for the integer-like kinds b, i, u, M and m.
func (d DType) Int(b []byte) int64 {
	v := getBits(b, d.Size, d.Big)
	if d.Kind == 'u' || d.Kind == 'b' {
		return int64(v)
	}
	return int64(normInt(v, d.Size, true))
}

// Float returns the element at the start of b, of kind f, as a float64
// (exactly: every float16 and float32 is a float64).
func (d DType) Float(b []byte) float64 { return floatValue(d.Uint(b), d.Size) }

// PutUint stores the low Size bytes of v at the start of b.
func (d DType) PutUint(b []byte, v uint64) { putBits(b, d.Size, d.Big, v) }

// PutInt stores v at the start of b, wrapping it to Size bytes.
func (d DType) PutInt(b []byte, v int64) { putBits(b, d.Size, d.Big, uint64(v)) }

// PutFloat stores f at the start of b, rounded to nearest-even at the
// element's precision (kind f).
func (d DType) PutFloat(b []byte, f float64) {
	putBits(b, d.Size, d.Big, floatConv(math.Float64bits(f), 8, d.Size))
}

func getBits(b []byte, size int, big bool) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		if big {
			return uint64(binary.BigEndian.Uint16(b))
		}
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		if big {
			return uint64(binary.BigEndian.Uint32(b))
		}
		return uint64(binary.LittleEndian.Uint32(b))
	}
	if big {
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}

func putBits(b []byte, size int, big bool, v uint64) {
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		if big {
			binary.BigEndian.PutUint16(b, uint16(v))
		} else {
			binary.LittleEndian.PutUint16(b, uint16(v))
		}
	case 4:
		if big {
			binary.BigEndian.PutUint32(b, uint32(v))
		} else {
			binary.LittleEndian.PutUint32(b, uint32(v))
		}
	default:
		if big {
			binary.BigEndian.PutUint64(b, v)
		} else {
			binary.LittleEndian.PutUint64(b, v)
		}
	}
}

// normInt wraps v to size bytes, sign-extending when signed.
func normInt(v uint64, size int, signed bool) uint64 {
	if size == 8 {
		return v
	}
	sh := uint(64 - 8*size)
	if signed {
		return uint64(int64(v<<sh) >> sh)
	}
	return v << sh >> sh
}

// A scalar is one element in a form independent of width and byte order:
// integer kinds (b, i, u, M, m) hold the value in i, sign- or zero-extended
// (bool holds its raw byte); floats hold their own bits in i; complex holds
// the bits of the real part in i and of the imaginary part in k.
type scalar struct{ i, k uint64 }

func (d DType) load(b []byte) scalar {
	switch d.Kind {
	case 'c':
		h := d.Size / 2
		return scalar{getBits(b, h, d.Big), getBits(b[h:], h, d.Big)}
	case 'i', 'M', 'm':
		return scalar{i: normInt(getBits(b, d.Size, d.Big), d.Size, true)}
	}
	return scalar{i: getBits(b, d.Size, d.Big)}
}

func (d DType) store(b []byte, s scalar) {
	if d.Kind == 'c' {
		h := d.Size / 2
		putBits(b, h, d.Big, s.i)
		putBits(b[h:], h, d.Big, s.k)
		return
	}
	putBits(b, d.Size, d.Big, s.i)
}

// nat is numpy's "not a time", the int64 minimum.
const nat = 1 << 63
