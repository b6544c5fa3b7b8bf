package codec

import (
	"encoding/binary"
	"fmt"
	"math"
)

func init() { register("delta", newDelta) }

// deltaFilter decodes the numcodecs "delta" filter: the stored elements (AsType)
// are the differences between neighbours, the first one absolute, and
// decoding is numpy's cumsum(enc, out=<DType array>). numpy runs that sum
// in the type its add ufunc resolves for (DType, AsType), which is
// result_type(AsType, DType) unless datetimes are involved, keeps the
// running total in that type and casts each total to DType: integers wrap,
// bool sums are a running OR, floats are sequential IEEE additions (float32
// sums in float32), timedeltas keep NaT.
//
// A deltaFilter is immutable and safe for concurrent use.
type deltaFilter struct {
	DType  DType // decoded elements
	AsType DType // stored elements
	loop   DType // numpy's type for the running total and the added elements
}

var (
	_ Decoder      = (*deltaFilter)(nil)
	_ EncodedSizer = (*deltaFilter)(nil)
)

func newDelta(c Config) (Decoder, error) {
	dt, at, err := configDTypes(c)
	if err != nil {
		return nil, err
	}
	loop, err := deltaLoop(dt, at)
	if err != nil {
		return nil, err
	}
	for _, c := range [][2]DType{{at, loop}, {loop, dt}} {
		if err := canCast(c[0], c[1]); err != nil {
			return nil, err
		}
	}
	return &deltaFilter{DType: dt, AsType: at, loop: loop}, nil
}

// deltaLoop is numpy 1.24's type resolution for add.accumulate(enc,
// out=dec): the add ufunc's resolver sees (dtype, astype), and the first
// operand's type must equal the output's. Without datetimes that is
// result_type; a timedelta takes integers and bools as timedeltas of its
// unit. Datetime totals fail: numpy resolves datetime + timedelta, whose
// operand types differ, which accumulate refuses.
func deltaLoop(dt, at DType) (DType, error) {
	isInt := func(d DType) bool { return d.Kind == 'b' || d.Kind == 'i' || d.Kind == 'u' }
	td := func(d DType) DType { return DType{Kind: 'm', Size: 8, Unit: d.Unit} }
	switch {
	case dt.Kind != 'M' && dt.Kind != 'm' && at.Kind != 'M' && at.Kind != 'm':
		return resultType(at, dt)
	case dt.Kind == 'm' && (isInt(at) || (at.Kind == 'm' && at.Unit == dt.Unit)):
		return td(dt), nil
	case isInt(dt) && at.Kind == 'm':
		return td(at), nil
	}
	return DType{}, fmt.Errorf("%w: numpy cannot accumulate %s into %s", ErrConfig, at, dt)
}

// EncodedLen is the stored size of decodedLen bytes.
func (d *deltaFilter) EncodedLen(decodedLen int) (int, error) {
	return filterEncodedLen(decodedLen, d.DType.Size, d.AsType.Size)
}

// Decode appends the running sums of src's elements to dst.
func (d *deltaFilter) Decode(dst, src []byte) ([]byte, error) {
	n, out, err := filterCount(dst, src, d.AsType.Size, d.DType.Size)
	if err != nil {
		return dst, err
	}
	switch {
	case d.AsType == d.DType && deltaFast(out, src, d.DType):
	case isIntKind(d.AsType) && isIntKind(d.loop) && isIntKind(d.DType):
		d.ints(out, src, n)
	default:
		d.slow(out, src, n)
	}
	return dst[:len(dst)+len(out)], nil
}

// slow is the general cumsum. The first element is copied (cast to the
// loop type and on to DType); the running total stays in the loop type.
func (d *deltaFilter) slow(out, src []byte, n int) {
	at, dt, loop := d.AsType, d.DType, d.loop
	castIn, castOut := !at.sameType(loop), !loop.sameType(dt)
	lanes := dt.Kind == 'u' && dt.Size == 4 // see vectorLane
	var acc scalar
	for i := range n {
		x := at.load(src[i*at.Size:])
		if castIn {
			x = cast(at, loop, x, false)
		}
		if i == 0 {
			acc = x
		} else {
			acc = loop.add(acc, x)
		}
		y := acc
		if castOut {
			y = cast(loop, dt, acc, lanes && vectorLane(loop, dt, i, n))
		}
		dt.store(out[i*dt.Size:], y)
	}
}

