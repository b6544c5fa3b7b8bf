package codec

import (
	"encoding/binary"
	"fmt"
)

func init() { register("packbits", newPackBits) }

// packBits decodes the numcodecs "packbits" filter: byte 0 is the number of
// padding bits p (0..7) at the end, then np.packbits output, most
// significant bit first. The decoded elements are bool bytes 0 and 1,
// 8*(len-1)-p of them. numcodecs would also accept p > 7 (slicing away
// whole bytes); no encoder writes that, and Decode calls it corrupt.
//
// packBits is stateless and safe for concurrent use.
type packBits struct{}

var (
	_ Decoder      = packBits{}
	_ EncodedSizer = packBits{}
)

func newPackBits(Config) (Decoder, error) { return packBits{}, nil }

// EncodedLen is 1 + ceil(decodedLen/8).
func (packBits) EncodedLen(decodedLen int) (int, error) { return 1 + (decodedLen+7)/8, nil }

// unpacked[b] holds the 8 bool bytes of b, in memory order.
var unpacked = func() (t [256]uint64) {
	for b := range t {
		for j := range 8 {
			t[b] |= uint64(b>>(7-j)&1) << (8 * j)
		}
	}
	return t
}()

// Decode appends the unpacked bools of src to dst.
func (packBits) Decode(dst, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return dst, fmt.Errorf("%w: packbits: empty input", ErrCorrupt)
	}
	pad := int(src[0])
	bits := 8*(len(src)-1) - pad
	if pad > 7 || bits < 0 {
		return dst, fmt.Errorf("%w: packbits: %d padding bits", ErrCorrupt, pad)
	}
	if bits > cap(dst)-len(dst) {
		return dst, ErrTooLarge
	}
	out := dst[len(dst) : len(dst)+bits]
	packed := src[1:]
	full := bits / 8
	for i, b := range packed[:full] {
		binary.LittleEndian.PutUint64(out[8*i:], unpacked[b])
	}
	if rest := bits % 8; rest > 0 {
		var tail [8]byte
		binary.LittleEndian.PutUint64(tail[:], unpacked[packed[full]])
		copy(out[8*full:], tail[:rest])
	}
	return dst[:len(dst)+bits], nil
}
