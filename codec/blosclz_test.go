package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// blosclzLiterals encodes b as BloscLZ literal runs (at most 32 bytes
// each); first marks the stream's first byte with the format marker.
func blosclzLiterals(b []byte, first bool) []byte {
	var out []byte
	for len(b) > 0 {
		n := min(len(b), 32)
		ctrl := byte(n - 1)
		if first {
			ctrl |= 1 << 5
			first = false
		}
		out = append(out, ctrl)
		out = append(out, b[:n]...)
		b = b[n:]
	}
	return out
}

func TestBloscLZ(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	lits := randBytes(r, 9000)
	cases := []struct {
		name string
		in   []byte
		want []byte // nil: error
		room int    // 0: len(want)
	}{
		{"empty", nil, []byte{}, 10},
		{"literals", blosclzLiterals([]byte("hello, world"), true), []byte("hello, world"), 0},
		{"literals, 40 bytes", blosclzLiterals(lits[:40], true), lits[:40], 0},
		{
			"run (distance 1)",
			append(blosclzLiterals([]byte("ab"), true), 2<<5|0, 0, 0, 'z'), // len 3+1=4, dist 1
			[]byte("abbbbbz"), 0,
		},
		{
			"near match with overlap",
			append(blosclzLiterals([]byte("abc"), true), 3<<5|0, 2, 0, 'z'), // len 5, dist 3
			[]byte("abcabcabz"), 0,
		},
		{
			"long match",
			append(blosclzLiterals([]byte("xy"), true), 7<<5|0, 255, 10, 1, 0, 'z'), // len 6+255+10+3=274, dist 2
			append(append([]byte("xy"), bytes.Repeat([]byte("xy"), 137)...), 'z'), 0,
		},
		{
			"far match",
			append(blosclzLiterals(lits, true), 1<<5|31, 255, 0x03, 0x27, 0, 'z'), // len 3, dist 8192+0x327
			append(append(append([]byte{}, lits...), lits[9000-8192-0x327:9000-8192-0x327+3]...), 'z'), 0,
		},
		{"match before start", append(blosclzLiterals([]byte("ab"), true), 1<<5|0, 2, 0, 'z'), nil, 100},
		{"truncated literal", blosclzLiterals([]byte("hello"), true)[:4], nil, 100},
		{"truncated match", append(blosclzLiterals([]byte("ab"), true), 1<<5), nil, 100},
		{"truncated long match", append(blosclzLiterals([]byte("ab"), true), 7<<5, 255), nil, 100},
		{"truncated far match", append(blosclzLiterals(lits, true), 1<<5|31, 255, 3), nil, 1 << 14},
		{"literal past room", blosclzLiterals([]byte("hello"), true), nil, 4},
		{"match past room", append(blosclzLiterals([]byte("ab"), true), 2<<5|0, 0, 0, 'z'), nil, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			room := c.room
			if room == 0 {
				room = len(c.want)
			}
			out := make([]byte, room)
			n, err := blosclzDecompress(out, c.in)
			ref, rerr := refBloscLZ(c.in, room)
			if c.want == nil {
				if !errors.Is(err, ErrCorrupt) || rerr == nil {
					t.Fatalf("got %d bytes, %v (reference %v); want an error", n, err, rerr)
				}
				return
			}
			if err != nil || !bytes.Equal(out[:n], c.want) {
				t.Fatalf("got %q, %v; want %q", out[:n], err, c.want)
			}
			if rerr != nil || !bytes.Equal(ref, c.want) {
				t.Fatalf("reference: got %q, %v", ref, rerr)
			}
		})
	}
}

// bloscWrap puts one stream in a Blosc container: one block of n bytes,
// one split, the given typesize and flags (dont_split is added). A stream
// of exactly n bytes is stored raw.
func bloscWrap(stream []byte, n, typesize int, flags byte) []byte {
	b := []byte{2, 1, flags | bloscDontSplit, byte(typesize)}
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = binary.LittleEndian.AppendUint32(b, uint32(16+4+4+len(stream)))
	b = binary.LittleEndian.AppendUint32(b, 20)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(stream)))
	return append(b, stream...)
}

// FuzzBloscLZ checks blosclzDecompress against the byte-at-a-time
// reference, then the same stream inside a Blosc container against
// DecodeBatch and the reference Blosc decoder.
func FuzzBloscLZ(f *testing.F) {
	f.Add(uint16(12), blosclzLiterals([]byte("hello, world"), true))
	f.Add(uint16(7), append(blosclzLiterals([]byte("ab"), true), 2<<5|0, 0, 0, 'z'))
	f.Add(uint16(280), append(blosclzLiterals([]byte("xy"), true), 7<<5|0, 255, 10, 1, 0, 'z'))
	if dir := testutil.SharedDir(); dir != "" {
		// The splits of real blosclz buffers.
		for _, fx := range numcodecsFixtures(f, "blosc") {
			h, err := ParseBlosc(fx.enc)
			if err != nil || h.Compressor() != "blosclz" {
				continue
			}
			streams, err := BloscStreams(fx.enc)
			if err != nil {
				f.Fatal(err)
			}
			for _, s := range streams {
				if !s.Stored && s.DstLen <= 1<<16-1 {
					f.Add(uint16(s.DstLen), fx.enc[s.SrcOff:s.SrcOff+s.SrcLen])
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, room uint16, in []byte) {
		out := make([]byte, room)
		n, err := blosclzDecompress(out, in)
		ref, rerr := refBloscLZ(in, int(room))
		if (err == nil) != (rerr == nil) {
			t.Fatalf("blosclzDecompress error %v, reference %v", err, rerr)
		}
		if err == nil && !bytes.Equal(out[:n], ref) {
			t.Fatalf("blosclzDecompress and the reference differ")
		}
		if room > 0 {
			bloscCheck(t, bloscWrap(in, int(room), 1, bloscFormatBloscLZ<<5), int(room))
		}
	})
}