func isIntKind(d DType) bool { return d.Kind == 'i' || d.Kind == 'u' }

// ints is the all-integer case: the loop type is at least as wide as
// DType, so every output is the low bytes of the plain running sum of the
// (sign- or zero-extended) stored elements.
func (d *deltaFilter) ints(out, src []byte, n int) {
	at, dt := d.AsType, d.DType
	var acc uint64
	for i := range n {
		acc += at.load(src[i*at.Size:]).i
		putBits(out[i*dt.Size:], dt.Size, dt.Big, acc)
	}
}

// deltaFast handles the common case where stored and decoded dtypes are
// the same integer or float type, and reports whether it did.
func deltaFast(out, src []byte, d DType) bool {
	le, be := binary.LittleEndian, binary.BigEndian
	switch {
	case d.Kind == 'i' || d.Kind == 'u':
		switch d.Size {
		case 1:
			var acc byte
			for i, v := range src {
				acc += v
				out[i] = acc
			}
		case 2:
			var acc uint16
			for i := 0; i+2 <= len(src); i += 2 {
				if d.Big {
					acc += be.Uint16(src[i:])
					be.PutUint16(out[i:], acc)
				} else {
					acc += le.Uint16(src[i:])
					le.PutUint16(out[i:], acc)
				}
			}
		case 4:
			var acc uint32
			if d.Big {
				for i := 0; i+4 <= len(src); i += 4 {
					acc += be.Uint32(src[i:])
					be.PutUint32(out[i:], acc)
				}
			} else {
				for i := 0; i+4 <= len(src); i += 4 {
					acc += le.Uint32(src[i:])
					le.PutUint32(out[i:], acc)
				}
			}
		case 8:
			var acc uint64
			if d.Big {
				for i := 0; i+8 <= len(src); i += 8 {
					acc += be.Uint64(src[i:])
					be.PutUint64(out[i:], acc)
				}
			} else {
				for i := 0; i+8 <= len(src); i += 8 {
					acc += le.Uint64(src[i:])
					le.PutUint64(out[i:], acc)
				}
			}
		}
		return true
	case d.Kind == 'f' && d.Size == 4:
		if len(src) < 4 {
			return true
		}
		o := d.order() // an interface call per element; little-endian inlines below
		acc := math.Float32frombits(o.Uint32(src))
		copy(out, src[:4]) // numpy copies the first element: NaN payloads survive
		for i := 4; i+4 <= len(src); i += 4 {
			var x float32
			if d.Big {
				x = math.Float32frombits(o.Uint32(src[i:]))
			} else {
				x = math.Float32frombits(le.Uint32(src[i:]))
			}
			if s := acc + x; s == s {
				acc = s
			} else {
				acc = math.Float32frombits(nan32(acc, x))
			}
			if d.Big {
				o.PutUint32(out[i:], math.Float32bits(acc))
			} else {
				le.PutUint32(out[i:], math.Float32bits(acc))
			}
		}
		return true
	case d.Kind == 'f' && d.Size == 8:
		if len(src) < 8 {
			return true
		}
		o := d.order()
		acc := math.Float64frombits(o.Uint64(src))
		copy(out, src[:8])
		for i := 8; i+8 <= len(src); i += 8 {
			var x float64
			if d.Big {
				x = math.Float64frombits(o.Uint64(src[i:]))
			} else {
				x = math.Float64frombits(le.Uint64(src[i:]))
			}
			if s := acc + x; s == s {
				acc = s
			} else {
				acc = math.Float64frombits(nan64(acc, x))
			}
			if d.Big {
				o.PutUint64(out[i:], math.Float64bits(acc))
			} else {
				le.PutUint64(out[i:], math.Float64bits(acc))
			}
		}
		return true
	}
	return false
}
