package codec

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/pierrec/lz4/v4"
)

func init() { registerEncoder("blosc", newBloscEncoder) }

// bloscEncoder writes c-blosc 1.x buffers as numcodecs 0.11 (c-blosc 1.21)
// writes them (zarr-formats.md §1): the same header and flags, the block
// size compute_blocksize chooses (or Blocksize, enlarged as c-blosc
// enlarges it), blocks split into Typesize streams exactly when c-blosc's
// default split mode splits them, streams that do not compress stored raw,
// and the whole buffer stored raw (memcpyed) when it would not fit in
// nbytes+16, for clevel 0, and below 128 bytes. The compressed streams
// themselves come from Go encoders: lz4 follows liblz4's algorithm (see
// lz4Compress), blosclz c-blosc's, so their sizes land close to c-blosc's;
// zstd, zlib and lz4hc use klauspost/compress and pierrec/lz4.
//
// A bloscEncoder is immutable and safe for concurrent use.
type bloscEncoder struct {
	Cname     string // "blosclz", "lz4", "lz4hc", "zlib" or "zstd"
	Clevel    int    // 0 (stored) to 9
	Shuffle   int    // BloscNoShuffle, BloscByteShuffle or BloscBitShuffle
	Typesize  int    // element size; over 255 is treated as 1, as c-blosc does
	Blocksize int    // 0: chosen as c-blosc chooses it
}

var _ Encoder = (*bloscEncoder)(nil)

// bloscFormats are the formats (the header's flag bits 5-7) each cname
// encodes writes.
var bloscFormats = map[string]int{
	"blosclz": bloscFormatBloscLZ,
	"lz4":     bloscFormatLZ4,
	"lz4hc":   bloscFormatLZ4,
	"zlib":    bloscFormatZlib,
	"zstd":    bloscFormatZstd,
}

// newBloscEncoder reads numcodecs' configuration: cname (default lz4),
// clevel (5), shuffle (1; -1 means bit shuffle for 1-byte items, byte
// shuffle otherwise) and blocksize (0). typesize, when the configuration
// has one (Zarr v3), wins over itemSize.
func newBloscEncoder(c Config, itemSize int) (Encoder, error) {
	cname, err := c.String("cname", "lz4")
	if err != nil {
		return nil, err
	}
	clevel, err := c.Int("clevel", 5)
	if err != nil {
		return nil, err
	}
	shuffle := 1
	if name, err := c.String("shuffle", ""); err == nil && name != "" { // Zarr v3 spells it
		n, ok := bloscShuffles[name]
		if !ok {
			return nil, fmt.Errorf("%w: blosc shuffle %q", ErrConfig, name)
		}
		shuffle = n
	} else if shuffle, err = c.Int("shuffle", 1); err != nil {
		return nil, err
	}
	blocksize, err := c.Int("blocksize", 0)
	if err != nil {
		return nil, err
	}
	typesize, err := c.Int("typesize", itemSize)
	if err != nil {
		return nil, err
	}
	if shuffle == -1 { // numcodecs AUTOSHUFFLE
		shuffle = BloscByteShuffle
		if typesize == 1 {
			shuffle = BloscBitShuffle
		}
	}
	e := &bloscEncoder{Cname: cname, Clevel: clevel, Shuffle: shuffle, Typesize: typesize, Blocksize: blocksize}
	return e, e.check()
}

func (e *bloscEncoder) check() error {
	switch _, ok := bloscFormats[e.Cname]; {
	case !ok:
		return fmt.Errorf("%w: blosc cname %q (zfuse encodes blosclz, lz4, lz4hc, zlib and zstd)", ErrConfig, e.Cname)
	case e.Clevel < 0 || e.Clevel > 9:
		return fmt.Errorf("%w: blosc clevel %d", ErrConfig, e.Clevel)
	case e.Shuffle < 0 || e.Shuffle > 2:
		return fmt.Errorf("%w: blosc shuffle %d", ErrConfig, e.Shuffle)
	case e.Typesize < 1:
		return fmt.Errorf("%w: blosc typesize %d", ErrConfig, e.Typesize)
	case e.Blocksize < 0:
		return fmt.Errorf("%w: blosc blocksize %d", ErrConfig, e.Blocksize)
	}
	return nil
}

// MaxEncodedLen is n+16: Blosc stores what does not compress raw.
func (e *bloscEncoder) MaxEncodedLen(n int) int { return n + bloscHeaderLen }

