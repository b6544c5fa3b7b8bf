package gpu

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/zfuse/zfuse/internal/testutil"
)

// TestTranspose8 checks the 8x8 bit transpose against its definition:
// bit c of byte r of the result is bit r of byte c of the input.
func TestTranspose8(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		x := r.Uint64()
		y := transpose8(x)
		for row := range 8 {
			for col := range 8 {
				if got, want := y>>(8*row+col)&1, x>>(8*col+row)&1; got != want {
					t.Fatalf("transpose8(%#x) = %#x: bit (%d,%d) is %d, want %d", x, y, row, col, got, want)
				}
			}
		}
	}
}

// TestEmuUnshuffle runs the kernel's unshuffle on blocks shuffled by the
// reference encoders, for typesizes and lengths that hit every rule: tails,
// element counts not a multiple of 8, typesize 1 and > 16.
func TestEmuUnshuffle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, ts := range []int{1, 2, 3, 4, 5, 7, 8, 16, 17, 24, 255} {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 64, 100, 1000, 4096, 4099} {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(r.IntN(256))
			}
			for _, mode := range []uint32{modeCopy, modeByte, modeBit} {
				shuf := make([]byte, n)
				switch {
				case mode == modeByte && ts > 1:
					copy(shuf, testutil.ByteShuffle(data, ts))
				case mode == modeBit && n >= ts:
					copy(shuf, testutil.BitShuffle(data, ts))
				default:
					copy(shuf, data)
				}
				got := bytes.Repeat([]byte{0xEE}, n)
				emuUnshuffleBlock(shuf, got, uint32(ts), mode)
				if !bytes.Equal(got, data) {
					t.Fatalf("ts %d len %d mode %d: unshuffle does not invert the shuffle", ts, n, mode)
				}
			}
		}
	}
}

// TestEmuLZ4 decodes pierrec-encoded blocks of many shapes and checks the
// kernel's statuses on malformed ones.
func TestEmuLZ4(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 5, 12, 13, 64, 1000, 65536, 300000} {
		for _, data := range [][]byte{mixedData(r, n), floatData(r, n), make([]byte, n)} {
			enc := encodeLZ4(t, data)[4:]
			got := make([]byte, n)
			if st := emuLZ4Warp(enc, got); st != statusOK {
				t.Fatalf("len %d: status %d (%s)", n, st, statusText(st))
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("len %d: decoded bytes differ", n)
			}
			if st := emuLZ4Warp(enc, make([]byte, n-1)); st != statusDst {
				t.Errorf("len %d: one byte short: status %d, want %d", n, st, statusDst)
			}
			if st := emuLZ4Warp(enc, make([]byte, n+1)); st != statusSize {
				t.Errorf("len %d: one byte long: status %d, want %d", n, st, statusSize)
			}
		}
	}
	for _, c := range []struct {
		name string
		src  []byte
		dlen int
		want int32
	}{
		{"empty", nil, 1, statusSize},
		{"empty to empty", nil, 0, statusOK},
		{"literals", []byte{0x30, 'a', 'b', 'c'}, 3, statusOK},
		{"literals cut", []byte{0x30, 'a', 'b'}, 3, statusSrc},
		{"ends with match nibble", []byte{0x31, 'a', 'b', 'c'}, 3, statusSrc},
		{"offset cut", []byte{0x10, 'a', 1}, 5, statusSrc},
		{"offset 0", []byte{0x10, 'a', 0, 0, 0x00}, 5, statusOffset},
		{"offset past start", []byte{0x10, 'a', 2, 0, 0x00}, 5, statusOffset},
		{"run of 'a'", []byte{0x10, 'a', 1, 0, 0x00}, 5, statusOK},
		{"ends after match", []byte{0x10, 'a', 1, 0}, 5, statusOK},
		{"match too long", []byte{0x10, 'a', 1, 0, 0x00}, 4, statusDst},
		{"literal length cut", []byte{0xF0}, 20, statusSrc},
		{"match length cut", []byte{0x1F, 'a', 1, 0}, 40, statusSrc},
		{"huge literal length", append([]byte{0xF0}, bytes.Repeat([]byte{255}, 20)...), 100, statusDst},
	} {
		dst := make([]byte, c.dlen)
		if st := emuLZ4Warp(c.src, dst); st != c.want {
			t.Errorf("%s: status %d (%s), want %d", c.name, st, statusText(st), c.want)
		}
	}
}

// TestEmuLZ4AgreesWithPierrec feeds random and mutated blocks to the
// kernel emulation and to pierrec/lz4 (what codec uses): both must accept
// the same blocks and produce the same bytes.
func TestEmuLZ4AgreesWithPierrec(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	n := 5000
	if testing.Short() {
		n = 1000
	}
	for i := range n {
		size := r.IntN(3000) + 1
		data := mixedData(r, size)
		enc := encodeLZ4(t, data)[4:]
		switch i % 4 {
		case 1: // flip bytes
			for range r.IntN(3) + 1 {
				enc[r.IntN(len(enc))] ^= byte(r.IntN(255) + 1)
			}
		case 2: // truncate
			enc = enc[:r.IntN(len(enc))]
		case 3: // pure noise
			enc = make([]byte, r.IntN(64)+1)
			for k := range enc {
				enc[k] = byte(r.IntN(256))
			}
		}
		dlen := size
		if i%7 == 0 {
			dlen = r.IntN(size + 10)
		}
		got := make([]byte, dlen)
		st := emuLZ4Warp(enc, got)
		want := make([]byte, dlen)
		m, err := lz4.UncompressBlock(enc, want)
		ok := err == nil && m == dlen && len(enc) > 0
		if (st == statusOK) != ok {
			t.Fatalf("case %d (src %x, dlen %d): kernel status %d, pierrec n=%d err=%v", i, enc, dlen, st, m, err)
		}
		if ok && !bytes.Equal(got, want) {
			t.Fatalf("case %d: bytes differ", i)
		}
	}
}
