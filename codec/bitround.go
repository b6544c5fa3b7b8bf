package codec

import "fmt"

func init() { register("bitround", newBitRound) }

// bitRound decodes the numcodecs "bitround" filter. Encoding rounds float
// mantissas to KeepBits bits in place; the stored bytes are already the
// rounded floats, so decoding is a copy.
//
// A bitRound is immutable and safe for concurrent use.
type bitRound struct {
	KeepBits int
}

var (
	_ Decoder      = bitRound{}
	_ EncodedSizer = bitRound{}
)

func newBitRound(c Config) (Decoder, error) {
	if !c.Has("keepbits") {
		return nil, fmt.Errorf("%w: %q is required", ErrConfig, "keepbits")
	}
	k, err := c.Int("keepbits", 0)
	if err != nil {
		return nil, err
	}
	if k < 0 {
		return nil, fmt.Errorf("%w: keepbits %d is negative", ErrConfig, k)
	}
	return bitRound{KeepBits: k}, nil
}

// EncodedLen is decodedLen: the filter keeps the item size.
func (bitRound) EncodedLen(decodedLen int) (int, error) { return decodedLen, nil }

// Decode appends src to dst.
func (bitRound) Decode(dst, src []byte) ([]byte, error) { return Raw{}.Decode(dst, src) }
