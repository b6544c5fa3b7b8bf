package codec

import "fmt"

func init() { register("shuffle", newShuffleFilter) }

// shuffleFilter decodes the numcodecs "shuffle" filter: one byte shuffle
// over the whole chunk (no Blosc blocks), with element size ElementSize:
// with n = len/ElementSize, out[b*ElementSize+i] = in[i*n+b]. An element
// size of 0 or 1 leaves the bytes as they are.
//
// A shuffleFilter is immutable and safe for concurrent use.
type shuffleFilter struct {
	ElementSize int
}

var (
	_ Decoder      = shuffleFilter{}
	_ EncodedSizer = shuffleFilter{}
)

func newShuffleFilter(c Config) (Decoder, error) {
	es, err := c.Int("elementsize", 4) // numcodecs' default
	if err != nil {
		return nil, err
	}
	return shuffleFilter{ElementSize: es}, nil
}

// EncodedLen is decodedLen: shuffling moves bytes only.
func (shuffleFilter) EncodedLen(decodedLen int) (int, error) { return decodedLen, nil }

// Decode appends the unshuffled bytes of src to dst. src must hold whole
// elements, as numcodecs refuses to shuffle anything else.
func (s shuffleFilter) Decode(dst, src []byte) ([]byte, error) {
	if s.ElementSize <= 1 {
		return Raw{}.Decode(dst, src)
	}
	if len(src)%s.ElementSize != 0 {
		return dst, fmt.Errorf("%w: shuffle: %d bytes is not a whole number of %d-byte elements", ErrCorrupt, len(src), s.ElementSize)
	}
	if len(src) > cap(dst)-len(dst) {
		return dst, ErrTooLarge
	}
	byteUnshuffle(dst[len(dst):len(dst)+len(src)], src, s.ElementSize)
	return dst[:len(dst)+len(src)], nil
}
