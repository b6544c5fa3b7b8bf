package codec

func init() { register("astype", newAsType) }

// asType decodes the numcodecs "astype" filter: numpy's
// astype(DecodeDType) of the stored EncodeDType elements. The cast rules
// (wrap-around, truncation, rounding, bool) are those of cast in dtype.go.
//
// An asType is immutable and safe for concurrent use.
type asType struct {
	EncodeDType DType // stored elements
	DecodeDType DType // decoded elements
}

var (
	_ Decoder      = (*asType)(nil)
	_ EncodedSizer = (*asType)(nil)
)

func newAsType(c Config) (Decoder, error) {
	et, err := configDType(c, "encode_dtype", nil)
	if err != nil {
		return nil, err
	}
	dt, err := configDType(c, "decode_dtype", nil)
	if err != nil {
		return nil, err
	}
	if err := canCast(et, dt); err != nil {
		return nil, err
	}
	return &asType{EncodeDType: et, DecodeDType: dt}, nil
}

// EncodedLen is the stored size of decodedLen bytes.
func (a *asType) EncodedLen(decodedLen int) (int, error) {
	return filterEncodedLen(decodedLen, a.DecodeDType.Size, a.EncodeDType.Size)
}

// Decode appends src's elements, cast to DecodeDType, to dst.
func (a *asType) Decode(dst, src []byte) ([]byte, error) {
	n, out, err := filterCount(dst, src, a.EncodeDType.Size, a.DecodeDType.Size)
	if err != nil {
		return dst, err
	}
	castElems(out, src, a.EncodeDType, a.DecodeDType, n)
	return dst[:len(dst)+len(out)], nil
}
