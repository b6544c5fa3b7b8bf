package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/pierrec/lz4/v4"
)

func init() { register("blosc", newBlosc) }

// Blosc decodes c-blosc 1.x buffers: numcodecs "blosc" and Zarr v3 "blosc"
// (zarr-formats.md §1). The 16-byte header says everything needed to decode
// (compressor, shuffle, typesize, block size), so the configuration is not
// consulted. Bytes after the header's cbytes are ignored.
//
// Blosc is stateless and safe for concurrent use; scratch block buffers come
// from a shared pool, so steady-state decoding does not allocate (except for
// zlib splits, whose reader allocates).
type Blosc struct{}

var _ Decoder = Blosc{}

func newBlosc(Config) (Decoder, error) { return Blosc{}, nil }

// Header flag bits (zarr-formats.md §1.2).
const (
	bloscShuffle   = 0x01
	bloscMemcpyed  = 0x02
	bloscBitshuf   = 0x04
	bloscReserved  = 0x08
	bloscDontSplit = 0x10

	bloscHeaderLen = 16
	bloscMinSplit  = 128 // MIN_BUFFERSIZE: fewer bytes per stream are never split
)

// Compressor formats, (flags>>5)&7.
const (
	bloscFormatBloscLZ = iota
	bloscFormatLZ4     // lz4 and lz4hc
	bloscFormatSnappy
	bloscFormatZlib
	bloscFormatZstd
)

var bloscFormatNames = [...]string{"blosclz", "lz4", "snappy", "zlib", "zstd"}

// Shuffle modes returned by BloscHeader.Shuffle.
const (
	BloscNoShuffle   = 0
	BloscByteShuffle = 1
	BloscBitShuffle  = 2
)

// bloscShuffles are the shuffle modes by the names Zarr v3 gives them.
var bloscShuffles = map[string]int{"noshuffle": BloscNoShuffle, "shuffle": BloscByteShuffle, "bitshuffle": BloscBitShuffle}

// A BloscHeader is the parsed 16-byte header of a Blosc buffer.
type BloscHeader struct {
	Version   uint8 // always 2
	VersionLZ uint8 // always 1
	Flags     uint8
	Typesize  int // 1..255
	Nbytes    int // decoded size
	Blocksize int // decoded bytes per block (the last block may be shorter)
	Cbytes    int // encoded size including the header
}

// ParseBlosc parses and checks the header of the Blosc buffer src: version,
// reserved bits, typesize, sizes, and that src holds Cbytes bytes. Errors
// match ErrCorrupt.
func ParseBlosc(src []byte) (BloscHeader, error) {
	if len(src) < bloscHeaderLen {
		return BloscHeader{}, fmt.Errorf("%w: blosc: %d bytes, shorter than the header", ErrCorrupt, len(src))
	}
	h := BloscHeader{
		Version:   src[0],
		VersionLZ: src[1],
		Flags:     src[2],
		Typesize:  int(src[3]),
		Nbytes:    int(int32(binary.LittleEndian.Uint32(src[4:]))),
		Blocksize: int(int32(binary.LittleEndian.Uint32(src[8:]))),
		Cbytes:    int(int32(binary.LittleEndian.Uint32(src[12:]))),
	}
	var why string
	switch {
	case h.Version != 2:
		why = fmt.Sprintf("format version %d, want 2", h.Version)
	case h.Flags&bloscReserved != 0:
		why = "reserved flag bit set"
	case h.Typesize == 0:
		why = "typesize 0"
	case h.Nbytes < 0 || h.Cbytes < bloscHeaderLen:
		why = fmt.Sprintf("nbytes %d, cbytes %d", h.Nbytes, h.Cbytes)
	case h.Cbytes > len(src):
		why = fmt.Sprintf("truncated: cbytes %d, have %d bytes", h.Cbytes, len(src))
	case h.Nbytes == 0:
		// Empty output; nothing else matters (c-blosc returns at once).
	case h.Flags&bloscMemcpyed != 0:
		if h.Cbytes != h.Nbytes+bloscHeaderLen {
			why = fmt.Sprintf("memcpyed with cbytes %d != nbytes %d + 16", h.Cbytes, h.Nbytes)
		}
	case h.VersionLZ != 1:
		why = fmt.Sprintf("codec format version %d, want 1", h.VersionLZ)
	case h.format() > bloscFormatZstd:
		why = fmt.Sprintf("unknown compressor format %d", h.format())
	case h.Blocksize <= 0:
		why = fmt.Sprintf("blocksize %d", h.Blocksize)
	case h.NBlocks() > (h.Cbytes-bloscHeaderLen)/4:
		why = fmt.Sprintf("%d blocks do not fit in cbytes %d", h.NBlocks(), h.Cbytes)
	}
	if why != "" {
		return h, fmt.Errorf("%w: blosc: %s", ErrCorrupt, why)
	}
	return h, nil
}

