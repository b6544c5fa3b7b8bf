package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/zfuse/zfuse/internal/testutil"
)

func TestLZ4NumcodecsFixtures(t *testing.T) {
	fx := numcodecsFixtures(t, "lz4")
	if len(fx) < 7*10 {
		t.Fatalf("only %d lz4 fixtures", len(fx))
	}
	for _, f := range fx {
		got, err := decodeExact(t, LZ4{}, f.enc, len(f.want))
		if err != nil || !bytes.Equal(got, f.want) {
			t.Errorf("%s: %v", f.name, err)
		}
		if _, err := decodeExact(t, LZ4{}, f.enc, len(f.want)-1); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: one byte too little room: got %v, want ErrTooLarge", f.name, err)
		}
		// The raw block alone, through lz4Block.
		block := f.enc[4:]
		if n, ok := lz4DecodedLen(block); !ok || n != len(f.want) {
			t.Errorf("%s: lz4DecodedLen = %d, %v; want %d", f.name, n, ok, len(f.want))
		}
		got, err = decodeExact(t, lz4BlockDecoder{}, block, len(f.want))
		if err != nil || !bytes.Equal(got, f.want) {
			t.Errorf("%s: lz4Block: %v", f.name, err)
		}
		if _, err := decodeExact(t, lz4BlockDecoder{}, block, len(f.want)-1); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: lz4Block with one byte too little room: got %v, want ErrTooLarge", f.name, err)
		}
	}
}

// lz4BlockDecoder adapts lz4Block to a Decoder for the shared test helpers.
type lz4BlockDecoder struct{}

func (lz4BlockDecoder) Decode(dst, src []byte) ([]byte, error) { return lz4Block(dst, src) }

