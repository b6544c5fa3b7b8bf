package codec

import (
	"context"
	"encoding/json"
	"fmt"
)

// An Encoder encodes one chunk: the inverse of the Decoder of the same
// configuration. What it writes, that Decoder (and numcodecs 0.11, for the
// codecs numcodecs has) reads back to src exactly.
//
// Encode appends the encoded form of src to dst and returns the extended
// slice, as zstd.Encoder.EncodeAll does, but like Decode it never writes
// past cap(dst) and never allocates a larger dst: if the output would not
// fit it returns ErrTooLarge. MaxEncodedLen(len(src)) bytes of room always
// suffice, so callers that size dst with it (a GPU encoder needs to, to
// allocate its output up front) never see ErrTooLarge. The caller owns src
// and dst; Encode keeps no reference to either after it returns.
//
// Encoders are safe for concurrent use.
type Encoder interface {
	Encode(dst, src []byte) ([]byte, error)
	// MaxEncodedLen bounds the encoded size of n bytes.
	MaxEncodedLen(n int) int
}

// A BatchEncoder encodes many chunks at once, the mirror of BatchDecoder:
// each Job's Src is a chunk to encode, its Dst (len 0) receives the encoded
// bytes within its capacity, and its Err says whether that chunk failed.
// The returned error is for the batch as a whole (a cancelled ctx, an
// unusable device), in which case jobs that were not reached have Err set
// to it too. EncodeBatch is safe for concurrent use.
type BatchEncoder interface {
	EncodeBatch(ctx context.Context, jobs []Job) error
}

// EncodeJobs returns jobs for encoding srcs with e, each Dst sized with
// e.MaxEncodedLen so that no job fails for lack of room.
func EncodeJobs(e Encoder, srcs [][]byte) []Job {
	jobs := make([]Job, len(srcs))
	for i, s := range srcs {
		jobs[i] = Job{Src: s, Dst: make([]byte, 0, e.MaxEncodedLen(len(s)))}
	}
	return jobs
}

// EncoderBatch returns a BatchEncoder that encodes jobs one after another
// with e. It is the reference every other BatchEncoder must agree with
// byte for byte.
func EncoderBatch(e Encoder) BatchEncoder { return encodeLoop{e} }

type encodeLoop struct{ e Encoder }

func (l encodeLoop) EncodeBatch(ctx context.Context, jobs []Job) error {
	return runLoop(ctx, jobs, l.e.Encode)
}

// runLoop runs fn over jobs in order, stopping when ctx ends: the loop
// behind Batch and EncoderBatch.
func runLoop(ctx context.Context, jobs []Job, fn func(dst, src []byte) ([]byte, error)) error {
	for i := range jobs {
		if err := ctx.Err(); err != nil {
			for j := i; j < len(jobs); j++ {
				jobs[j].Err = err
			}
			return err
		}
		jobs[i].Dst, jobs[i].Err = fn(jobs[i].Dst[:0], jobs[i].Src)
	}
	return nil
}

// encoders maps a numcodecs id to the function that builds its encoder
// from a configuration and the item size of the bytes it will see (Blosc's
// typesize comes from the array's dtype in numcodecs, not from its
// configuration). Each codec's encode file registers itself.
var encoders = map[string]func(c Config, itemSize int) (Encoder, error){}

func registerEncoder(id string, fn func(Config, int) (Encoder, error)) {
	if _, dup := encoders[id]; dup {
		panic("codec: encoder registered twice: " + id)
	}
	encoders[id] = fn
}

// NewEncoder returns the encoder for one numcodecs configuration (a JSON
// object with an "id"); itemSize is the size of the elements it encodes
// (the array's dtype, or what the filters before it produce). Ids without
// an encoder give an error wrapping ErrUnknownCodec that names the id.
func NewEncoder(config json.RawMessage, itemSize int) (Encoder, error) {
	var c Config
	if err := json.Unmarshal(config, &c); err != nil || c == nil {
		return nil, fmt.Errorf("%w: not a JSON object: %s", ErrConfig, config)
	}
	return NewEncoderConfig(c, itemSize)
}

// NewEncoderConfig is NewEncoder for an already parsed configuration.
func NewEncoderConfig(c Config, itemSize int) (Encoder, error) {
	id := c.ID()
	if notRaw[id] {
		return nil, fmt.Errorf("%w: object codec %q", ErrNotRaw, id)
	}
	fn, ok := encoders[id]
	if !ok {
		return nil, fmt.Errorf("%w: no encoder for %q", ErrUnknownCodec, id)
	}
	e, err := fn(c, max(itemSize, 1))
	if err != nil {
		return nil, fmt.Errorf("codec %q: %w", id, err)
	}
	return e, nil
}

// EncoderIDs returns the ids that have an encoder, sorted.
func EncoderIDs() []string { return sortedIDs(encoders) }

// asEncoder builds the encoder of a codec whose decoder type encodes too
// (filters and checksums, whose configuration says everything).
func asEncoder(id string) func(Config, int) (Encoder, error) {
	return func(c Config, _ int) (Encoder, error) {
		d, err := constructors[id](c)
		if err != nil {
			return nil, err
		}
		e, ok := d.(Encoder)
		if !ok {
			return nil, fmt.Errorf("%w: %s cannot encode this configuration", ErrConfig, id)
		}
		return e, nil
	}
}

// errNoRoom is the ErrTooLarge of encoders.
var errNoRoom = fmt.Errorf("codec: encoded chunk does not fit in dst: %w", ErrTooLarge)

// room returns the next n bytes of dst's free capacity, or errNoRoom when
// it has fewer.
func room(dst []byte, n int) ([]byte, error) {
	if cap(dst)-len(dst) < n {
		return nil, errNoRoom
	}
	return dst[len(dst) : len(dst)+n], nil
}
