package codec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// shuffleTypesizes are the typesizes the unshuffle tests cover: every
// Blosc split width, the odd ones after them, and the extremes.
var shuffleTypesizes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 32, 255}

// shuffleSizes are buffer lengths: empty, smaller than one element, around
// the SIMD group sizes, and block-sized.
var shuffleSizes = []int{0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257,
	511, 1000, 1023, 1024, 1025, 2047, 4096, 4099, 8192 + 7, 65536, 65536 + 13, 3 * 65536}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestByteUnshuffle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, ts := range shuffleTypesizes {
		for _, n := range shuffleSizes {
			orig := randBytes(r, n)
			shuffled := testutil.ByteShuffle(orig, ts)
			got := make([]byte, n)
			byteUnshuffle(got, shuffled, ts)
			if !bytes.Equal(got, orig) {
				t.Fatalf("typesize %d len %d: byteUnshuffle does not invert the shuffle", ts, n)
			}
			gen := make([]byte, n)
			byteUnshuffleGeneric(gen, shuffled, ts)
			if !bytes.Equal(gen, orig) {
				t.Fatalf("typesize %d len %d: byteUnshuffleGeneric does not invert the shuffle", ts, n)
			}
		}
	}
}

func TestBitUnshuffle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, ts := range shuffleTypesizes {
		for _, n := range shuffleSizes {
			if n > 70000 && ts > 8 {
				continue // the bit-at-a-time reference is slow
			}
			orig := randBytes(r, n)
			shuffled := testutil.BitShuffle(orig, ts)
			got := make([]byte, n)
			bitUnshuffle(got, shuffled, ts)
			if !bytes.Equal(got, orig) {
				t.Fatalf("typesize %d len %d: bitUnshuffle does not invert the bitshuffle", ts, n)
			}
			gen := make([]byte, n)
			bitUnshuffleGeneric(gen, shuffled, ts)
			if !bytes.Equal(gen, orig) {
				t.Fatalf("typesize %d len %d: bitUnshuffleGeneric does not invert the bitshuffle", ts, n)
			}
		}
		// Element counts that are multiples of 8 (others are copied
		// verbatim), around the SIMD group (128) and the run length of
		// bitUnshufflePlanes (16 KiB / typesize), with and without a tail.
		for _, elems := range []int{8, 16, 64, 120, 128, 136, 1024, 2056, 16384/ts + 8, 2*16384/ts + 64} {
			elems &^= 7
			for _, tail := range []int{0, ts - 1} {
				n := elems*ts + tail
				orig := randBytes(r, n)
				got := make([]byte, n)
				bitUnshuffle(got, testutil.BitShuffle(orig, ts), ts)
				if !bytes.Equal(got, orig) {
					t.Fatalf("typesize %d, %d elements + %d: bitUnshuffle does not invert the bitshuffle", ts, elems, tail)
				}
			}
		}
	}
}

// TestBitUnshuffleExample pins the bit order with a hand-made block: eight
// uint16 elements, element i = 1<<i, so plane k of byte 0 has only bit k set.
func TestBitUnshuffleExample(t *testing.T) {
	src := make([]byte, 16) // 16 planes of one byte each
	for k := range 8 {
		src[k] = 1 << k // plane k (byte 0, bit k): element k has it
	}
	want := make([]byte, 16)
	for i := range 8 {
		want[2*i] = 1 << i
	}
	got := make([]byte, 16)
	bitUnshuffle(got, src, 2)
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
}

// TestUnshuffleStreams feeds streams that do not lie back to back (as Blosc
// blocks with stored splits do) and checks the fast path against the
// portable one.
func TestUnshuffleStreams(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for ts := 1; ts <= maxStreams; ts++ {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 100, 128, 1000, 4096 + 3} {
			var s [maxStreams][]byte
			for j := range ts {
				// Each stream in its own allocation, one byte longer than needed.
				s[j] = randBytes(r, n+1)
			}
			want := make([]byte, n*ts+5)
			got := make([]byte, n*ts+5)
			copy(got[n*ts:], "guard")
			copy(want[n*ts:], "guard")
			unshuffleStreamsGeneric(want, &s, ts, 0, n)
			unshuffleStreams(got, &s, ts, n)
			if !bytes.Equal(got, want) {
				t.Fatalf("typesize %d n %d: fast and generic differ", ts, n)
			}
		}
	}
}

// FuzzUnshuffle checks the fast paths against the generic ones, directly
// and through Blosc.Decode (src as one stored block, byte- then
// bit-shuffled), where DecodeBatch must agree too.
func FuzzUnshuffle(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, ts := range []int{1, 2, 3, 4, 8, 16, 17} {
		f.Add(uint8(ts), randBytes(r, 64*ts+ts/2))
	}
	f.Add(uint8(16), randBytes(r, 16*1024*3+5))
	f.Fuzz(func(t *testing.T, ts uint8, src []byte) {
		typesize := int(ts)
		fast, gen := make([]byte, len(src)), make([]byte, len(src))
		byteUnshuffle(fast, src, typesize)
		byteUnshuffleGeneric(gen, src, typesize)
		if !bytes.Equal(fast, gen) {
			t.Fatalf("byteUnshuffle typesize %d len %d: fast and generic differ", typesize, len(src))
		}
		if typesize == 0 || len(src) == 0 {
			return
		}
		blosc := bloscWrap(src, len(src), typesize, bloscShuffle|bloscFormatLZ4<<5)
		got, err := decodeExact(t, Blosc{}, blosc, len(src))
		if err != nil || !bytes.Equal(got, gen) {
			t.Fatalf("Blosc byte-shuffled block typesize %d len %d: %v", typesize, len(src), err)
		}
		bloscCheck(t, blosc, len(src))

		bitUnshuffle(fast, src, typesize)
		bitUnshuffleGeneric(gen, src, typesize)
		if !bytes.Equal(fast, gen) {
			t.Fatalf("bitUnshuffle typesize %d len %d: fast and generic differ", typesize, len(src))
		}
		if len(src) < typesize {
			copy(gen, src) // Blosc leaves blocks shorter than an element alone
		}
		blosc = bloscWrap(src, len(src), typesize, bloscBitshuf|bloscFormatLZ4<<5)
		got, err = decodeExact(t, Blosc{}, blosc, len(src))
		if err != nil || !bytes.Equal(got, gen) {
			t.Fatalf("Blosc bit-shuffled block typesize %d len %d: %v", typesize, len(src), err)
		}
		bloscCheck(t, blosc, len(src))
	})
}

func BenchmarkUnshuffle(b *testing.B) {
	const size = 512 << 10
	r := rand.New(rand.NewPCG(9, 10))
	src := randBytes(r, size)
	dst := make([]byte, size)
	for _, ts := range []int{2, 4, 8, 16, 3} {
		b.Run(fmt.Sprintf("byte/ts=%d", ts), func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				byteUnshuffle(dst, src, ts)
			}
		})
	}
	for _, ts := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("bit/ts=%d", ts), func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				bitUnshuffle(dst, src, ts)
			}
		})
	}
}
