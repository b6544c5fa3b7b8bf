package codec

import (
	"encoding/binary"
	"fmt"
)

// ByteSwap reverses the bytes of every Size-byte unit: it turns elements
// of Size bytes from one byte order into the other (a complex number is
// two units of half its size). It is not a numcodecs codec: zfuse appends
// it to a pipeline to present an array in another byte order than it is
// stored in (zarr.Array.Relayout). Size 1 copies. Safe for concurrent use.
type ByteSwap struct{ Size int }

var (
	_ Decoder      = ByteSwap{}
	_ EncodedSizer = ByteSwap{}
)

// EncodedLen is n: swapping moves bytes, it adds none.
func (s ByteSwap) EncodedLen(n int) (int, error) { return n, nil }

// Decode appends src with the bytes of each unit reversed to dst. src
// must hold whole units.
func (s ByteSwap) Decode(dst, src []byte) ([]byte, error) {
	if s.Size <= 0 || len(src)%s.Size != 0 {
		return dst, fmt.Errorf("%w: byte swap of %d-byte units over %d bytes", ErrCorrupt, s.Size, len(src))
	}
	if len(src) > cap(dst)-len(dst) {
		return dst, ErrTooLarge
	}
	out := dst[len(dst) : len(dst)+len(src)]
	switch s.Size {
	case 1:
		copy(out, src)
	case 2:
		for i := 0; i+2 <= len(src); i += 2 {
			binary.BigEndian.PutUint16(out[i:i+2], binary.LittleEndian.Uint16(src[i:i+2]))
		}
	case 4:
		for i := 0; i+4 <= len(src); i += 4 {
			binary.BigEndian.PutUint32(out[i:i+4], binary.LittleEndian.Uint32(src[i:i+4]))
		}
	case 8:
		for i := 0; i+8 <= len(src); i += 8 {
			binary.BigEndian.PutUint64(out[i:i+8], binary.LittleEndian.Uint64(src[i:i+8]))
		}
	default:
		for i := 0; i < len(src); i += s.Size {
			for k := range s.Size {
				out[i+k] = src[i+s.Size-1-k]
			}
		}
	}
	return dst[:len(dst)+len(src)], nil
}
