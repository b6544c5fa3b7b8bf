package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A DType is a fixed-size numpy dtype: what a numpy typestr ("<f8", ">i2",
// "|b1", "<M8[ns]", "|S5", "<U3") or dtype name ("int32", "datetime64[ms]")
// says. It is zfuse's one model of an element type: the numcodecs filters
// compute in it (filter.go says which kinds they take), and package zarr
// maps Zarr v2 dtypes and v3 data types onto it. DTypes are comparable
// values, equal when numpy's dtypes are; the zero DType is invalid.
type DType struct {
	Kind byte   // 'b' bool, 'i' int, 'u' uint, 'f' float, 'c' complex, 'M' datetime, 'm' timedelta, 'S' bytes, 'U' UTF-32 text, 'V' raw bytes, 'O' Python object
	Size int    // bytes per element: 4 per character for 'U', 8 (a pointer) for 'O'
	Big  bool   // big-endian; always false where the byte order means nothing (see Ordered)
	Unit string // kinds M and m: the unit as numpy writes it ("ns", "10s"), "" for numpy's generic unit; "" for other kinds
}

// names maps the dtype names that are not typestrs (numpy's spelled-out
// names, which Zarr v3 data types also use) to typestrs.
var names = map[string]string{
	"bool": "|b1", "?": "|b1",
	"int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
	"uint8": "|u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
	"float16": "<f2", "float32": "<f4", "float64": "<f8",
	"complex64": "<c8", "complex128": "<c16",
	"int": "<i8", "uint": "<u8", "float": "<f8", "double": "<f8", "complex": "<c16",
}

// maxItemSize bounds the item size of S, U and V dtypes: larger ones are
// absurd metadata, not elements to allocate.
const maxItemSize = 1 << 30

// ParseDType parses a numpy typestr or dtype name. A typestr is an
// optional byte order ('<', '>', '|' or '=', which is little-endian), a
// kind, the item size in decimal as numpy writes it (characters for 'U';
// none or 8 for 'O'), and for datetimes an optional unit in brackets (see
// parseUnit). The sizes are numpy's: b1; i and u 1, 2, 4, 8; f 2, 4, 8, 16;
// c 8, 16, 32; M8 and m8; S, U and V of any length up to 2^30. Errors wrap
// ErrConfig.
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
	d.Kind, t = t[0], t[1:]
	if num, unit, ok := strings.Cut(t, "["); ok && (d.Kind == 'M' || d.Kind == 'm') {
		u, ok := strings.CutSuffix(unit, "]")
		if !ok {
			return bad("datetime unit without ']'")
		}
		if d.Unit, ok = parseUnit(u); !ok {
			return bad("unknown datetime unit")
		}
		t = num
	}
	if d.Kind == 'O' && t == "" {
		t = "8"
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || n > maxItemSize || t != strconv.Itoa(n) {
		return bad("no item size")
	}
	ok := false
	switch d.Kind {
	case 'b':
		ok = n == 1
	case 'i', 'u':
		ok = n == 1 || n == 2 || n == 4 || n == 8
	case 'f':
		ok = n == 2 || n == 4 || n == 8 || n == 16
	case 'c':
		ok = n == 8 || n == 16 || n == 32
	case 'M', 'm', 'O':
		ok = n == 8
	case 'S', 'V':
		ok = true
	case 'U':
		ok, n = true, 4*n
	default:
		return bad("unknown kind")
	}
	if !ok {
		return bad("item size not supported")
	}
	d.Size = n
	d.Big = d.Big && d.Ordered()
	return d, nil
}

// parseUnit reads a datetime unit, the text between the brackets of
// "<M8[10ms]": an optional multiplier from 1 to 2^31-1 and one of numpy's
// units ("μs" is "us"), or "generic", numpy's unit-less datetime. It
// returns the unit as numpy writes it: no multiplier 1 ("s", not "1s"),
// and "" for generic.
func parseUnit(u string) (string, bool) {
	i := 0
	for i < len(u) && u[i] >= '0' && u[i] <= '9' {
		i++
	}
	num, base := u[:i], u[i:]
	mult := 1
	if num != "" {
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 || n > math.MaxInt32 || num != strconv.Itoa(n) {
			return "", false
		}
		mult = n
	}
	switch base {
	case "generic":
		return "", mult == 1
	case "μs":
		base = "us"
	case "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as":
	default:
		return "", false
	}
	if mult == 1 {
		return base, true
	}
	return num + base, true
}

// Ordered reports whether the bytes of an element depend on the byte
// order: they do for numbers, datetimes and text wider than one byte.
func (d DType) Ordered() bool {
	switch d.Kind {
	case 'i', 'u', 'f', 'c', 'M', 'm', 'U':
		return d.Size > 1
	}
	return false
}

// String returns the numpy typestr, as numpy's dtype.str (and so
// numcodecs' get_config and zarr-python's .zarray) writes it.
func (d DType) String() string {
	o := byte('<')
	switch {
	case d.Big:
		o = '>'
	case !d.Ordered() && d.Kind != 'U':
		o = '|'
	}
	switch d.Kind {
	case 'O':
		return "|O"
	case 'U':
		return fmt.Sprintf("%cU%d", o, d.Size/4)
	case 'M', 'm':
		if d.Unit == "" {
			return fmt.Sprintf("%c%c8", o, d.Kind)
		}
		return fmt.Sprintf("%c%c8[%s]", o, d.Kind, d.Unit)
	}
	return fmt.Sprintf("%c%c%d", o, d.Kind, d.Size)
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
