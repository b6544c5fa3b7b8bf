package zarr

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/zfuse/zfuse/codec"
)

// An Encoding stores the chunks of one array as its metadata says: the
// inverse of the array's decoder. Chunk encodes one presented chunk (for a
// sharded array, one inner chunk) into the bytes stored for it; a sharded
// array's stored values are then assembled from encoded inner chunks by
// Shard. Decoding what an Encoding writes with the array's own decoder
// (Array.DecodeChunk, Array.DecodeFromShard) gives back the chunk.
//
// An Encoding is immutable and safe for concurrent use.
type Encoding struct {
	a     *Array
	chunk codec.Encoder // presented chunk → its stored bytes
	index codec.Encoder // sharded: the index's bytes→bytes codecs
	outer codec.Encoder // sharded: bytes→bytes codecs over the whole shard; nil when none
}

// NewEncoding returns the encoding of the array whose metadata files are
// files: ".zarray" for v2, "zarr.json" for v3. Codecs zfuse cannot encode
// (an array→array codec other than numcodecs filters with an encoder,
// sharding inside sharding, a codec without an encoder) give an error
// wrapping codec.ErrUnknownCodec or codec.ErrConfig.
func NewEncoding(files map[string][]byte) (*Encoding, error) {
	if b, ok := files[ArrayFile]; ok {
		return newEncodingV2(b)
	}
	b, ok := files[MetadataFile]
	if !ok {
		return nil, fmt.Errorf("%w: no %s or %s", ErrInvalid, ArrayFile, MetadataFile)
	}
	return newEncodingV3(b)
}

// newEncodingV2 returns the encoding of the v2 array whose .zarray is b.
func newEncodingV2(b []byte) (*Encoding, error) {
	a, err := ParseV2(b)
	if err != nil {
		return nil, err
	}
	if a.PassThrough != nil {
		return nil, a.PassThrough
	}
	var m v2Array
	json.Unmarshal(sanitizeJSON(b), &m)
	enc, err := codec.EncoderV2(m.Compressor, m.Filters, a.ItemSize)
	if err != nil {
		return nil, err
	}
	return &Encoding{a: a, chunk: enc}, nil
}

// newEncodingV3 returns the encoding of the v3 array whose zarr.json is b.
func newEncodingV3(b []byte) (*Encoding, error) {
	a, _, err := ParseV3(b)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, fmt.Errorf("%w: %s is a group", ErrInvalid, MetadataFile)
	}
	if a.PassThrough != nil {
		return nil, a.PassThrough
	}
	m, _ := parseV3Doc(b)
	var list []json.RawMessage
	json.Unmarshal(m["codecs"], &list)
	e := &Encoding{a: a}
	var sh json.RawMessage
	if e.chunk, sh, e.outer, err = encodeList(list, a.ItemSize, a.Endian); err != nil {
		return nil, err
	}
	if a.shard == nil {
		if sh != nil {
			return nil, fmt.Errorf("%w: a sharded array not presented unsharded (array→array codecs before sharding_indexed)", codec.ErrUnknownCodec)
		}
		return e, nil
	}
	if err := e.setShard(sh); err != nil {
		return nil, err
	}
	return e, nil
}

// setShard makes e encode inner chunks with the codecs of sh (the
// sharding_indexed configuration) and shard indexes with the inverse of
// the index's decoders.
func (e *Encoding) setShard(sh json.RawMessage) error {
	a := e.a
	var c struct {
		Codecs []json.RawMessage `json:"codecs"`
	}
	json.Unmarshal(sh, &c)
	inner, nested, _, err := encodeList(c.Codecs, a.ItemSize, a.Endian)
	switch {
	case err != nil:
		return err
	case nested != nil:
		return fmt.Errorf("%w: no encoder for sharding inside sharding", codec.ErrUnknownCodec)
	}
	e.chunk = inner
	var index []codec.Encoder
	for i := len(a.shard.indexDec) - 1; i >= 0; i-- { // decode order, backwards
		ie, ok := a.shard.indexDec[i].(codec.Encoder)
		if !ok {
			return fmt.Errorf("%w: no encoder for the shard index codec %T", codec.ErrUnknownCodec, a.shard.indexDec[i])
		}
		index = append(index, ie)
	}
	e.index = codec.EncodeChain(index...)
	return nil
}

