package zarr

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"

	"github.com/zfuse/zfuse/codec"
)

// A Shard is the sharding_indexed codec of one array: how a stored shard
// splits into inner chunks, and how to decode them.
//
// A sharded array is presented unsharded: its presented chunks are the
// inner chunks (Array.Chunks is the inner chunk shape, mapped back through
// any transpose listed before the sharding codec). To read the presented
// chunk at coords:
//
//	key, inner, sharded := a.StoredKey(coords) // sharded false: DecodeChunk(read(key))
//	if a.WholeShard() {                         // bytes→bytes codecs after the sharding codec
//		return a.DecodeFromShard(dst, read(key), coords)
//	}
//	sh := a.Shard()
//	off, n := sh.IndexRange(size(key))
//	ix, err := sh.ParseIndex(readRange(key, off, n), size(key)) // cache ix per key
//	off, n, err = ix.Entry(inner)                              // fs.ErrNotExist: absent
//	return a.DecodeChunk(dst, readRange(key, off, n))
//
// Nested sharding (sharding_indexed among the inner codecs) is decoded
// whole, inside the inner chunk: the presented chunks are the outermost
// inner chunks.
//
// A Shard is also a codec.Decoder for a whole shard (index and all inner
// chunks, empty ones filled with the fill value), which is how nested shards
// and arrays that cannot be presented unsharded are decoded. It is immutable
// and safe for concurrent use.
type Shard struct {
	shape      []int           // decoded shard shape, in the sharding codec's axes
	inner      []int           // inner chunk shape, same axes
	cps        []int           // inner chunks per shard along each axis
	n          int             // inner chunks per shard
	itemSize   int             // bytes per element
	fill       []byte          // one element for empty inner chunks; nil: zeros
	innerLen   int             // decoded bytes of one inner chunk
	dec        codec.Decoder   // one inner chunk → C order of inner, stored byte order
	first      codec.Config    // the inner codec that decodes first (Array.Compressor); nil when none
	indexLen   int64           // encoded index bytes
	indexStart bool            // index_location "start"
	indexBig   bool            // the index's bytes codec is big-endian
	indexDec   []codec.Decoder // the index's bytes→bytes codecs, decode order
	desc       string
}

var _ codec.Decoder = (*Shard)(nil)

// maxInner bounds the inner chunks of one shard (the index is 16 bytes each).
const maxInner = 1 << 26

// newShard builds the sharding codec for shards of the given decoded shape
// (in the codec's axes) and item size.
func newShard(conf json.RawMessage, shape []int, itemSize int, fill []byte, endian string, depth int) (*Shard, error) {
	var c struct {
		ChunkShape    []int             `json:"chunk_shape"`
		Codecs        []json.RawMessage `json:"codecs"`
		IndexCodecs   []json.RawMessage `json:"index_codecs"`
		IndexLocation *string           `json:"index_location"`
	}
	if err := json.Unmarshal(conf, &c); err != nil {
		return nil, fmt.Errorf("%w: sharding_indexed configuration: %v", ErrInvalid, err)
	}
	if len(c.ChunkShape) != len(shape) {
		return nil, fmt.Errorf("%w: sharding chunk_shape %v for shards of shape %v", ErrInvalid, c.ChunkShape, shape)
	}
	s := &Shard{shape: shape, inner: c.ChunkShape, cps: make([]int, len(shape)), n: 1, itemSize: itemSize, fill: fill}
	s.innerLen = itemSize
	for i, d := range c.ChunkShape {
		if d <= 0 || shape[i]%d != 0 {
			return nil, fmt.Errorf("%w: sharding chunk_shape %v does not divide the shard shape %v", ErrInvalid, c.ChunkShape, shape)
		}
		s.cps[i] = shape[i] / d
		s.n *= s.cps[i]
		if s.n > maxInner {
			return nil, fmt.Errorf("%w: more than %d inner chunks per shard", ErrInvalid, maxInner)
		}
		s.innerLen *= d
	}
	if s.innerLen > maxChunkLen {
		return nil, fmt.Errorf("%w: inner chunk of %v × %d bytes exceeds 2 GiB", ErrInvalid, c.ChunkShape, itemSize)
	}
	switch {
	case c.IndexLocation == nil || *c.IndexLocation == "end":
	case *c.IndexLocation == "start":
		s.indexStart = true
	default:
		return nil, fmt.Errorf("%w: index_location %q", ErrInvalid, *c.IndexLocation)
	}
	in, err := buildPipe(c.Codecs, c.ChunkShape, itemSize, fill, endian, depth)
	if err != nil {
		return nil, err
	}
	s.dec, s.first = in.dec, in.first
	if err := s.buildIndex(c.IndexCodecs); err != nil {
		return nil, err
	}
	loc := "end"
	if s.indexStart {
		loc = "start"
	}
	s.desc = fmt.Sprintf("sharding_indexed(chunk_shape=%v index=%s) [%s]", c.ChunkShape, loc, in.desc)
	return s, nil
}

