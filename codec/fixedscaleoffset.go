package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

func init() { register("fixedscaleoffset", newFixedScaleOffset) }

// fixedScaleOffset decodes the numcodecs "fixedscaleoffset" filter:
// dec = enc/scale + offset, cast to DType (float to integer truncates).
//
// numpy 1.24 picks the arithmetic types by value-based promotion, and this
// decoder does the same: an integer or bool AsType divides in float64; a
// float AsType divides in result_type(AsType, min_scalar_type(scale)), so
// float32 data with scale 10 stays float32 but with scale 100000 (a uint32
// Python int) turns float64; the offset is added in result_type(quotient,
// min_scalar_type(offset)). Python ints and floats are told apart by their
// JSON spelling ("10" vs "10.0"), as Python's json module does.
//
// A fixedScaleOffset is immutable and safe for concurrent use.
type fixedScaleOffset struct {
	Scale, Offset float64 // as configured (rounded to float64)
	DType         DType   // decoded elements
	AsType        DType   // stored elements

	div, sum      DType  // numpy's types for enc/scale and for + offset
	scale, offset scalar // Scale in div, Offset in sum
}

var (
	_ Decoder      = (*fixedScaleOffset)(nil)
	_ EncodedSizer = (*fixedScaleOffset)(nil)
)

// pyNumber is a JSON number as Python's json module reads it.
type pyNumber struct {
	isInt bool
	neg   bool
	u     uint64 // |value| for ints
	f     float64
}

func configPyNumber(c Config, key string) (pyNumber, error) {
	if !c.Has(key) {
		return pyNumber{}, fmt.Errorf("%w: %q is required", ErrConfig, key)
	}
	raw := bytes.TrimSpace(c[key])
	var p pyNumber
	if err := json.Unmarshal(raw, &p.f); err != nil {
		return p, fmt.Errorf("%w: %q: %v", ErrConfig, key, err)
	}
	if bytes.ContainsAny(raw, ".eE") {
		return p, nil
	}
	p.isInt = true
	digits := string(raw)
	if p.neg = digits[0] == '-'; p.neg {
		digits = digits[1:]
	}
	u, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || (p.neg && u > 1<<63) {
		return p, fmt.Errorf("%w: %q: integer %s out of numpy's range", ErrConfig, key, raw)
	}
	p.u = u
	return p, nil
}

// minScalarType is numpy 1.x's np.min_scalar_type for a Python number.
func (p pyNumber) minScalarType() DType {
	if !p.isInt {
		switch {
		case p.f > -65000 && p.f < 65000:
			return DType{Kind: 'f', Size: 2}
		case p.f > -3.4e38 && p.f < 3.4e38:
			return DType{Kind: 'f', Size: 4}
		}
		return DType{Kind: 'f', Size: 8}
	}
	v := p.u
	if !p.neg || v == 0 {
		switch {
		case v <= math.MaxUint8:
			return DType{Kind: 'u', Size: 1}
		case v <= math.MaxUint16:
			return DType{Kind: 'u', Size: 2}
		case v <= math.MaxUint32:
			return DType{Kind: 'u', Size: 4}
		}
		return DType{Kind: 'u', Size: 8}
	}
	switch {
	case v <= 1<<7:
		return DType{Kind: 'i', Size: 1}
	case v <= 1<<15:
		return DType{Kind: 'i', Size: 2}
	case v <= 1<<31:
		return DType{Kind: 'i', Size: 4}
	}
	return DType{Kind: 'i', Size: 8}
}

// scalarIn returns p converted to the float dtype t.
func (p pyNumber) scalarIn(t DType) scalar {
	if !p.isInt {
		return scalar{i: floatConv(math.Float64bits(p.f), 8, t.Size)}
	}
	if p.neg {
		return scalar{i: toFloatBits(DType{Kind: 'i', Size: 8}, -p.u, t.Size)}
	}
	return scalar{i: toFloatBits(DType{Kind: 'u', Size: 8}, p.u, t.Size)}
}

func newFixedScaleOffset(c Config) (Decoder, error) {
	offset, err := configPyNumber(c, "offset")
	if err != nil {
		return nil, err
	}
	scale, err := configPyNumber(c, "scale")
	if err != nil {
		return nil, err
	}
	dt, at, err := configDTypes(c)
	if err != nil {
		return nil, err
	}
	f := &fixedScaleOffset{Scale: scale.f, Offset: offset.f, DType: dt, AsType: at}
	switch at.Kind {
	case 'b', 'i', 'u':
		f.div = DType{Kind: 'f', Size: 8} // numpy's true_divide of integers
	case 'f':
		f.div, _ = resultType(at, scale.minScalarType())
	default:
		return nil, fmt.Errorf("%w: fixedscaleoffset astype %s not supported", ErrConfig, at)
	}
	f.sum, _ = resultType(f.div, offset.minScalarType())
	if err := canCast(f.sum, dt); err != nil {
		return nil, err
	}
	f.scale, f.offset = scale.scalarIn(f.div), offset.scalarIn(f.sum)
	return f, nil
}

