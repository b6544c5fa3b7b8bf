package codec

import (
	"fmt"
	"math"
)

// numpy's arithmetic in a given dtype (the running sums of delta, the
// division and offset of fixedscaleoffset) and np.result_type, which
// chooses that dtype.

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

// floatDiv is a/b on float bits of size bytes, in numpy's precision for
// that size (float16 divides in float32 and rounds).
func floatDiv(a, b uint64, size int) uint64 {
	switch size {
	case 2:
		q := math.Float32frombits(halfToFloat32(uint16(a))) / math.Float32frombits(halfToFloat32(uint16(b)))
		return uint64(halfFromFloat32(math.Float32bits(q)))
	case 4:
		return uint64(math.Float32bits(math.Float32frombits(uint32(a)) / math.Float32frombits(uint32(b))))
	}
	return math.Float64bits(math.Float64frombits(a) / math.Float64frombits(b))
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
// NaN), quieted. One rule at two widths: a generic version would need
// the bit conversions passed in, and reads worse than the two.
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
