package codec

import (
	"errors"
	"sync"

	"github.com/klauspost/compress/zstd"
)

func init() { register("zstd", newZstd) }

// zstdCodec decodes zstd frames (RFC 8878): numcodecs "zstd", Zarr v3 "zstd",
// and Blosc's zstd splits. Several frames, skippable frames, frames without
// a content size and frames with a checksum (verified) are all accepted.
type zstdCodec struct{}

var _ Decoder = zstdCodec{}

func newZstd(Config) (Decoder, error) { return zstdCodec{}, nil }

func (zstdCodec) Decode(dst, src []byte) ([]byte, error) { return zstdDecode(dst, src) }

// zstdDecoder is shared: DecodeAll is safe for concurrent use, and one
// decoder keeps its buffers warm across calls.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),   // one decoder state per GOMAXPROCS for DecodeAll
		zstd.WithDecodeAllCapLimit(true), // never grow dst: cap(dst) is the chunk size
		zstd.WithDecoderMaxMemory(1<<40), // the cap limit is the real bound
	)
	if err != nil {
		panic(err) // only for invalid options
	}
	return d
})

// zstdDecode appends the decoded frames in src to dst without growing it.
func zstdDecode(dst, src []byte) ([]byte, error) {
	out, err := zstdDecoder().DecodeAll(src, dst)
	switch {
	case err == nil:
		return out, nil
	case errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded) && len(out) >= cap(dst):
		return dst, ErrTooLarge
	case errors.Is(err, zstd.ErrCRCMismatch):
		return dst, ErrChecksum
	}
	return dst, both(ErrCorrupt, err)
}