func (h BloscHeader) format() int { return int(h.Flags>>5) & 7 }

// Memcpyed reports whether the payload is stored raw after the header.
func (h BloscHeader) Memcpyed() bool { return h.Flags&bloscMemcpyed != 0 }

// Compressor names the internal codec: "blosclz", "lz4" (also lz4hc),
// "snappy", "zlib" or "zstd" ("" for an unknown format).
func (h BloscHeader) Compressor() string {
	if f := h.format(); f < len(bloscFormatNames) {
		return bloscFormatNames[f]
	}
	return ""
}

// Shuffle returns the shuffle applied to each block: BloscByteShuffle (only
// with Typesize > 1), else BloscBitShuffle, else BloscNoShuffle. A bit-
// shuffled block shorter than Typesize is stored unshuffled, and one whose
// element count is not a multiple of 8 is too (see bitUnshuffle).
func (h BloscHeader) Shuffle() int {
	switch {
	case h.Memcpyed():
		return BloscNoShuffle
	case h.Flags&bloscShuffle != 0 && h.Typesize > 1:
		return BloscByteShuffle
	case h.Flags&bloscBitshuf != 0:
		return BloscBitShuffle
	}
	return BloscNoShuffle
}

// NBlocks returns the number of blocks (0 for an empty or memcpyed buffer).
func (h BloscHeader) NBlocks() int {
	if h.Nbytes == 0 || h.Memcpyed() || h.Blocksize <= 0 {
		return 0
	}
	n := h.Nbytes / h.Blocksize
	if h.Nbytes%h.Blocksize != 0 {
		n++
	}
	return n
}

// Block returns the decoded size of block j and how many streams (splits)
// it is stored as (zarr-formats.md §1.4: split into Typesize streams iff the
// dont_split flag is clear, Typesize <= 16, each stream would hold at least
// 128 bytes, and j is not a short last block).
func (h BloscHeader) Block(j int) (size, splits int) {
	size = h.Blocksize
	leftover := j == h.NBlocks()-1 && h.Nbytes%h.Blocksize != 0
	if leftover {
		size = h.Nbytes % h.Blocksize
	}
	splits = 1
	if h.Flags&bloscDontSplit == 0 && h.Typesize <= maxStreams && size/h.Typesize >= bloscMinSplit && !leftover {
		splits = h.Typesize
	}
	return size, splits
}

// A BloscStream is one compressed stream of a Blosc buffer, as a decoder
// that works split by split (a GPU) needs it. Decoded streams laid out at
// DstOff, one after another, form the block-ordered output *before*
// unshuffling; each block (Block(j) bytes at j*Blocksize) is then
// unshuffled per BloscHeader.Shuffle.
type BloscStream struct {
	Block, Split   int
	SrcOff, SrcLen int  // the compressed bytes, src[SrcOff:SrcOff+SrcLen]
	DstOff, DstLen int  // where the decoded bytes go
	Stored         bool // SrcLen == DstLen: the bytes are stored raw, copy them
}

// BloscStreams lists the streams of the Blosc buffer src in order, checking
// every offset. A memcpyed buffer is one stored stream; an empty one has
// none.
func BloscStreams(src []byte) ([]BloscStream, error) {
	h, err := ParseBlosc(src)
	if err != nil {
		return nil, err
	}
	src = src[:h.Cbytes]
	if h.Nbytes == 0 {
		return nil, nil
	}
	if h.Memcpyed() {
		return []BloscStream{{SrcOff: bloscHeaderLen, SrcLen: h.Nbytes, DstLen: h.Nbytes, Stored: true}}, nil
	}
	var out []BloscStream
	for j := range h.NBlocks() {
		pos, bsize, nsplits, err := bloscBlockStart(src, h, j)
		if err != nil {
			return nil, err
		}
		neblock := bsize / nsplits
		for s := range nsplits {
			start, csize, err := bloscSplitAt(src, pos, j, s)
			if err != nil {
				return nil, err
			}
			out = append(out, BloscStream{
				Block: j, Split: s,
				SrcOff: start, SrcLen: csize,
				DstOff: j*h.Blocksize + s*neblock, DstLen: neblock,
				Stored: csize == neblock,
			})
			pos = start + csize
		}
	}
	return out, nil
}

