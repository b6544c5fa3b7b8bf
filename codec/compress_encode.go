package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"sync"

	"compress/gzip"
	"compress/zlib"

	"github.com/klauspost/compress/zstd"
)

// Encoders of the stand-alone compressors: numcodecs "lz4", "zstd",
// "gzip" and "zlib" (and Zarr v3's "zstd" and "gzip", which are the same
// bytes). Each writes what the decoder of the same name reads, and what
// numcodecs 0.11 reads.

func init() {
	registerEncoder("lz4", newLZ4Encoder)
	registerEncoder("zstd", newZstdEncoder)
	registerEncoder("gzip", newLevelEncoder("gzip", 1, gzipEncode, gzipBound))
	registerEncoder("zlib", newLevelEncoder("zlib", 1, zlibEncode, deflateBound))
}

// lz4Encoder writes numcodecs "lz4": the u32le size, then one LZ4 block
// compressed as LZ4_compress_fast does with the given acceleration.
type lz4Encoder struct {
	Acceleration int // numcodecs' default is 1; values below 1 mean 1
}

var _ Encoder = lz4Encoder{}

func newLZ4Encoder(c Config, _ int) (Encoder, error) {
	a, err := c.Int("acceleration", 1)
	return lz4Encoder{Acceleration: a}, err
}

func (lz4Encoder) MaxEncodedLen(n int) int { return 4 + lz4Bound(n) }

func (e lz4Encoder) Encode(dst, src []byte) ([]byte, error) {
	if len(src) > lz4MaxInput {
		return dst, fmt.Errorf("%w: lz4: %d bytes is more than LZ4 takes", ErrConfig, len(src))
	}
	return encodeWithin(dst, src, e.MaxEncodedLen(len(src)), func(d []byte) ([]byte, error) {
		out := d[len(d):cap(d)] // MaxEncodedLen bytes: LZ4 always fits
		n := lz4Compress(out[4:], src, e.Acceleration)
		binary.LittleEndian.PutUint32(out, uint32(len(src)))
		return d[:len(d)+4+n], nil
	})
}

// zstdEncoder writes one zstd frame with the content size (numcodecs 0.11
// needs it), from klauspost/compress at the level nearest Level (zstd's
// 1..22 map to its four speeds), with a content checksum when Checksum is
// set (Zarr v3's "checksum"; numcodecs 0.11 writes none).
type zstdEncoder struct {
	Level    int
	Checksum bool
}

var _ Encoder = zstdEncoder{}

func newZstdEncoder(c Config, _ int) (Encoder, error) {
	level, err := c.Int("level", 1) // numcodecs' default
	if err != nil {
		return nil, err
	}
	var sum bool
	if c.Has("checksum") {
		if err := jsonBool(c, "checksum", &sum); err != nil {
			return nil, err
		}
	}
	return zstdEncoder{Level: level, Checksum: sum}, nil
}

// MaxEncodedLen is ZSTD_compressBound, with room to spare.
func (zstdEncoder) MaxEncodedLen(n int) int {
	b := n + n>>8 + 64
	if n < 128<<10 {
		b += (128<<10 - n) >> 11
	}
	return b
}

func (e zstdEncoder) Encode(dst, src []byte) ([]byte, error) {
	return encodeWithin(dst, src, e.MaxEncodedLen(len(src)), func(d []byte) ([]byte, error) {
		return zstdEncode(d, src, e.Level, e.Checksum)
	})
}

// zstdEncoders holds one klauspost encoder per speed and checksum choice:
// EncodeAll is safe for concurrent use and keeps its state warm.
var zstdEncoders sync.Map // zstdKey -> *zstd.Encoder

type zstdKey struct {
	level zstd.EncoderLevel
	crc   bool
}

// zstdEncode appends one frame of src to dst (growing it if it must;
// callers check).
func zstdEncode(dst, src []byte, level int, crc bool) ([]byte, error) {
	if level <= 0 {
		level = 3 // zstd's default, as ZSTD_compress takes 0 and below
	}
	k := zstdKey{zstd.EncoderLevelFromZstd(level), crc}
	v, ok := zstdEncoders.Load(k)
	if !ok {
		enc, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(k.level),
			zstd.WithEncoderCRC(crc),
			zstd.WithZeroFrames(true), // an empty chunk is one empty frame, as ZSTD_compress writes
			// Entropy-code literals even when no match is found: float
			// data has few matches but skewed bytes (1.29x smaller for the
			// benchmark array of docs/performance.md, where the default
			// stores it raw).
			zstd.WithAllLitEntropyCompression(true),
			// One segment: the frame header always holds the content size,
			// which numcodecs 0.11 needs (klauspost leaves it out below
			// 256 bytes otherwise).
			zstd.WithSingleSegment(true),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
		)
		if err != nil {
			return dst, fmt.Errorf("%w: zstd: %v", ErrConfig, err)
		}
		v, _ = zstdEncoders.LoadOrStore(k, enc)
	}
	return v.(*zstd.Encoder).EncodeAll(src, dst), nil
}

