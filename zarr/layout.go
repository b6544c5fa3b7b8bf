package zarr

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/zfuse/zfuse/codec"
)

// Relayout presents an array's elements in another layout than they are
// stored in: C order, in one byte order. Readers that ignore "order": "F"
// or a big-endian dtype (netCDF-C's NCZarr, some GDAL builds) then read
// the right values (zfuse mount --layout native: little-endian), and
// zfuse's netCDF view gets the big-endian C-order values a classic file
// holds.

// Relayout returns the array presented with its chunks in C order and
// its elements in the byte order big says (big-endian, or little-endian),
// converted while decoding: the decoder is followed by a transpose (of an
// order F chunk that is not laid out the same in both orders) and a byte
// swap (of elements whose byte order it changes: each half of a complex,
// each character of U text), and Order, DType, Endian and Fill describe
// the result. Metadata rewritten for it (RewriteV2Array, RewriteV3 and
// V2Files given it through their Presenter) says so. Elements whose byte
// order means nothing (bytes, bools, S and V) are not swapped, nor the
// fields of a structured dtype, which keep their own. It returns a when
// the layout is already so, and fails for an array passed through.
func (a *Array) Relayout(big bool) (*Array, error) {
	if a.PassThrough != nil {
		return nil, a.PassThrough
	}
	dt := a.dt
	swap := dt.Ordered() && !dt.structured && dt.Big != big
	transpose := a.Order == "F" && !cContiguous(a.Chunks)
	if !swap && !transpose && a.Order == "C" {
		return a, nil
	}
	v := *a
	v.relaid = true
	v.Order = "C"
	var stages []codec.Decoder
	if a.decoder != nil {
		stages = append(stages, a.decoder)
	}
	if transpose {
		rank := len(a.Chunks)
		order := make([]int, rank)
		for i := range order {
			order[i] = rank - 1 - i
		}
		t, err := codec.NewTranspose(a.Chunks, order, a.ItemSize)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		stages = append(stages, t)
	}
	if swap {
		unit := dt.Size
		switch dt.Kind {
		case 'c':
			unit /= 2
		case 'U':
			unit = 4
		}
		dt.Big = big
		v.dt = dt
		v.DType = dt.String()
		v.Endian = dt.endian()
		s := codec.ByteSwap{Size: unit}
		stages = append(stages, s)
		if a.Fill != nil {
			v.Fill, _ = s.Decode(make([]byte, 0, len(a.Fill)), a.Fill)
		}
	}
	v.decoder = codec.Chain(stages...)
	return &v, nil
}

// Relaid reports whether the array is presented in another layout than
// it is stored in (Relayout).
func (a *Array) Relaid() bool { return a.relaid }

// Type returns the element type of the presented chunks (a structured
// dtype is raw bytes, Kind 'V', of its record size; the zero DType where
// zfuse knows no fixed-size type).
func (a *Array) Type() codec.DType { return a.dt.DType }

// Structured reports whether the array's dtype is a v2 structured one.
func (a *Array) Structured() bool { return a.dt.structured }

// Attributes returns a v3 array's attributes as stored (a JSON object,
// "{}" when absent); nil for v2 arrays, whose attributes are the .zattrs
// beside the .zarray. The caller must not modify it.
func (a *Array) Attributes() json.RawMessage { return a.attrs }

// DimensionNames returns a v3 array's dimension_names, "" for a dimension
// without one; nil when there are none (and for v2 arrays, whose names
// are xarray's _ARRAY_DIMENSIONS attribute).
func (a *Array) DimensionNames() []string {
	if a.dimNames == nil {
		return nil
	}
	var names []*string
	if json.Unmarshal(a.dimNames, &names) != nil {
		return nil
	}
	out := make([]string, len(names))
	for i, n := range names {
		if n != nil {
			out[i] = *n
		}
	}
	return out
}

// FillValue returns fill_value as stored; nil when absent.
func (a *Array) FillValue() json.RawMessage { return slices.Clip(a.fillJSON) }
