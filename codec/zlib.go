package codec

import (
	"bytes"
	"io"
	"sync"

	"github.com/klauspost/compress/zlib"
)

func init() { register("zlib", newZlib) }

// zlibCodec decodes RFC 1950 zlib streams: numcodecs "zlib" and Blosc's zlib
// splits. The Adler-32 trailer is verified; bytes after the trailer are
// ignored, as Python's zlib.decompress does.
type zlibCodec struct{}

var _ Decoder = zlibCodec{}

func newZlib(Config) (Decoder, error) { return zlibCodec{}, nil }

func (zlibCodec) Decode(dst, src []byte) ([]byte, error) { return zlibDecode(dst, src) }

// zlibState is a reusable zlib reader. klauspost's inflate measured 1.4x
// faster than compress/zlib on numcodecs-like data (2-core EPYC, 1 MiB
// chunks: 250 vs 180 MB/s), and Reset keeps its tables: one allocation-free
// decode per call.
type zlibState struct {
	src   bytes.Reader
	zr    io.ReadCloser // also a zlib.Resetter
	probe [1]byte
}

// emptyZlib is the zlib stream of no bytes; a reader must start from a
// valid stream before it can be Reset.
var emptyZlib = []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}

var zlibStates = sync.Pool{New: func() any {
	zr, err := zlib.NewReader(bytes.NewReader(emptyZlib))
	if err != nil {
		panic("codec: zlib reader for the empty stream: " + err.Error())
	}
	return &zlibState{zr: zr}
}}

// zlibDecode appends the decoded stream in src to dst without growing it.
func zlibDecode(dst, src []byte) ([]byte, error) {
	st := zlibStates.Get().(*zlibState)
	defer func() {
		st.src.Reset(nil) // keep no reference to src
		zlibStates.Put(st)
	}()
	st.src.Reset(src)
	if err := st.zr.(zlib.Resetter).Reset(&st.src, nil); err != nil {
		return dst, libraryErr(err)
	}
	return readAllCappedProbe(dst, st.zr, st.probe[:])
}

// readAllCapped appends everything r yields to dst, failing with ErrTooLarge
// rather than growing dst past its capacity. Read errors are ErrCorrupt
// (or ErrChecksum, with the library's error kept in the chain). On error it
// returns dst as it was passed in.
func readAllCapped(dst []byte, r io.Reader) ([]byte, error) {
	return readAllCappedProbe(dst, r, make([]byte, 1))
}

// readAllCappedProbe is readAllCapped with a caller-owned 1-byte buffer for
// the read that checks the input is exhausted (a pooled reader state keeps
// one, saving an allocation per call).
func readAllCappedProbe(dst []byte, r io.Reader, probe []byte) ([]byte, error) {
	out := dst
	for stalls := 0; ; {
		if len(out) == cap(out) {
			// Full: anything more is too much. The probe also makes the
			// reader check its trailer (checksum, sizes).
			n, err := io.ReadFull(r, probe[:1])
			switch {
			case n > 0:
				return dst, ErrTooLarge
			case err == io.EOF:
				return out, nil
			}
			return dst, libraryErr(err)
		}
		n, err := r.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		switch {
		case err == io.EOF:
			return out, nil
		case err != nil:
			return dst, libraryErr(err)
		case n > 0:
			stalls = 0
		default: // a reader that makes no progress is broken
			if stalls++; stalls > 100 {
				return dst, libraryErr(io.ErrNoProgress)
			}
		}
	}
}