// buildIndex reads index_codecs: one bytes codec, then fixed-size
// bytes→bytes codecs (crc32c). Absent means zarr-python's default,
// [bytes little, crc32c].
func (s *Shard) buildIndex(list []json.RawMessage) error {
	if list == nil {
		list = []json.RawMessage{json.RawMessage(`{"name":"bytes","configuration":{"endian":"little"}}`), json.RawMessage(`"crc32c"`)}
	}
	n := int64(16 * s.n)
	seenBytes := false
	var bb []codec.Decoder
	for _, raw := range list {
		e, err := parseExtension(raw)
		if err != nil {
			return fmt.Errorf("index codec: %w", err)
		}
		switch k := codec.KindOfV3(e.Name); {
		case (e.Name == "bytes" || e.Name == "endian") && !seenBytes:
			seenBytes = true
			endian, err := findEndian([]json.RawMessage{raw}, 0)
			if err != nil {
				return err
			}
			s.indexBig = endian == "big"
		case k == codec.BytesToBytes && seenBytes:
			cfg, err := codec.V3Config(e.Name, e.Config, "")
			if err != nil {
				return err
			}
			d, err := codec.NewConfig(cfg)
			if err != nil {
				return err
			}
			sz, ok := d.(codec.EncodedSizer)
			if !ok {
				return fmt.Errorf("%w: index codec %q has no fixed size", codec.ErrConfig, e.Name)
			}
			enc, err := sz.EncodedLen(int(n))
			if err != nil {
				return err
			}
			bb = append([]codec.Decoder{d}, bb...) // decode order
			n = int64(enc)
		case k == codec.ArrayToArray && !seenBytes:
			return fmt.Errorf("%w: index codec %q not supported", codec.ErrUnknownCodec, e.Name)
		default:
			return fmt.Errorf("%w: index codec %q (%v) out of order", ErrInvalid, e.Name, k)
		}
	}
	if !seenBytes {
		return fmt.Errorf("%w: index_codecs has no bytes codec", ErrInvalid)
	}
	s.indexLen, s.indexDec = n, bb
	return nil
}

// InnerChunks returns the number of inner chunks per shard (index entries).
func (s *Shard) InnerChunks() int { return s.n }

// IndexLen returns the encoded size of the shard index in bytes.
func (s *Shard) IndexLen() int64 { return s.indexLen }

// IndexRange returns where the index lies in a stored shard of shardSize
// bytes (after any bytes→bytes codecs listed after the sharding codec are
// undone). A shard shorter than the index gives a range that ParseIndex
// rejects.
func (s *Shard) IndexRange(shardSize int64) (off, n int64) {
	if shardSize < s.indexLen {
		return 0, max(shardSize, 0)
	}
	if s.indexStart {
		return 0, s.indexLen
	}
	return shardSize - s.indexLen, s.indexLen
}