// bloscMaxBuffer is BLOSC_MAX_BUFFERSIZE: c-blosc refuses larger input.
const bloscMaxBuffer = 1<<31 - 1 - bloscHeaderLen

// typesize is the typesize c-blosc works with.
func (e *bloscEncoder) typesize() int {
	if e.Typesize > 255 {
		return 1 // BLOSC_MAX_TYPESIZE: a stream of bytes
	}
	return e.Typesize
}

// splits reports whether c-blosc's default split mode
// (BLOSC_FORWARD_COMPAT_SPLIT) splits blocks of this size.
func (e *bloscEncoder) splits(blocksize int) bool {
	ts := e.typesize()
	return e.Cname != "zstd" && ts <= maxStreams && blocksize/ts >= bloscMinSplit
}

// BlockSize returns the block size c-blosc 1.x's compute_blocksize
// chooses for nbytes bytes.
func (e *bloscEncoder) BlockSize(nbytes int) int {
	ts := e.typesize()
	if nbytes < ts {
		return 1
	}
	const l1 = 32 << 10
	hcr := e.Cname == "lz4hc" || e.Cname == "zlib" || e.Cname == "zstd"
	bs := nbytes
	switch {
	case e.Blocksize > 0:
		bs = min(max(e.Blocksize, bloscMinSplit), bloscMaxBuffer)
	case nbytes >= l1:
		bs = l1
		if hcr {
			bs *= 2
		}
		switch e.Clevel {
		case 0:
			bs /= 4
		case 1:
			bs /= 2
		case 3:
			bs *= 2
		case 4, 5:
			bs *= 4
		case 6, 7, 8:
			bs *= 8
		case 9:
			bs *= 8
			if hcr {
				bs *= 2
			}
		}
	}
	if e.Clevel > 0 && e.splits(bs) {
		bs = min(bs, 1<<18) * ts
		bs = min(max(bs, 1<<16), 1<<20)
	}
	bs = min(bs, nbytes)
	if bs > ts {
		bs = bs / ts * ts
	}
	return bs
}

// bloscEncodeScratch holds one block's shuffled bytes.
type bloscEncodeScratch struct{ buf []byte }

var bloscEncodeScratches = sync.Pool{New: func() any { return new(bloscEncodeScratch) }}

// Encode appends the Blosc buffer of src to dst, within cap(dst). The
// result does not depend on the room given: with less than
// MaxEncodedLen, it is made in scratch space and copied if it fits.
func (e *bloscEncoder) Encode(dst, src []byte) ([]byte, error) {
	if err := e.check(); err != nil {
		return dst, err
	}
	if len(src) > bloscMaxBuffer {
		return dst, fmt.Errorf("%w: blosc: %d bytes is more than c-blosc takes", ErrConfig, len(src))
	}
	return encodeWithin(dst, src, e.MaxEncodedLen(len(src)), func(d []byte) ([]byte, error) { return e.encode(d, src) })
}

// encode is Encode with MaxEncodedLen bytes of room in dst.
func (e *bloscEncoder) encode(dst, src []byte) ([]byte, error) {
	nbytes := len(src)
	ts := e.typesize()
	bs := e.BlockSize(nbytes)
	flags := byte(bloscFormats[e.Cname] << 5)
	switch e.Shuffle {
	case BloscByteShuffle:
		flags |= bloscShuffle
	case BloscBitShuffle:
		flags |= bloscBitshuf
	}
	if !e.splits(bs) {
		flags |= bloscDontSplit
	}
	// numcodecs gives c-blosc nbytes+16 bytes of output; what does not
	// fit in that is stored raw.
	maxBytes := nbytes + bloscHeaderLen
	out, err := room(dst, maxBytes)
	if err != nil {
		return dst, err
	}
	h := out[:bloscHeaderLen]
	h[0], h[1], h[3] = 2, 1, byte(ts)
	binary.LittleEndian.PutUint32(h[4:], uint32(nbytes))
	binary.LittleEndian.PutUint32(h[8:], uint32(bs))

	n := 0
	if e.Clevel > 0 && nbytes >= bloscMinSplit {
		n = e.blocks(out, src, bs, flags, ts)
	}
	if n == 0 { // memcpyed
		flags |= bloscMemcpyed
		n = bloscHeaderLen + copy(out[bloscHeaderLen:], src)
	}
	h[2] = flags
	binary.LittleEndian.PutUint32(h[12:], uint32(n))
	return dst[:len(dst)+n], nil
}