// bloscBlockStart returns where block j's first split starts in src, the
// block's decoded size and its number of splits.
func bloscBlockStart(src []byte, h BloscHeader, j int) (pos, bsize, nsplits int, err error) {
	bsize, nsplits = h.Block(j)
	if bsize%nsplits != 0 {
		// Encoders round blocksize to a multiple of typesize; c-blosc would
		// leave the remainder uninitialised.
		return 0, 0, 0, fmt.Errorf("%w: blosc: block %d of %d bytes in %d splits", ErrCorrupt, j, bsize, nsplits)
	}
	dataStart := bloscHeaderLen + 4*h.NBlocks()
	pos = int(int32(binary.LittleEndian.Uint32(src[bloscHeaderLen+4*j:])))
	if pos < dataStart || pos >= len(src) {
		return 0, 0, 0, fmt.Errorf("%w: blosc: block %d starts at %d, outside [%d, %d)", ErrCorrupt, j, pos, dataStart, len(src))
	}
	return pos, bsize, nsplits, nil
}

// bloscSplitAt reads the csize prefix of the split at pos and returns where
// its bytes start and how many there are, checked against len(src).
func bloscSplitAt(src []byte, pos, j, s int) (start, csize int, err error) {
	if pos < 0 || len(src)-pos < 4 {
		return 0, 0, fmt.Errorf("%w: blosc: block %d split %d: size prefix at %d past the end", ErrCorrupt, j, s, pos)
	}
	csize = int(int32(binary.LittleEndian.Uint32(src[pos:])))
	start = pos + 4
	if csize < 0 || csize > len(src)-start {
		return 0, 0, fmt.Errorf("%w: blosc: block %d split %d: %d bytes at %d past the end (%d)", ErrCorrupt, j, s, csize, start, len(src))
	}
	return start, csize, nil
}

// bloscSlack is room the scratch buffer keeps past one block: zstd's
// decoder copies in 32-byte strides when the output has that much to
// spare, and falls back to slower exact copies when it has not.
const bloscSlack = 64

// bloscScratch holds one block's decompressed, still shuffled bytes.
type bloscScratch struct{ buf []byte }

var bloscScratchPool = sync.Pool{New: func() any { return new(bloscScratch) }}

// Decode appends the decoded buffer to dst without growing it.
func (Blosc) Decode(dst, src []byte) ([]byte, error) {
	h, err := ParseBlosc(src)
	if err != nil {
		return dst, err
	}
	if h.Nbytes > cap(dst)-len(dst) {
		return dst, ErrTooLarge
	}
	out := dst[len(dst) : len(dst)+h.Nbytes : len(dst)+h.Nbytes]
	src = src[:h.Cbytes]
	if h.Memcpyed() {
		copyCached(out, src[bloscHeaderLen:])
		return dst[:len(dst)+h.Nbytes], nil
	}
	if h.Nbytes == 0 {
		return dst, nil
	}

	var scratch *bloscScratch
	if h.Shuffle() != BloscNoShuffle {
		scratch = bloscScratchPool.Get().(*bloscScratch)
		defer bloscScratchPool.Put(scratch)
		if n := min(h.Blocksize, h.Nbytes) + bloscSlack; cap(scratch.buf) < n {
			scratch.buf = make([]byte, n)
		}
	}
	for j := range h.NBlocks() {
		var tmp []byte
		if scratch != nil {
			tmp = scratch.buf
		}
		if err := bloscBlock(out, src, h, j, tmp); err != nil {
			return dst, err
		}
	}
	return dst[:len(dst)+h.Nbytes], nil
}