// An Index is a parsed shard index: (offset, nbytes) per inner chunk, in C
// order of the inner chunk grid of the shard. It is immutable and safe for
// concurrent use.
type Index struct {
	e          []uint64 // offset, nbytes pairs
	size       int64    // shard bytes
	start, end int64    // data may lie in [start, end)
}

// ParseIndex decodes the index bytes b (the range IndexRange names) of a
// shard of shardSize bytes, verifying the index checksum (an error wrapping
// codec.ErrChecksum on mismatch). Entries are checked one at a time by
// Entry, so one corrupt entry affects only its own chunk.
func (s *Shard) ParseIndex(b []byte, shardSize int64) (*Index, error) {
	if int64(len(b)) != s.indexLen || shardSize < s.indexLen {
		return nil, fmt.Errorf("%w: shard of %d bytes, index of %d bytes, want %d", codec.ErrCorrupt, shardSize, len(b), s.indexLen)
	}
	in, err := codec.Chain(s.indexDec...).Decode(make([]byte, 0, 16*s.n), b)
	if err != nil {
		return nil, fmt.Errorf("shard index: %w", err)
	}
	if len(in) != 16*s.n {
		return nil, fmt.Errorf("%w: shard index decodes to %d bytes, want %d", codec.ErrCorrupt, len(in), 16*s.n)
	}
	ix := &Index{e: make([]uint64, 2*s.n), size: shardSize, start: 0, end: shardSize}
	order := binary.ByteOrder(binary.LittleEndian)
	if s.indexBig {
		order = binary.BigEndian
	}
	for i := range ix.e {
		ix.e[i] = order.Uint64(in[8*i:])
	}
	if s.indexStart {
		ix.start = s.indexLen
	} else {
		ix.end = shardSize - s.indexLen
	}
	return ix, nil
}

// Len returns the number of entries.
func (ix *Index) Len() int { return len(ix.e) / 2 }

// Entry returns the byte range of inner chunk i in the shard. An empty
// entry (the 2^64-1 marker) gives an error wrapping fs.ErrNotExist: the
// chunk is absent and reads as the fill value. An entry that does not lie
// inside the shard's data bytes gives one wrapping codec.ErrCorrupt.
func (ix *Index) Entry(i int) (off, n int64, err error) {
	if i < 0 || i >= ix.Len() {
		return 0, 0, fmt.Errorf("%w: inner chunk %d of %d", ErrInvalid, i, ix.Len())
	}
	o, l := ix.e[2*i], ix.e[2*i+1]
	if o == math.MaxUint64 && l == math.MaxUint64 {
		return 0, 0, fmt.Errorf("inner chunk %d: %w", i, fs.ErrNotExist)
	}
	if o > uint64(ix.end) || l > uint64(ix.end)-o || int64(o) < ix.start {
		return 0, 0, fmt.Errorf("%w: inner chunk %d at [%d, +%d) outside the data bytes [%d, %d) of a %d-byte shard",
			codec.ErrCorrupt, i, o, l, ix.start, ix.end, ix.size)
	}
	return int64(o), int64(l), nil
}

// Decode decodes a whole shard (without the bytes→bytes codecs after the
// sharding codec) into the shard array in C order of its shape, filling
// empty inner chunks with the fill value.
func (s *Shard) Decode(dst, src []byte) ([]byte, error) {
	total := prod(s.shape) * s.itemSize
	if total > cap(dst)-len(dst) {
		return dst, codec.ErrTooLarge
	}
	out := dst[len(dst) : len(dst)+total]
	fillBytes(out, s.fill)
	size := int64(len(src))
	off, n := s.IndexRange(size)
	ix, err := s.ParseIndex(src[off:off+n], size)
	if err != nil {
		return dst, err
	}
	buf := make([]byte, 0, s.innerLen)
	for i := range s.n {
		o, l, err := ix.Entry(i)
		if isNotExist(err) {
			continue
		}
		if err != nil {
			return dst, err
		}
		chunk, err := codec.DecodeFull(s.dec, buf, src[o:o+l])
		if err != nil {
			return dst, fmt.Errorf("inner chunk %d: %w", i, err)
		}
		s.place(out, chunk, i)
	}
	return dst[:len(dst)+total], nil
}

