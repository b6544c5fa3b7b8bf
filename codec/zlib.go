package codec

import (
	"bytes"
	"compress/zlib"
	"io"
)

func init() { register("zlib", newZlib) }

// Zlib decodes RFC 1950 zlib streams: numcodecs "zlib" and Blosc's zlib
// splits. The Adler-32 trailer is verified.
type Zlib struct{}

var _ Decoder = Zlib{}

func newZlib(Config) (Decoder, error) { return Zlib{}, nil }

func (Zlib) Decode(dst, src []byte) ([]byte, error) { return zlibDecode(dst, src) }

// zlibDecode appends the decoded stream in src to dst without growing it.
func zlibDecode(dst, src []byte) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(src))
	if err != nil {
		return dst, errorsJoinCorrupt(err)
	}
	defer r.Close()
	return readAllCapped(dst, r)
}

// readAllCapped appends everything r yields to dst, failing with ErrTooLarge
// rather than growing dst past its capacity. Read errors are ErrCorrupt
// (zlib/gzip report checksum mismatches as their own ErrChecksum, which is
// kept in the chain).
func readAllCapped(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			// Full: anything more is too much.
			var one [1]byte
			n, err := io.ReadFull(r, one[:])
			if n > 0 {
				return dst, ErrTooLarge
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return dst, nil
			}
			return dst, errorsJoinCorrupt(err)
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, errorsJoinCorrupt(err)
		}
	}
}