// encodeList builds the encoder of a v3 codec list for chunks whose items
// are itemSize bytes in byte order endian: the array→array and
// array→bytes codecs as chunk (bytes is the identity: presented chunks
// are in the stored byte order), then the bytes→bytes ones as outer. When
// the array→bytes codec is sharding_indexed, chunk encodes nothing (it is
// Raw) and shard is that codec's configuration.
func encodeList(list []json.RawMessage, itemSize int, endian string) (chunk codec.Encoder, shard json.RawMessage, outer codec.Encoder, err error) {
	var pre, post []codec.Encoder
	seenAB := false
	for _, raw := range list {
		e, err := parseExtension(raw)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("codec: %w", err)
		}
		switch k := codec.KindOfV3(e.Name); {
		case e.Name == "bytes" || e.Name == "endian":
			seenAB = true
		case e.Name == "sharding_indexed":
			seenAB, shard = true, e.Config
		case k == codec.ArrayToBytes:
			return nil, nil, nil, fmt.Errorf("%w: no encoder for %q", codec.ErrUnknownCodec, e.Name)
		case k == codec.ArrayToArray && e.Name == "transpose":
			return nil, nil, nil, fmt.Errorf("%w: no encoder for transpose", codec.ErrUnknownCodec)
		default:
			enc, err := v3Encoder(e, itemSize, endian)
			if err != nil {
				return nil, nil, nil, err
			}
			if seenAB {
				post = append(post, enc)
			} else {
				pre = append(pre, enc)
			}
		}
	}
	if !seenAB {
		return nil, nil, nil, fmt.Errorf("%w: no array→bytes codec", ErrInvalid)
	}
	if shard != nil {
		if len(pre) > 0 {
			return nil, nil, nil, fmt.Errorf("%w: no encoder for array→array codecs before sharding_indexed", codec.ErrUnknownCodec)
		}
		return codec.Raw{}, shard, codec.EncodeChain(post...), nil
	}
	return codec.EncodeChain(append(pre, post...)...), nil, nil, nil
}

// v3Encoder is the encoder of one v3 codec other than bytes and
// sharding_indexed. Blosc's typesize comes from its configuration, else
// from the item size.
func v3Encoder(e extension, itemSize int, endian string) (codec.Encoder, error) {
	c := codec.Config{}
	json.Unmarshal(e.Config, &c)
	ts, err := c.Int("typesize", itemSize)
	if err != nil {
		return nil, err
	}
	cfg, err := codec.V3Config(e.Name, e.Config, endian)
	if err != nil {
		return nil, err
	}
	return codec.NewEncoderConfig(cfg, ts)
}

// Array returns the array the encoding writes, as presented.
func (e *Encoding) Array() *Array { return e.a }

// Chunk returns the encoder of one presented chunk (of a sharded array,
// one inner chunk): it is what a batch encoder runs.
func (e *Encoding) Chunk() codec.Encoder { return e.chunk }

// Shard assembles a stored shard of a sharded array from its inner chunks
// as Chunk encoded them, in C order of the shard's inner chunk grid (the
// order of the shard index); a nil entry is an empty inner chunk (the
// empty marker in the index, nothing stored). The chunks are stored in
// index order, then the index (with its codecs, crc32c by default), at
// the start or the end as the metadata says, then the codecs listed after
// sharding_indexed, if any, over the whole shard.
func (e *Encoding) Shard(inner [][]byte) ([]byte, error) {
	s := e.a.shard
	if s == nil {
		return nil, fmt.Errorf("%w: the array is not sharded", ErrInvalid)
	}
	if len(inner) != s.n {
		return nil, fmt.Errorf("%w: %d inner chunks for a shard of %d", ErrInvalid, len(inner), s.n)
	}
	data := 0
	for _, c := range inner {
		data += len(c)
	}
	index := make([]byte, 16*s.n)
	order := binary.ByteOrder(binary.LittleEndian)
	if s.indexBig {
		order = binary.BigEndian
	}
	out := make([]byte, 0, int64(data)+s.indexLen)
	if s.indexStart {
		out = out[:s.indexLen]
	}
	for i, c := range inner {
		off, n := uint64(math.MaxUint64), uint64(math.MaxUint64)
		if c != nil {
			off, n = uint64(int64(len(out))), uint64(len(c))
			out = append(out, c...)
		}
		order.PutUint64(index[16*i:], off)
		order.PutUint64(index[16*i+8:], n)
	}
	ix, err := encodeNew(e.index, index)
	if err != nil {
		return nil, fmt.Errorf("shard index: %w", err)
	}
	if int64(len(ix)) != s.indexLen {
		return nil, fmt.Errorf("%w: the shard index encodes to %d bytes, want %d", codec.ErrConfig, len(ix), s.indexLen)
	}
	if s.indexStart {
		copy(out, ix)
	} else {
		out = append(out, ix...)
	}
	if e.outer == nil {
		return out, nil
	}
	if _, raw := e.outer.(codec.Raw); raw {
		return out, nil
	}
	b, err := encodeNew(e.outer, out)
	if err != nil {
		return nil, fmt.Errorf("shard: %w", err)
	}
	return b, nil
}

// encodeNew encodes src with enc into a new slice, which the caller owns.
func encodeNew(enc codec.Encoder, src []byte) ([]byte, error) {
	return enc.Encode(make([]byte, 0, enc.MaxEncodedLen(len(src))), src)
}