// place copies inner chunk i (C order of s.inner) into the shard array out
// (C order of s.shape).
func (s *Shard) place(out, chunk []byte, i int) {
	rank := len(s.shape)
	if rank == 0 {
		copy(out, chunk)
		return
	}
	origin := Unravel(int64(i), s.cps)
	stride := make([]int, rank) // bytes between neighbours along each axis of out
	st := s.itemSize
	for d := rank - 1; d >= 0; d-- {
		stride[d] = st
		st *= s.shape[d]
	}
	base := 0
	for d := range rank {
		base += origin[d] * s.inner[d] * stride[d]
	}
	row := s.inner[rank-1] * s.itemSize
	idx := make([]int, rank-1)
	for src := 0; src < len(chunk); src += row {
		o := base
		for d, v := range idx {
			o += v * stride[d]
		}
		copy(out[o:o+row], chunk[src:src+row])
		for d := rank - 2; d >= 0; d-- {
			if idx[d]++; idx[d] < s.inner[d] {
				break
			}
			idx[d] = 0
		}
	}
}

// fillBytes fills b with copies of one element (zeros when elem is nil).
func fillBytes(b, elem []byte) {
	if len(elem) == 0 || allZero(elem) {
		clear(b)
		return
	}
	for i := 0; i < len(b); i += copy(b[i:], elem) {
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Shard returns the sharding codec of an array presented unsharded, or nil.
func (a *Array) Shard() *Shard { return a.shard }

// WholeShard reports whether bytes→bytes codecs follow the sharding codec
// (a checksum or compressor over the whole shard): readers must then fetch
// the whole stored shard and use DecodeFromShard (or UnwrapShard first).
func (a *Array) WholeShard() bool { return a.shard != nil && a.unwrap != nil }

// UnwrapShard undoes the bytes→bytes codecs after the sharding codec
// (verifying a whole-shard checksum), giving the shard that IndexRange,
// ParseIndex and Entry address. Without such codecs it returns src.
func (a *Array) UnwrapShard(src []byte) ([]byte, error) {
	if a.unwrap == nil {
		return src, nil
	}
	// The unwrapped size is not known in advance: at most the stored size
	// for checksums; grow for compressors.
	return codec.DecodeBounded(a.unwrap, src, a.shard.EncodedBound(prod(a.shard.shape)*a.shard.itemSize))
}

// DecodeFromShard decodes the presented chunk at coords of a sharded array
// from the whole stored shard that StoredKey names: it undoes the codecs
// after the sharding codec, reads the index, and decodes the one inner
// chunk into dst (capacity ChunkLen). An absent inner chunk gives an error
// wrapping fs.ErrNotExist; a corrupt index or entry one wrapping
// codec.ErrCorrupt or codec.ErrChecksum.
func (a *Array) DecodeFromShard(dst, shard []byte, coords []int) ([]byte, error) {
	if a.shard == nil {
		return nil, fmt.Errorf("%w: array is not presented unsharded", ErrInvalid)
	}
	if _, ok := a.ParseChunkKey(a.ChunkKey(coords)); !ok {
		return nil, &fs.PathError{Op: "decode", Path: a.ChunkKey(coords), Err: fs.ErrNotExist}
	}
	_, inner, _ := a.StoredKey(coords)
	b, err := a.UnwrapShard(shard)
	if err != nil {
		return nil, err
	}
	size := int64(len(b))
	off, n := a.shard.IndexRange(size)
	ix, err := a.shard.ParseIndex(b[off:off+n], size)
	if err != nil {
		return nil, err
	}
	o, l, err := ix.Entry(inner)
	if err != nil {
		return nil, err
	}
	return a.DecodeChunk(dst, b[o:o+l])
}
