package gpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/zfuse/zfuse/internal/testutil"
)

// A Go Blosc-LZ4 encoder for tests, written from zarr-formats.md §1 (not
// from codec's decoder): it gives random inputs of every shape without
// Python. Python/numcodecs-written data is tested too (TestEmulatedNumcodecs).

// bloscOpts are the encoder's knobs.
type bloscOpts struct {
	typesize  int
	shuffle   int // 0 none, 1 byte, 2 bit
	blocksize int // decoded bytes per block; 0: the whole buffer
	split     bool
}

// encodeBlosc encodes data as a c-blosc 1.x buffer with the lz4 compressor.
// Streams that do not compress are stored raw (csize == neblock).
func encodeBlosc(t testing.TB, data []byte, o bloscOpts) []byte {
	t.Helper()
	ts := o.typesize
	bs := o.blocksize
	if bs <= 0 || bs > len(data) {
		bs = len(data)
	}
	if bs > ts {
		bs -= bs % ts // c-blosc's blocks hold whole elements
	}
	flags := byte(1 << 5) // lz4
	switch o.shuffle {
	case 1:
		flags |= 0x01
	case 2:
		flags |= 0x04
	}
	if !o.split {
		flags |= 0x10
	}
	nblocks := (len(data) + bs - 1) / bs
	out := make([]byte, 16+4*nblocks)
	out[0], out[1], out[2], out[3] = 2, 1, flags, byte(ts)
	binary.LittleEndian.PutUint32(out[4:], uint32(len(data)))
	binary.LittleEndian.PutUint32(out[8:], uint32(bs))
	var c lz4.Compressor
	for j := range nblocks {
		blk := data[j*bs : min((j+1)*bs, len(data))]
		leftover := len(blk) < bs
		shuf := make([]byte, len(blk))
		switch {
		case o.shuffle == 1 && ts > 1:
			copy(shuf, testutil.ByteShuffle(blk, ts))
		case o.shuffle == 2 && len(blk) >= ts:
			copy(shuf, testutil.BitShuffle(blk, ts))
		default:
			copy(shuf, blk)
		}
		nsplits := 1
		if o.split && ts <= 16 && len(blk)/ts >= 128 && !leftover {
			nsplits = ts
		}
		binary.LittleEndian.PutUint32(out[16+4*j:], uint32(len(out)))
		ne := len(blk) / nsplits
		for s := range nsplits {
			part := shuf[s*ne : (s+1)*ne]
			buf := make([]byte, lz4.CompressBlockBound(len(part)))
			n, err := c.CompressBlock(part, buf)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 || n >= len(part) {
				buf, n = part, len(part)
			}
			out = binary.LittleEndian.AppendUint32(out, uint32(n))
			out = append(out, buf[:n]...)
		}
	}
	binary.LittleEndian.PutUint32(out[12:], uint32(len(out)))
	return out
}

// encodeLZ4 encodes data as numcodecs LZ4: u32le size, one LZ4 block.
func encodeLZ4(t testing.TB, data []byte) []byte {
	t.Helper()
	buf := make([]byte, lz4.CompressBlockBound(len(data)))
	n, err := lz4.CompressBlock(data, buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 { // incompressible: a single literal run
		buf = lz4Literals(data)
		n = len(buf)
	}
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(data))), buf[:n]...)
}

// lz4Literals encodes data as one LZ4 sequence of literals only.
func lz4Literals(data []byte) []byte {
	l := len(data)
	var out []byte
	if l < 15 {
		out = append(out, byte(l<<4))
	} else {
		out = append(out, 0xF0)
		for l -= 15; l >= 255; l -= 255 {
			out = append(out, 255)
		}
		out = append(out, byte(l))
	}
	return append(out, data...)
}

// floatData returns n bytes of compressible float32 data: a smooth signal
// plus noise, quantised to 1/64 (as measured values stored as float32 are),
// so the low mantissa bits are zero and neighbours share their high bytes.
func floatData(r *rand.Rand, n int) []byte {
	out := make([]byte, n)
	phase := r.Float64() * 10
	for i := 0; i+4 <= n; i += 4 {
		v := float32(math.Round(6400*math.Sin(phase+float64(i)/4000))+float64(r.IntN(4))) / 64
		binary.LittleEndian.PutUint32(out[i:], math.Float32bits(v))
	}
	for i := n &^ 3; i < n; i++ {
		out[i] = byte(r.IntN(256))
	}
	return out
}

// mixedData returns n bytes that mix runs, repeats at short and long
// distances, and noise, so that LZ4 emits every kind of sequence (overlapping
// matches with offsets 1..64, long literal and match lengths).
func mixedData(r *rand.Rand, n int) []byte {
	out := make([]byte, 0, n)
	for len(out) < n {
		switch r.IntN(5) {
		case 0: // noise
			for range r.IntN(300) + 1 {
				out = append(out, byte(r.IntN(256)))
			}
		case 1: // run of one byte
			b := byte(r.IntN(256))
			for range r.IntN(2000) + 1 {
				out = append(out, b)
			}
		case 2, 3: // repeat at a short or long distance
			if len(out) == 0 {
				continue
			}
			off := r.IntN(min(len(out), 64)) + 1
			if r.IntN(2) == 0 {
				off = r.IntN(min(len(out), 70000)) + 1
			}
			for range r.IntN(500) + 4 {
				out = append(out, out[len(out)-off])
			}
		default: // small integers
			for range r.IntN(400) + 1 {
				out = append(out, byte(r.IntN(4)))
			}
		}
	}
	return out[:n]
}