// blocks writes the block starts and blocks of src after the header in
// out and returns the buffer's length, or 0 when it does not fit in out
// (then it is stored raw).
func (e *bloscEncoder) blocks(out, src []byte, bs int, flags byte, ts int) int {
	nblocks := (len(src) + bs - 1) / bs
	pos := bloscHeaderLen + 4*nblocks
	if pos > len(out) {
		return 0
	}
	var scratch *bloscEncodeScratch
	if e.Shuffle != BloscNoShuffle {
		scratch = bloscEncodeScratches.Get().(*bloscEncodeScratch)
		defer bloscEncodeScratches.Put(scratch)
		if cap(scratch.buf) < bs {
			scratch.buf = make([]byte, bs)
		}
	}
	for j := range nblocks {
		binary.LittleEndian.PutUint32(out[bloscHeaderLen+4*j:], uint32(pos))
		block := src[j*bs : min((j+1)*bs, len(src))]
		leftover := len(block) < bs
		switch {
		case e.Shuffle == BloscByteShuffle && ts > 1:
			t := scratch.buf[:len(block)]
			byteShuffle(t, block, ts)
			block = t
		case e.Shuffle == BloscBitShuffle && len(block) >= ts:
			t := scratch.buf[:len(block)]
			bitShuffle(t, block, ts)
			block = t
		}
		nsplits := 1
		if flags&bloscDontSplit == 0 && !leftover {
			nsplits = ts
		}
		neblock := len(block) / nsplits
		for s := range nsplits {
			pos += 4
			if pos > len(out) {
				return 0
			}
			maxOut := min(neblock, len(out)-pos)
			if maxOut <= 0 {
				return 0
			}
			part := block[s*neblock : (s+1)*neblock]
			c := e.compress(out[pos:pos+maxOut], part, flags&bloscDontSplit == 0)
			if c == 0 || c == neblock {
				// Did not compress: store it raw, if it fits.
				if pos+neblock > len(out) {
					return 0
				}
				c = copy(out[pos:], part)
			}
			binary.LittleEndian.PutUint32(out[pos-4:], uint32(c))
			pos += c
		}
	}
	return pos
}

// compress writes one stream of src into d and returns its length, or 0
// when it does not fit in len(d). split says whether the buffer's blocks
// are split (blosclz tunes itself to it).
func (e *bloscEncoder) compress(d, src []byte, split bool) int {
	switch e.Cname {
	case "blosclz":
		return blosclzCompress(d, src, e.Clevel, split)
	case "lz4":
		return lz4Compress(d, src, 10-e.Clevel) // c-blosc's acceleration for clevel
	case "lz4hc":
		// pierrec gives up early when dst is smaller than the LZ4 bound,
		// which a Blosc stream's room always is.
		return fitInto(d, src, lz4Bound(len(src)), func(b []byte) ([]byte, error) {
			n, err := lz4.CompressBlockHC(src, b[len(b):cap(b)], lz4.CompressionLevel(1<<(8+e.Clevel)), nil, nil)
			if n == 0 && err == nil {
				n = cap(b) // incompressible: more than fits
			}
			return b[:len(b)+n], err
		})
	case "zlib":
		return fitInto(d, src, deflateBound(len(src)), func(b []byte) ([]byte, error) { return zlibEncode(b, src, e.Clevel) })
	case "zstd":
		return fitInto(d, src, zstdEncoder{}.MaxEncodedLen(len(src)), func(b []byte) ([]byte, error) {
			return zstdEncode(b, src, bloscZstdLevel(e.Clevel), false)
		})
	}
	return 0
}

// bloscZstdLevel is c-blosc's mapping of clevel to a zstd level
// (zstd_wrap_compress): 2*clevel-1, and zstd's maximum, 22, for 9.
func bloscZstdLevel(clevel int) int {
	if clevel >= 9 {
		return 22
	}
	return 2*clevel - 1
}

// fitInto runs enc, an encoder of src that appends to its argument and
// never writes more than bound bytes, so that the result lands in d, and
// returns its length, or 0 when it does not fit in len(d), as C
// compressors given len(d) bytes of output return 0.
func fitInto(d, src []byte, bound int, enc func([]byte) ([]byte, error)) int {
	out, err := encodeWithin(d[:0:len(d)], src, bound, enc)
	if err != nil {
		return 0
	}
	return len(out)
}
