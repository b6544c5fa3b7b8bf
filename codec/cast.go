package codec

import (
	"fmt"
	"math"
)

// numpy's astype, one element at a time: the casts of the astype filter
// and the final casts of delta, fixedscaleoffset and quantize. The rules
// are numpy 1.24's on amd64, C casts compiled by gcc; filters_test.go
// checks them against numcodecs' output.

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
