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

// vectorLane reports whether numpy 1.24's cast loop from one dtype to the
// other handles element i of n in its vectorised body rather than in the
// scalar tail. This only changes results for out-of-range floats cast to
// uint32 (see floatToInt); it was mapped by casting arrays of 1e10:
//   - float32/float64 sources: vector blocks of 4 from the start, the last
//     n%4 elements scalar; float16 sources are never vectorised;
//   - complex sources: the vector body stops one block early (gcc peels for
//     the imaginary parts), so it covers 4*floor((n-1)/4) elements; and when
//     either side is byte-swapped, numpy casts in buffers of 128 elements,
//     each with its own tail.
func vectorLane(from, to DType, i, n int) bool {
	if to.Kind != 'u' || to.Size != 4 {
		return false
	}
	switch {
	case from.Kind == 'f' && from.Size >= 4:
		return i < n-n%4
	case from.Kind == 'c':
		start, length := 0, n
		if from.Big || to.Big {
			start = i - i%128
			length = min(128, n-start)
		}
		return i-start < 4*((length-1)/4)
	}
	return false
}

// canCast reports whether cast implements numpy's astype from one dtype to
// the other. Datetime unit conversions are the one cast it lacks.
func canCast(from, to DType) error {
	if from.Unit != "" && to.Unit != "" && from.Unit != to.Unit {
		return fmt.Errorf("%w: cast %s to %s: datetime unit conversion not supported", ErrConfig, from, to)
	}
	if (from.Kind == 'M') != (to.Kind == 'M') && (from.Kind == 'm' || to.Kind == 'm') {
		return fmt.Errorf("%w: cast %s to %s not supported", ErrConfig, from, to)
	}
	return nil
}

// cast converts s from one dtype to another as numpy's astype does on amd64
// (a C cast per element): integers wrap, float to integer truncates toward
// zero, floats round to nearest-even, anything to bool tests for non-zero,
// complex to real drops the imaginary part. simd selects, for float to
// uint32, the out-of-range results of numpy's vectorised loop rather than
// its scalar tail (see floatToInt).
func cast(from, to DType, s scalar, simd bool) scalar {
	if from.sameType(to) {
		return s // a copy: bool keeps its raw byte, floats their NaN payload
	}
	switch to.Kind {
	case 'b':
		return scalar{i: b2u(truth(from, s))}
	case 'i', 'u', 'M', 'm':
		var v uint64
		switch from.Kind {
		case 'b':
			v = b2u(s.i != 0)
		case 'f':
			v = floatToInt(floatValue(s.i, from.Size), to, simd)
		case 'c':
			v = floatToInt(floatValue(s.i, from.Size/2), to, simd)
		default:
			v = s.i
		}
		return scalar{i: normInt(v, to.Size, to.Kind != 'u')}
	case 'f':
		return scalar{i: toFloatBits(from, s.i, to.Size)}
	}
	// to complex
	h := to.Size / 2
	if from.Kind == 'c' {
		fh := from.Size / 2
		return scalar{floatConv(s.i, fh, h), floatConv(s.k, fh, h)}
	}
	return scalar{i: toFloatBits(from, s.i, h)}
}

// toFloatBits converts the real value v of kind from.Kind (for complex: its
// real part) to the bits of a float of size bytes.
func toFloatBits(from DType, v uint64, size int) uint64 {
	switch from.Kind {
	case 'f':
		return floatConv(v, from.Size, size)
	case 'c':
		return floatConv(v, from.Size/2, size)
	case 'b':
		return intToFloat(int64(b2u(v != 0)), size)
	case 'u':
		switch size {
		case 8:
			return math.Float64bits(float64(v))
		case 4:
			return uint64(math.Float32bits(float32(v)))
		}
		return uint64(halfFromFloat32(math.Float32bits(float32(v))))
	}
	return intToFloat(int64(v), size)
}

