package codec

import "fmt"

func init() { register("quantize", newQuantize) }

// quantizeFilter decodes the numcodecs "quantize" filter. The filter is lossy
// only when encoding (it rounds to a number of decimal digits); decoding
// casts the stored float elements (AsType) to DType, as numpy's astype.
// Digits is kept for display only.
//
// A quantizeFilter is immutable and safe for concurrent use.
type quantizeFilter struct {
	Digits int
	DType  DType // decoded elements, a float type
	AsType DType // stored elements, a float type
}

var (
	_ Decoder      = (*quantizeFilter)(nil)
	_ EncodedSizer = (*quantizeFilter)(nil)
)

func newQuantize(c Config) (Decoder, error) {
	if !c.Has("digits") {
		return nil, fmt.Errorf("%w: %q is required", ErrConfig, "digits")
	}
	digits, err := c.Int("digits", 0)
	if err != nil {
		return nil, err
	}
	dt, at, err := configDTypes(c)
	if err != nil {
		return nil, err
	}
	if dt.Kind != 'f' || at.Kind != 'f' {
		return nil, fmt.Errorf("%w: quantize supports only float dtypes, not %s/%s", ErrConfig, dt, at)
	}
	return &quantizeFilter{Digits: digits, DType: dt, AsType: at}, nil
}

// EncodedLen is the stored size of decodedLen bytes.
func (q *quantizeFilter) EncodedLen(decodedLen int) (int, error) {
	return filterEncodedLen(decodedLen, q.DType.Size, q.AsType.Size)
}

// Decode appends src's elements, cast to DType, to dst.
func (q *quantizeFilter) Decode(dst, src []byte) ([]byte, error) {
	n, out, err := filterCount(dst, src, q.AsType.Size, q.DType.Size)
	if err != nil {
		return dst, err
	}
	castElems(out, src, q.AsType, q.DType, n)
	return dst[:len(dst)+len(out)], nil
}