func TestLZ4Errors(t *testing.T) {
	payload := make([]byte, 1000)
	for i := range payload {
		payload[i] = byte(i % 7)
	}
	block := make([]byte, lz4.CompressBlockBound(len(payload)))
	n, err := lz4.CompressBlock(payload, block, nil)
	if err != nil || n == 0 {
		t.Fatal(n, err)
	}
	block = block[:n]
	enc := binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))
	enc = append(enc, block...)
	cases := []struct {
		name string
		src  []byte
		room int
		want error
	}{
		{"ok", enc, 1000, nil},
		{"short prefix", enc[:3], 1000, ErrCorrupt},
		{"size 0", append([]byte{0, 0, 0, 0}, block...), 1000, ErrCorrupt},
		{"size 2^31", append([]byte{0, 0, 0, 0x80}, block...), 1000, ErrCorrupt},
		{"no block", enc[:4], 1000, ErrCorrupt},
		{"size larger than the block", append(binary.LittleEndian.AppendUint32(nil, 1001), block...), 1001, ErrCorrupt},
		{"size smaller than the block", append(binary.LittleEndian.AppendUint32(nil, 999), block...), 1000, ErrCorrupt},
		{"too little room", enc, 999, ErrTooLarge},
		{"truncated", enc[:len(enc)-3], 1000, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeExact(t, LZ4{}, c.src, c.room)
			if c.want == nil {
				if err != nil || !bytes.Equal(got, payload) {
					t.Fatalf("got %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	if _, err := lz4Block(make([]byte, 0, 10), nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("empty block: got %v, want ErrCorrupt", err)
	}
}

// FuzzLZ4 decodes arbitrary numcodecs lz4 buffers: no panics, no writes
// past cap, lz4Block and lz4DecodedLen consistent, DecodeBatch agrees.
func FuzzLZ4(f *testing.F) {
	if dir := testutil.SharedDir(); dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "conformance/numcodecs/fixture/lz4/codec.*/encoded.*.dat"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte{5, 0, 0, 0, 0x50, 'h', 'e', 'l', 'l', 'o'})
	f.Add(append([]byte{0, 0, 1, 0}, lz4LiteralBlock(make([]byte, 1<<16))...))
	f.Fuzz(func(t *testing.T, src []byte) {
		room := 1 << 16
		if len(src) >= 4 {
			if n := binary.LittleEndian.Uint32(src); n <= 1<<20 {
				room = int(n)
			}
		}
		got, err := decodeExact(t, LZ4{}, src, room)
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("error matches no sentinel: %v", err)
		}
		jobs := []Job{{Src: src, Dst: make([]byte, 0, room)}}
		if berr := Batch(LZ4{}).DecodeBatch(context.Background(), jobs); berr != nil {
			t.Fatal(berr)
		}
		if (jobs[0].Err == nil) != (err == nil) || !bytes.Equal(jobs[0].Dst, got) {
			t.Fatalf("DecodeBatch (%v) and Decode (%v) disagree", jobs[0].Err, err)
		}
		if len(src) < 4 {
			return
		}
		block := src[4:]
		bgot, berr := decodeExact(t, lz4BlockDecoder{}, block, room)
		if berr == nil {
			if n, ok := lz4DecodedLen(block); !ok || n != len(bgot) {
				t.Fatalf("lz4Block gave %d bytes, lz4DecodedLen %d, %v", len(bgot), n, ok)
			}
		}
		if err == nil && (berr != nil || !bytes.Equal(bgot, got)) {
			t.Fatalf("LZ4 decodes, lz4Block with the same room: %v", berr)
		}
	})
}

// lz4LiteralBlock encodes p as an LZ4 block of one literal run.
func lz4LiteralBlock(p []byte) []byte {
	if len(p) < 15 {
		return append([]byte{byte(len(p) << 4)}, p...)
	}
	b := []byte{0xF0}
	for rest := len(p) - 15; ; rest -= 255 {
		if rest < 255 {
			b = append(b, byte(rest))
			break
		}
		b = append(b, 255)
	}
	return append(b, p...)
}

// TestLZ4OnlyLiterals covers the copy path for blocks that are one literal
// run, at lengths where the length bytes end in 0 and in 254.
func TestLZ4OnlyLiterals(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{1 << 16, 15 + 255*300, 15 + 255*300 + 254, 1 << 20, 1<<20 + 1} {
		p := randBytes(r, n)
		block := lz4LiteralBlock(p)
		if lit, ok := lz4OnlyLiterals(block); !ok || !bytes.Equal(lit, p) {
			t.Fatalf("%d: not recognised", n)
		}
		ref := make([]byte, n)
		if k, err := lz4.UncompressBlock(block, ref); err != nil || k != n || !bytes.Equal(ref, p) {
			t.Fatalf("%d: pierrec disagrees with the hand-made block: %d, %v", n, k, err)
		}
		enc := append(binary.LittleEndian.AppendUint32(nil, uint32(n)), block...)
		if got, err := decodeExact(t, LZ4{}, enc, n); err != nil || !bytes.Equal(got, p) {
			t.Fatalf("%d: LZ4: %v", n, err)
		}
		if _, err := decodeExact(t, LZ4{}, enc, n-1); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%d: LZ4 with one byte too little room: %v", n, err)
		}
		bad := append(binary.LittleEndian.AppendUint32(nil, uint32(n+1)), block...)
		if _, err := decodeExact(t, LZ4{}, bad, n+1); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%d: LZ4 with a wrong size: %v", n, err)
		}
		if got, err := decodeExact(t, lz4BlockDecoder{}, block, n); err != nil || !bytes.Equal(got, p) {
			t.Fatalf("%d: lz4Block: %v", n, err)
		}
		if _, err := decodeExact(t, lz4BlockDecoder{}, block, n-1); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%d: lz4Block with one byte too little room: %v", n, err)
		}
		// A trailing byte makes it more than a literal run: pierrec decides.
		if _, ok := lz4OnlyLiterals(append(block, 0)); ok {
			t.Fatalf("%d: block with a trailing byte taken as literals only", n)
		}
	}
}
