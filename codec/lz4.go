package codec

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/pierrec/lz4/v4"
)

func init() { register("lz4", newLZ4) }

// LZ4 decodes numcodecs "lz4": a u32le original size followed by one raw
// LZ4 block (zarr-formats.md §2.1). The output must be exactly the stored
// size; a stored size of 0 is refused, as numcodecs refuses it.
type LZ4 struct{}

var _ Decoder = LZ4{}

func newLZ4(Config) (Decoder, error) { return LZ4{}, nil }

var (
	errLZ4Corrupt = fmt.Errorf("%w: lz4 block", ErrCorrupt)
	errLZ4Header  = fmt.Errorf("%w: lz4: bad original size prefix", ErrCorrupt)
)

// Decode appends the decoded chunk to dst without growing it.
func (LZ4) Decode(dst, src []byte) ([]byte, error) {
	if len(src) < 4 {
		return dst, errLZ4Header
	}
	size := binary.LittleEndian.Uint32(src)
	if size == 0 || size > 1<<31-1 { // numcodecs reads it as a C int and wants > 0
		return dst, errLZ4Header
	}
	n := int(size)
	if n > cap(dst)-len(dst) {
		return dst, ErrTooLarge
	}
	out := dst[len(dst) : len(dst)+n]
	if lit, ok := lz4OnlyLiterals(src[4:]); ok {
		if len(lit) != n {
			return dst, errLZ4Corrupt
		}
		copyCached(out, lit)
	} else if got, err := lz4.UncompressBlock(src[4:], out); err != nil || got != n {
		return dst, errLZ4Corrupt
	}
	return dst[:len(dst)+n], nil
}

// lz4OnlyLiterals returns the literals of a block that is one literal run
// and nothing else, as LZ4 writes incompressible input (floats without a
// shuffle, say). Copying those ourselves keeps the output in the cache:
// pierrec hands a long run to Go's memmove, whose non-temporal stores for
// 1 MiB and more made such chunks slower than C.
func lz4OnlyLiterals(src []byte) ([]byte, bool) {
	if len(src) < 1<<16 || src[0] != 0xF0 {
		return nil, false
	}
	lit, si := 15, 1
	for si < len(src) {
		b := src[si]
		si++
		lit += int(b)
		if b != 255 {
			break
		}
	}
	if lit != len(src)-si {
		return nil, false
	}
	return src[si:], true
}

// lz4Block appends the decoding of the raw LZ4 block src to dst, never past
// cap(dst). An empty src is corrupt (the empty input encodes to one zero
// token). Output that would not fit is ErrTooLarge.
func lz4Block(dst, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return dst, errLZ4Corrupt
	}
	room := dst[len(dst):cap(dst)]
	if lit, ok := lz4OnlyLiterals(src); ok {
		if len(lit) > len(room) {
			return dst, ErrTooLarge
		}
		return dst[:len(dst)+copyCached(room, lit)], nil
	}
	n, err := lz4.UncompressBlock(src, room)
	if err == nil {
		return dst[:len(dst)+n], nil
	}
	// pierrec reports a short dst and bad input alike; tell them apart by
	// walking the sequences (no writes, no allocation).
	if size, ok := lz4DecodedLen(src); ok && size > len(room) {
		return dst, ErrTooLarge
	}
	return dst, errLZ4Corrupt
}

// lz4DecodedLen returns the number of bytes the LZ4 block src decodes to,
// reading only its tokens and length bytes; ok is false when the sequence
// structure is malformed (match offsets are not checked). Like pierrec's
// decoder (and unlike liblz4's), it accepts a block that ends with a match.
func lz4DecodedLen(src []byte) (n int, ok bool) {
	const limit = math.MaxInt >> 2 // past any cap: stop counting
	si := 0
	for si < len(src) && n < limit {
		tok := src[si]
		si++
		lit := int(tok >> 4)
		if lit == 15 {
			for {
				if si >= len(src) {
					return 0, false
				}
				b := src[si]
				si++
				lit += int(b)
				if b != 255 {
					break
				}
			}
		}
		if lit > len(src)-si {
			return 0, false
		}
		si += lit
		n += lit
		if si == len(src) {
			return n, true // the last sequence has literals only
		}
		if len(src)-si < 2 {
			return 0, false
		}
		si += 2 // offset
		ml := int(tok & 15)
		if ml == 15 {
			for {
				if si >= len(src) {
					return 0, false
				}
				b := src[si]
				si++
				ml += int(b)
				if ml > limit {
					return limit, true
				}
				if b != 255 {
					break
				}
			}
		}
		n += ml + 4
	}
	return n, si == len(src) || n >= limit
}