// EncodedLen is the stored size of decodedLen bytes.
func (f *fixedScaleOffset) EncodedLen(decodedLen int) (int, error) {
	return filterEncodedLen(decodedLen, f.DType.Size, f.AsType.Size)
}

// Decode appends the decoded elements of src to dst.
func (f *fixedScaleOffset) Decode(dst, src []byte) ([]byte, error) {
	n, out, err := filterCount(dst, src, f.AsType.Size, f.DType.Size)
	if err != nil {
		return dst, err
	}
	switch {
	case f.fast(out, src):
	case f.div.Size == 8 && f.sum.Size == 8:
		f.float64s(out, src, n)
	default:
		f.slow(out, src, n)
	}
	return dst[:len(dst)+len(out)], nil
}

// float64s is the case where numpy computes in float64 (every integer
// AsType, and float AsTypes with large scales or offsets): Go's float64
// arithmetic is the same IEEE arithmetic, so only the loads and the final
// cast need the general code.
func (f *fixedScaleOffset) float64s(out, src []byte, n int) {
	at, dt := f.AsType, f.DType
	f8 := DType{Kind: 'f', Size: 8}
	scale := math.Float64frombits(f.scale.i)
	offset := math.Float64frombits(f.offset.i)
	var get func([]byte) float64
	switch at.Kind {
	case 'i':
		get = func(b []byte) float64 { return float64(at.Int(b)) }
	case 'u':
		get = func(b []byte) float64 { return float64(at.Uint(b)) }
	case 'b':
		get = func(b []byte) float64 { return float64(b2u(b[0] != 0)) }
	default: // float to float64: exact, NaN payloads as numpy keeps them
		get = func(b []byte) float64 { return math.Float64frombits(floatConv(at.Uint(b), at.Size, 8)) }
	}
	if dt.Kind == 'f' {
		for i := range n {
			dt.PutFloat(out[i*dt.Size:], get(src[i*at.Size:])/scale+offset)
		}
		return
	}
	lanes := dt.Kind == 'u' && dt.Size == 4 // see vectorLane
	for i := range n {
		y := scalar{i: math.Float64bits(get(src[i*at.Size:])/scale + offset)}
		dt.store(out[i*dt.Size:], cast(f8, dt, y, lanes && vectorLane(f8, dt, i, n)))
	}
}

func (f *fixedScaleOffset) slow(out, src []byte, n int) {
	at, dt, div, sum := f.AsType, f.DType, f.div, f.sum
	lanes := dt.Kind == 'u' && dt.Size == 4 // see vectorLane
	for i := range n {
		q := floatDiv(cast(at, div, at.load(src[i*at.Size:]), false).i, f.scale.i, div.Size)
		s := scalar{i: floatAdd(floatConv(q, div.Size, sum.Size), f.offset.i, sum.Size)}
		dt.store(out[i*dt.Size:], cast(sum, dt, s, lanes && vectorLane(sum, dt, i, n)))
	}
}

// fast handles little-endian integer or float64 storage decoded to
// little-endian float64, all in float64 arithmetic, and reports whether
// it did.
func (f *fixedScaleOffset) fast(out, src []byte) bool {
	at := f.AsType
	if f.DType != (DType{Kind: 'f', Size: 8}) || f.sum.Size != 8 || at.Big ||
		!(at.Kind == 'i' || at.Kind == 'u' || at == f.DType) {
		return false
	}
	scale := math.Float64frombits(f.scale.i)
	offset := math.Float64frombits(f.offset.i)
	le := binary.LittleEndian
	put := func(i int, x float64) { le.PutUint64(out[8*i:], math.Float64bits(x/scale+offset)) }
	switch {
	case at.Kind == 'f':
		for i := 0; i < len(src)/8; i++ {
			put(i, math.Float64frombits(le.Uint64(src[8*i:])))
		}
	case at.Size == 1 && at.Kind == 'i':
		for i, v := range src {
			put(i, float64(int8(v)))
		}
	case at.Size == 1:
		for i, v := range src {
			put(i, float64(v))
		}
	case at.Size == 2 && at.Kind == 'i':
		for i := 0; i < len(src)/2; i++ {
			put(i, float64(int16(le.Uint16(src[2*i:]))))
		}
	case at.Size == 2:
		for i := 0; i < len(src)/2; i++ {
			put(i, float64(le.Uint16(src[2*i:])))
		}
	case at.Size == 4 && at.Kind == 'i':
		for i := 0; i < len(src)/4; i++ {
			put(i, float64(int32(le.Uint32(src[4*i:]))))
		}
	case at.Size == 4:
		for i := 0; i < len(src)/4; i++ {
			put(i, float64(le.Uint32(src[4*i:])))
		}
	case at.Kind == 'i':
		for i := 0; i < len(src)/8; i++ {
			put(i, float64(int64(le.Uint64(src[8*i:]))))
		}
	default:
		for i := 0; i < len(src)/8; i++ {
			put(i, float64(le.Uint64(src[8*i:])))
		}
	}
	return true
}
