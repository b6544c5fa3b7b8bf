// Package codec decodes the compressors, filters and checksums that Zarr
// stores use (Blosc, LZ4, Zstd, GZip, Zlib, BZ2, LZMA and the numcodecs
// filters), one chunk at a time or in batches.
//
// The one fact to know: Zarr metadata fixes every chunk's decoded size, so a
// caller passes a dst whose capacity is exactly that size, and decoders never
// grow it. Output that would not fit is ErrTooLarge; this is also the defence
// against decompression bombs.
//
// codec imports nothing else of zfuse.
package codec

import (
	"context"
	"errors"
)

// Errors shared by all decoders. Test for them with errors.Is.
var (
	// ErrTooLarge means the decoded data would not fit in cap(dst).
	ErrTooLarge = errors.New("codec: decoded chunk larger than expected")
	// ErrCorrupt means the encoded data is malformed or truncated.
	ErrCorrupt = errors.New("codec: corrupt input")
	// ErrChecksum means a stored checksum does not match the data.
	ErrChecksum = errors.New("codec: checksum mismatch")
	// ErrUnknownCodec means a codec id or name is not known; the wrapping
	// error names the id.
	ErrUnknownCodec = errors.New("codec: unknown codec")
	// ErrNotRaw means the codec produces objects (variable-length strings,
	// JSON, pickles), so the array cannot be presented as raw bytes. Callers
	// pass such arrays through unchanged.
	ErrNotRaw = errors.New("codec: array cannot be presented raw")
	// ErrConfig means a codec configuration is invalid.
	ErrConfig = errors.New("codec: invalid configuration")
)

// A Decoder decodes one encoded chunk.
//
// Decode appends the decoded form of src to dst and returns the extended
// slice, as zstd.Decoder.DecodeAll does. It never writes past cap(dst) and
// never allocates a larger dst: if the output would not fit it returns
// ErrTooLarge. The caller owns src and dst; Decode keeps no reference to
// either after it returns.
//
// Decoders are safe for concurrent use.
type Decoder interface {
	Decode(dst, src []byte) ([]byte, error)
}

// A Job is one chunk of a batch. Dst has len 0 and cap equal to the chunk's
// decoded size; after DecodeBatch, Dst holds the decoded bytes (or Err is set).
type Job struct {
	Src []byte
	Dst []byte
	Err error // per chunk: one bad chunk does not fail the others
}

// A BatchDecoder decodes many chunks at once. Each job gets its own Err; the
// returned error is for the batch as a whole (a cancelled ctx, an unusable
// device), in which case jobs that were not reached have Err set to it too.
// DecodeBatch is safe for concurrent use.
type BatchDecoder interface {
	DecodeBatch(ctx context.Context, jobs []Job) error
}

// Batch returns a BatchDecoder that decodes jobs one after another with d.
// It is the reference every other BatchDecoder must agree with byte for byte.
func Batch(d Decoder) BatchDecoder { return loop{d} }

type loop struct{ d Decoder }

func (l loop) DecodeBatch(ctx context.Context, jobs []Job) error {
	return runLoop(ctx, jobs, l.d.Decode)
}