// levelEncoder is an encoder whose configuration is one "level".
type levelEncoder struct {
	level int
	enc   func(dst, src []byte, level int) ([]byte, error)
	bound func(n int) int
}

func newLevelEncoder(id string, def int, enc func(dst, src []byte, level int) ([]byte, error), bound func(int) int) func(Config, int) (Encoder, error) {
	return func(c Config, _ int) (Encoder, error) {
		level, err := c.Int("level", def)
		if err != nil {
			return nil, err
		}
		if level < -1 || level > 9 {
			return nil, fmt.Errorf("%w: %s level %d", ErrConfig, id, level)
		}
		return &levelEncoder{level: level, enc: enc, bound: bound}, nil
	}
}

func (e *levelEncoder) MaxEncodedLen(n int) int { return e.bound(n) }

func (e *levelEncoder) Encode(dst, src []byte) ([]byte, error) {
	return encodeWithin(dst, src, e.bound(len(src)), func(d []byte) ([]byte, error) { return e.enc(d, src, e.level) })
}

// deflateBound bounds a zlib stream of n bytes (zlib's compressBound, with
// room for klauspost's stored blocks).
func deflateBound(n int) int { return n + n>>12 + n>>14 + n>>25 + 13 + 5*(n/16384+1) + 64 }

// gzipBound is deflateBound plus the gzip header and trailer.
func gzipBound(n int) int { return deflateBound(n) + 32 }

// byteWriter appends to a slice; the compressors write into it.
type byteWriter struct{ b []byte }

func (w *byteWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// A deflater is a pooled compress/zlib or compress/gzip writer.
type deflater interface {
	io.WriteCloser
	Reset(w io.Writer)
}

var (
	zlibWriters = [11]sync.Pool{} // by level+1
	gzipWriters = [11]sync.Pool{}
)

// zlibEncode appends the zlib stream of src at level (-1 default, 0..9)
// to dst, as Python's zlib.compress writes it. It is the standard
// library's deflate: klauspost's levels 1 to 6 store noisy float data
// uncompressed (ratio 1.01 for docs/performance.md's benchmark chunks, where C zlib
// level 1 gets 1.35 and the standard library 1.29).
func zlibEncode(dst, src []byte, level int) ([]byte, error) {
	return deflate(dst, src, level, &zlibWriters, func(w io.Writer, l int) (deflater, error) { return zlib.NewWriterLevel(w, l) })
}

// gzipEncode appends one gzip member of src at level to dst, as Python's
// gzip.GzipFile writes it (the modification time is left zero).
func gzipEncode(dst, src []byte, level int) ([]byte, error) {
	return deflate(dst, src, level, &gzipWriters, func(w io.Writer, l int) (deflater, error) { return gzip.NewWriterLevel(w, l) })
}

// deflate compresses src onto dst with a writer from pools (by level),
// made by fresh when the pool is empty.
func deflate(dst, src []byte, level int, pools *[11]sync.Pool, fresh func(io.Writer, int) (deflater, error)) ([]byte, error) {
	level = min(max(level, -1), 9)
	w := &byteWriter{b: dst}
	d, _ := pools[level+1].Get().(deflater)
	if d == nil {
		var err error
		if d, err = fresh(w, level); err != nil {
			return dst, fmt.Errorf("%w: deflate level %d: %v", ErrConfig, level, err)
		}
	} else {
		d.Reset(w)
	}
	defer pools[level+1].Put(d)
	if _, err := d.Write(src); err != nil {
		return dst, err
	}
	if err := d.Close(); err != nil {
		return dst, err
	}
	d.Reset(nil) // keep no reference to dst
	return w.b, nil
}

// encodeWithin runs enc, which appends to its argument and may grow it,
// so that the result lies within cap(dst): directly into dst when bound
// bytes of room are left, else into scratch space and copied when it fits.
func encodeWithin(dst, src []byte, bound int, enc func([]byte) ([]byte, error)) ([]byte, error) {
	if cap(dst)-len(dst) >= bound {
		out, err := enc(dst)
		if err != nil {
			return dst, err
		}
		if &out[:cap(out)][0] != &dst[:cap(dst)][0] { // grew: the bound was wrong
			return dst, fmt.Errorf("codec: encoder wrote more than its bound %d for %d bytes", bound, len(src))
		}
		return out, nil
	}
	p := GetBuf(bound)
	defer PutBuf(p)
	out, err := enc((*p)[:0:bound])
	if err != nil {
		return dst, err
	}
	if len(out) > cap(dst)-len(dst) {
		return dst, errNoRoom
	}
	return append(dst, out...), nil // fits: no allocation
}

// jsonBool reads the boolean under key.
func jsonBool(c Config, key string, v *bool) error {
	b := bytes.TrimSpace(c[key])
	switch string(b) {
	case "true":
		*v = true
	case "false":
		*v = false
	default:
		return fmt.Errorf("%w: %q is not a boolean: %s", ErrConfig, key, b)
	}
	return nil
}