// bloscBlock decodes block j of src into its place in out. tmp (at least
// one block long) is scratch space for shuffled blocks; nil when the buffer
// is not shuffled.
func bloscBlock(out, src []byte, h BloscHeader, j int, tmp []byte) error {
	pos, bsize, nsplits, err := bloscBlockStart(src, h, j)
	if err != nil {
		return err
	}
	neblock := bsize / nsplits
	block := out[j*h.Blocksize : j*h.Blocksize+bsize]
	shuffle := h.Shuffle()
	if shuffle == BloscBitShuffle && bsize < h.Typesize {
		shuffle = BloscNoShuffle
	}
	if shuffle == BloscNoShuffle {
		// Decompress straight into place.
		for s := range nsplits {
			start, csize, err := bloscSplitAt(src, pos, j, s)
			if err != nil {
				return err
			}
			if err := bloscSplit(h.format(), block[s*neblock:(s+1)*neblock], src[start:start+csize], j, s); err != nil {
				return err
			}
			pos = start + csize
		}
		return nil
	}

	// Shuffled: gather the streams, reading stored ones where they lie
	// when the unshuffle takes separate streams (byte shuffle with splits).
	inPlace := shuffle == BloscByteShuffle && nsplits == h.Typesize
	var streams [maxStreams][]byte
	tmp = tmp[:bsize]
	for s := range nsplits {
		start, csize, err := bloscSplitAt(src, pos, j, s)
		if err != nil {
			return err
		}
		part := src[start : start+csize]
		pos = start + csize
		switch {
		case csize == neblock && (inPlace || nsplits == 1):
			// Stored raw: read it from src.
		default:
			d := tmp[s*neblock : (s+1)*neblock]
			if err := bloscSplit(h.format(), d, part, j, s); err != nil {
				return err
			}
			part = d
		}
		if inPlace {
			streams[s] = part
		} else if nsplits == 1 {
			tmp = part // the whole block, decoded or stored
		}
	}
	switch {
	case inPlace:
		unshuffleStreams(block, &streams, h.Typesize, neblock)
	case shuffle == BloscByteShuffle:
		byteUnshuffle(block, tmp, h.Typesize)
	default:
		bitUnshuffle(block, tmp, h.Typesize)
	}
	return nil
}

// bloscSplit decodes one split into d, which it must fill exactly. A split
// whose compressed size equals its decoded size is stored raw. The bytes of
// d's capacity past its length may be overwritten (zstd uses them as
// slack); the caller owns them and has not filled them yet.
func bloscSplit(format int, d, src []byte, j, s int) error {
	if len(src) == len(d) {
		copyCached(d, src)
		return nil
	}
	var n int
	var err error
	switch format {
	case bloscFormatBloscLZ:
		n, err = blosclzDecompress(d, src)
	case bloscFormatLZ4:
		n, err = lz4.UncompressBlock(src, d)
		if err != nil {
			err = errLZ4Corrupt
		}
	case bloscFormatSnappy:
		n, err = snappy.DecodedLen(src)
		if err == nil && n == len(d) {
			var got []byte
			got, err = snappy.Decode(d[:0:len(d)], src)
			n = len(got)
		}
	case bloscFormatZlib:
		var got []byte
		got, err = zlibDecode(d[:0:len(d)], src)
		n = len(got)
	case bloscFormatZstd:
		var got []byte
		got, err = zstdDecode(d[:0], src)
		n = len(got)
	}
	switch {
	case errors.Is(err, ErrChecksum):
		return fmt.Errorf("blosc: block %d split %d: %w", j, s, err)
	case err != nil && !errors.Is(err, ErrTooLarge):
		return fmt.Errorf("blosc: block %d split %d (%s): %w", j, s, bloscFormatNames[format], both(ErrCorrupt, err))
	case err != nil || n != len(d):
		return fmt.Errorf("%w: blosc: block %d split %d (%s) decodes to %d bytes or more, want %d",
			ErrCorrupt, j, s, bloscFormatNames[format], n, len(d))
	}
	return nil
}

// copyCached is copy in pieces under 1 MiB: for 1 MiB and more, Go's
// memmove switches to non-temporal stores, which bypass the cache and make
// the just-decoded chunk slower to read (and this copy slower to run).
func copyCached(dst, src []byte) int {
	const piece = 512 << 10
	n := 0
	for n < len(dst) && n < len(src) {
		n += copy(dst[n:min(n+piece, len(dst))], src[n:])
	}
	return n
}
