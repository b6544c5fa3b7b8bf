package codec

import (
	"math"
)

// float16 to and from float32 and float64, bit for bit as numpy's
// npy_half routines (npymath/halffloat.c): round to nearest-even, NaN
// payloads kept.

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

// halfToFloat64 is numpy's npy_halfbits_to_doublebits. It is not
// halfToFloat32 widened: the hardware's float32 to float64 conversion
// quiets signalling NaNs, and numpy's routine keeps them.
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