func intToFloat(v int64, size int) uint64 {
	switch size {
	case 8:
		return math.Float64bits(float64(v))
	case 4:
		return uint64(math.Float32bits(float32(v))) // one rounding, as C's (float)v
	}
	return uint64(halfFromFloat32(math.Float32bits(float32(v))))
}

func truth(from DType, s scalar) bool {
	switch from.Kind {
	case 'f':
		return floatValue(s.i, from.Size) != 0 // NaN is true
	case 'c':
		h := from.Size / 2
		return floatValue(s.i, h) != 0 || floatValue(s.k, h) != 0
	}
	return s.i != 0
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// cvtt32 and cvtt64 are the x86 truncating conversions (CVTTSD2SI): out of
// range and NaN give the "integer indefinite" value, the minimum integer.
func cvtt32(x float64) uint64 {
	if x > -2147483649 && x < 2147483648 {
		return uint64(int64(int32(x)))
	}
	return 1<<64 - 1<<31 // int64(math.MinInt32), sign-extended
}

func cvtt64(x float64) uint64 {
	if x >= -9223372036854775808 && x < 9223372036854775808 {
		return uint64(int64(x))
	}
	return 1 << 63
}

// floatToInt is the C cast of x to an integer of dtype to, compiled by gcc
// for amd64 as numpy 1.24's cast loops are (checked against numpy's output;
// in-range values truncate toward zero in every case):
//   - int8/16/32, uint8/16 and datetimes take the 32- or 64-bit CVTTSD2SI
//     and keep the low bytes;
//   - uint64 subtracts 2^63 from x >= 2^63 first and flips the top bit back;
//   - uint32 goes through the 64-bit conversion in scalar code, but gcc
//     vectorised numpy's loops 4 elements at a time with the uint64-like
//     trick at 32 bits; simd selects that form (see vectorLane).
func floatToInt(x float64, to DType, simd bool) uint64 {
	switch {
	case to.Size == 8 && to.Kind == 'u':
		if x >= 1<<63 {
			return cvtt64(x-(1<<63)) ^ 1<<63
		}
		return cvtt64(x)
	case to.Size == 8:
		return cvtt64(x)
	case to.Size == 4 && to.Kind == 'u':
		if !simd {
			return cvtt64(x)
		}
		if x >= 1<<31 {
			return cvtt32(x-(1<<31)) ^ 1<<31
		}
		return cvtt32(x)
	}
	return cvtt32(x)
}

// floatValue returns the value of a float of size bytes with bits v.
func floatValue(v uint64, size int) float64 {
	switch size {
	case 2:
		return math.Float64frombits(halfToFloat64(uint16(v)))
	case 4:
		return float64(math.Float32frombits(uint32(v)))
	}
	return math.Float64frombits(v)
}

// floatConv converts float bits between sizes as numpy does: hardware
// conversions between float32 and float64, numpy's own bit routines for
// float16 (round to nearest-even, NaN payloads kept, never quieted).
func floatConv(v uint64, from, to int) uint64 {
	if from == to {
		return v
	}
	switch from<<4 | to {
	case 2<<4 | 4:
		return uint64(halfToFloat32(uint16(v)))
	case 2<<4 | 8:
		return halfToFloat64(uint16(v))
	case 4<<4 | 8:
		return math.Float64bits(float64(math.Float32frombits(uint32(v))))
	case 8<<4 | 4:
		return uint64(math.Float32bits(float32(math.Float64frombits(v))))
	case 4<<4 | 2:
		return uint64(halfFromFloat32(uint32(v)))
	}
	return uint64(halfFromFloat64(v))
}

// halfToFloat32 is numpy's npy_halfbits_to_floatbits.
func halfToFloat32(h uint16) uint32 {
	sign := uint32(h&0x8000) << 16
	exp, sig := h&0x7c00, uint32(h&0x03ff)
	switch exp {
	case 0:
		if sig == 0 {
			return sign
		}
		e := uint32(0)
		for sig&0x0400 == 0 { // normalise the subnormal
			sig <<= 1
			e++
		}
		return sign | (113-e)<<23 | (sig&0x03ff)<<13
	case 0x7c00:
		return sign | 0x7f800000 | sig<<13
	}
	return sign | (uint32(h&0x7fff)+0x1c000)<<13
}

// halfToFloat64 is numpy's npy_halfbits_to_doublebits.
func halfToFloat64(h uint16) uint64 {
	sign := uint64(h&0x8000) << 48
	exp, sig := h&0x7c00, uint64(h&0x03ff)
	switch exp {
	case 0:
		if sig == 0 {
			return sign
		}
		e := uint64(0)
		for sig&0x0400 == 0 {
			sig <<= 1
			e++
		}
		return sign | (1009-e)<<52 | (sig&0x03ff)<<42
	case 0x7c00:
		return sign | 0x7ff0000000000000 | sig<<42
	}
	return sign | (uint64(h&0x7fff)+0xfc000)<<42
}

// halfFromFloat32 is numpy's npy_floatbits_to_halfbits.
func halfFromFloat32(f uint32) uint16 {
	if f&0x7f800000 == 0x7f800000 && f&0x007fffff != 0 {
		return nanHalf(uint16(f>>16), uint16(f&0x007fffff>>13))
	}
	return halfRound(float64(math.Float32frombits(f)))
}

// halfFromFloat64 is numpy's npy_doublebits_to_halfbits: one rounding
// straight from double, not through float32.
func halfFromFloat64(d uint64) uint16 {
	if d&0x7ff0000000000000 == 0x7ff0000000000000 && d&0x000fffffffffffff != 0 {
		return nanHalf(uint16(d>>48), uint16(d&0x000fffffffffffff>>42))
	}
	return halfRound(math.Float64frombits(d))
}

// nanHalf keeps the top payload bits of a NaN, and keeps it a NaN.
func nanHalf(signBits, sig uint16) uint16 {
	if sig == 0 {
		sig = 1
	}
	return signBits&0x8000 | 0x7c00 | sig
}

// halfRound rounds a non-NaN x to the nearest float16, ties to even.
func halfRound(x float64) uint16 {
	var sign uint16
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	if x >= 65520 { // half of the last ulp above the largest half, 65504
		return sign | 0x7c00
	}
	if x < 0x1p-14 { // subnormal: multiples of 2^-24
		return sign | uint16(math.RoundToEven(x*0x1p24)) // 1024 carries into the exponent
	}
	_, e := math.Frexp(x) // x = m * 2^e, m in [0.5, 1)
	ulp := math.Ldexp(1, e-11)
	q := uint16(math.RoundToEven(x / ulp)) // in [1024, 2048]
	return sign | (uint16(e+14)<<10 + q - 1024)
}

// add returns a+b computed in dtype d, as numpy's add ufunc: integers wrap,
// bool is logical or, float16 adds in float32 and rounds, timedelta NaT
// absorbs. Kind M is never passed (numpy cannot add datetimes).
func (d DType) add(a, b scalar) scalar {
	switch d.Kind {
	case 'b':
		return scalar{i: b2u(a.i != 0 || b.i != 0)}
	case 'i', 'u':
		return scalar{i: normInt(a.i+b.i, d.Size, d.Kind == 'i')}
	case 'm':
		if a.i == nat || b.i == nat {
			return scalar{i: nat}
		}
		return scalar{i: a.i + b.i}
	case 'f':
		return scalar{i: floatAdd(a.i, b.i, d.Size)}
	}
	h := d.Size / 2
	return scalar{floatAdd(a.i, b.i, h), floatAdd(a.k, b.k, h)}
}

// floatAdd adds float bits of size bytes in numpy's precision for that
// size (float16 adds in float32 and rounds). NaN results are chosen
// explicitly, since hardware returns the first operand's NaN when both are
// NaN and Go does not fix the operand order: numpy 1.24 gives the left
// (running total's) NaN for float32 and float64 and the right one for
// float16, whose C code gcc compiled with the operands swapped (measured).
func floatAdd(a, b uint64, size int) uint64 {
	switch size {
	case 2:
		if nanBits(a, 2) || nanBits(b, 2) {
			if nanBits(b, 2) {
				return b | 0x0200 // quieted
			}
			return a | 0x0200
		}
		s := math.Float32frombits(halfToFloat32(uint16(a))) + math.Float32frombits(halfToFloat32(uint16(b)))
		return uint64(halfFromFloat32(math.Float32bits(s)))
	case 4:
		s := math.Float32frombits(uint32(a)) + math.Float32frombits(uint32(b))
		if s != s {
			return uint64(nan32(math.Float32frombits(uint32(a)), math.Float32frombits(uint32(b))))
		}
		return uint64(math.Float32bits(s))
	}
	s := math.Float64frombits(a) + math.Float64frombits(b)
	if s != s {
		return nan64(math.Float64frombits(a), math.Float64frombits(b))
	}
	return math.Float64bits(s)
}

// nanBits reports whether v is the bits of a NaN float of size bytes.
func nanBits(v uint64, size int) bool {
	switch size {
	case 2:
		return v&0x7c00 == 0x7c00 && v&0x03ff != 0
	case 4:
		return v&0x7f800000 == 0x7f800000 && v&0x007fffff != 0
	}
	return v&0x7ff0000000000000 == 0x7ff0000000000000 && v&0x000fffffffffffff != 0
}

// nan32 and nan64 are the NaN that a+b gives in numpy's float32 and
// float64 sums: a's if a is NaN, else b's (or, for inf-inf, the default
// NaN), quieted.
func nan32(a, b float32) uint32 {
	switch {
	case a != a:
		return math.Float32bits(a) | 0x00400000
	case b != b:
		return math.Float32bits(b) | 0x00400000
	}
	return 0xffc00000 // x86's default NaN
}

func nan64(a, b float64) uint64 {
	switch {
	case a != a:
		return math.Float64bits(a) | 0x0008000000000000
	case b != b:
		return math.Float64bits(b) | 0x0008000000000000
	}
	return 0xfff8000000000000
}

// resultType is numpy's np.result_type(a, b) for two array dtypes (native
// byte order). Errors wrap ErrConfig where numpy has no common type.
func resultType(a, b DType) (DType, error) {
	if a.Kind == 'M' || a.Kind == 'm' || b.Kind == 'M' || b.Kind == 'm' {
		return timeResult(a, b)
	}
	r := DType{Kind: a.Kind, Size: max(a.Size, b.Size)}
	ra, rb := numRank(a), numRank(b)
	switch {
	case a.Kind == b.Kind:
	case a.Kind == 'b':
		r = b
	case b.Kind == 'b':
		r = a
	case ra < 2 && rb < 2: // signed with unsigned
		s, u := a, b
		if a.Kind == 'u' {
			s, u = b, a
		}
		switch {
		case s.Size > u.Size:
			r = DType{Kind: 'i', Size: s.Size}
		case u.Size < 8:
			r = DType{Kind: 'i', Size: 2 * u.Size}
		default:
			r = DType{Kind: 'f', Size: 8}
		}
	default: // at least one inexact: the inexact kind, wide enough for the other
		x, o := a, b
		if ra < rb {
			x, o = b, a
		}
		need := floatBytes(x)
		switch {
		case o.Kind == 'f' || o.Kind == 'c':
			need = max(need, floatBytes(o))
		case o.Size == 1:
			need = max(need, 2)
		case o.Size == 2:
			need = max(need, 4)
		default:
			need = 8
		}
		if x.Kind == 'c' || o.Kind == 'c' {
			r = DType{Kind: 'c', Size: 2 * max(need, 4)} // there is no complex32
		} else {
			r = DType{Kind: 'f', Size: need}
		}
	}
	r.Big = false
	return r, nil
}

// floatBytes is the size of one float component of a float or complex.
func floatBytes(d DType) int {
	if d.Kind == 'c' {
		return d.Size / 2
	}
	return d.Size
}

// numRank orders the numeric kinds: bool, ints, float, complex.
func numRank(d DType) int {
	switch d.Kind {
	case 'b':
		return -1
	case 'f':
		return 2
	case 'c':
		return 3
	}
	return 0
}

// timeResult is result_type when a datetime kind is involved: timedelta
// with itself, a signed integer or bool; datetime only with itself.
func timeResult(a, b DType) (DType, error) {
	t, o := a, b
	if b.Kind == 'M' || (b.Kind == 'm' && a.Kind != 'M') {
		t, o = b, a
	}
	ok := false
	switch {
	case t.Kind == 'M':
		ok = o.Kind == 'M' && o.Unit == t.Unit
	case o.Kind == 'm':
		ok = o.Unit == t.Unit
	default: // what casts safely to int64
		ok = o.Kind == 'b' || o.Kind == 'i' || (o.Kind == 'u' && o.Size < 8)
	}
	if !ok {
		return DType{}, fmt.Errorf("%w: no common dtype for %s and %s", ErrConfig, a, b)
	}
	t.Big = false
	return t, nil
}

// configDType reads the dtype under key. def is returned when the key is
// absent or null; a nil def makes the key required.
func configDType(c Config, key string, def *DType) (DType, error) {
	if !c.Has(key) {
		if def == nil {
			return DType{}, fmt.Errorf("%w: %q is required", ErrConfig, key)
		}
		return *def, nil
	}
	s, err := c.String(key, "")
	if err != nil {
		return DType{}, err
	}
	return ParseDType(s)
}

// filterCount checks a filter's input and output room: src must hold whole
// elements of inSize bytes (ErrCorrupt otherwise), and the n decoded
// elements of outSize bytes must fit in cap(dst) after len(dst)
// (ErrTooLarge otherwise). It returns n and the output slice to fill.
func filterCount(dst, src []byte, inSize, outSize int) (int, []byte, error) {
	if len(src)%inSize != 0 {
		return 0, nil, fmt.Errorf("%w: %d bytes is not a whole number of %d-byte elements", ErrCorrupt, len(src), inSize)
	}
	n := len(src) / inSize
	if n > (cap(dst)-len(dst))/outSize {
		return 0, nil, ErrTooLarge
	}
	return n, dst[len(dst) : len(dst)+n*outSize], nil
}

// filterEncodedLen is the stored size of decodedLen bytes of elements of
// outSize bytes stored as elements of inSize bytes.
func filterEncodedLen(decodedLen, outSize, inSize int) (int, error) {
	if decodedLen%outSize != 0 {
		return 0, fmt.Errorf("%w: %d bytes is not a whole number of %d-byte elements", ErrConfig, decodedLen, outSize)
	}
	return decodedLen / outSize * inSize, nil
}

// castElems converts the n elements of from in src into elements of to in
// out, as numpy's astype does for a whole contiguous array.
func castElems(out, src []byte, from, to DType, n int) {
	switch {
	case from == to:
		copy(out, src[:n*from.Size])
		return
	case from.sameType(to): // byte order only
		w := from.Size
		if from.Kind == 'c' {
			w /= 2
		}
		for i := 0; i < n*from.Size; i += w {
			for j := range w {
				out[i+j] = src[i+w-1-j]
			}
		}
		return
	}
	fs, ts := from.Size, to.Size
	lanes := to.Kind == 'u' && to.Size == 4 // see vectorLane
	for i := range n {
		to.store(out[i*ts:], cast(from, to, from.load(src[i*fs:]), lanes && vectorLane(from, to, i, n)))
	}
}
