package codec

import (
	"encoding/binary"
	"fmt"
)

// Encoders of the filters and checksums whose configuration says
// everything: the decoder types encode too.

func init() {
	for _, id := range []string{"crc32", "adler32", "crc32c", "fletcher32", "jenkins_lookup3", "shuffle"} {
		registerEncoder(id, asEncoder(id))
	}
	registerEncoder("delta", newDeltaEncoder)
}

// newDeltaEncoder refuses, up front, the deltas Encode does not write.
func newDeltaEncoder(c Config, itemSize int) (Encoder, error) {
	e, err := asEncoder("delta")(c, itemSize)
	if err != nil {
		return nil, err
	}
	if err := e.(*deltaFilter).encodable(); err != nil {
		return nil, err
	}
	return e, nil
}

// encodable says why Encode refuses d's deltas, if it does.
func (d *deltaFilter) encodable() error {
	if d.AsType != d.DType || !isIntKind(d.DType) {
		return fmt.Errorf("%w: delta encodes integers stored as themselves, not %s as %s", ErrConfig, d.DType, d.AsType)
	}
	return nil
}

var (
	_ Encoder = (*checksumCodec)(nil)
	_ Encoder = shuffleFilter{}
	_ Encoder = (*deltaFilter)(nil)
)

// MaxEncodedLen is n plus the 4 checksum bytes.
func (c *checksumCodec) MaxEncodedLen(n int) int { return n + 4 }

// Encode appends src with its checksum before or after it.
func (c *checksumCodec) Encode(dst, src []byte) ([]byte, error) {
	out, err := room(dst, len(src)+4)
	if err != nil {
		return dst, err
	}
	payload, sum := out[4:], out[:4]
	if c.atEnd {
		payload, sum = out[:len(src)], out[len(src):]
	}
	copy(payload, src)
	binary.LittleEndian.PutUint32(sum, c.sum(c.prefix, src))
	return dst[:len(dst)+len(out)], nil
}

// MaxEncodedLen is n: shuffling moves bytes only.
func (shuffleFilter) MaxEncodedLen(n int) int { return n }

// Encode appends the byte shuffle of src (whole elements, as numcodecs
// requires) to dst.
func (s shuffleFilter) Encode(dst, src []byte) ([]byte, error) {
	if s.ElementSize > 1 && len(src)%s.ElementSize != 0 {
		return dst, fmt.Errorf("%w: shuffle: %d bytes is not a whole number of %d-byte elements", ErrConfig, len(src), s.ElementSize)
	}
	out, err := room(dst, len(src))
	if err != nil {
		return dst, err
	}
	byteShuffle(out, src, s.ElementSize)
	return dst[:len(dst)+len(src)], nil
}

// MaxEncodedLen is n: zfuse encodes deltas only in the decoded type.
func (d *deltaFilter) MaxEncodedLen(n int) int { return n }

// Encode appends the differences between neighbours of src's elements
// (the first one as it is) to dst: numcodecs' np.diff. Only integer
// dtypes stored as themselves are encoded, the cases where decoding gives
// back exactly the input (float differences round, bool deltas do not
// invert, narrower astypes overflow).
func (d *deltaFilter) Encode(dst, src []byte) ([]byte, error) {
	if err := d.encodable(); err != nil {
		return dst, err
	}
	size := d.DType.Size
	if len(src)%size != 0 {
		return dst, fmt.Errorf("%w: delta: %d bytes is not a whole number of %d-byte elements", ErrConfig, len(src), size)
	}
	out, err := room(dst, len(src))
	if err != nil {
		return dst, err
	}
	var prev uint64
	for i := 0; i < len(src); i += size {
		v := getBits(src[i:], size, d.DType.Big)
		putBits(out[i:], size, d.DType.Big, v-prev)
		prev = v
	}
	return dst[:len(dst)+len(src)], nil
}
