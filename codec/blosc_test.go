package codec

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/pierrec/lz4/v4"
	"github.com/zfuse/zfuse/internal/testutil"
)

// compatWant is what every c-blosc compat file decodes to: int32 0..999999 LE.
func compatWant() []byte {
	b := make([]byte, 4*1000000)
	for i := range 1000000 {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(i))
	}
	return b
}

func compatFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testutil.Conformance(t, "c-blosc/compat"), "*.cdata"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// bloscFixture is one numcodecs fixture buffer and the bytes it must decode to.
type bloscFixture struct {
	name      string
	enc, want []byte
}

// numcodecsFixtures returns the encoded.NN.dat files of the numcodecs
// fixture folder codecDir ("blosc", "lz4") with their array.NN.npy data,
// leaving out object arrays.
func numcodecsFixtures(t testing.TB, codecDir string) []bloscFixture {
	t.Helper()
	dir := testutil.Conformance(t, "numcodecs/fixture/"+codecDir)
	encs, err := filepath.Glob(filepath.Join(dir, "codec.*", "encoded.*.dat"))
	if err != nil || len(encs) == 0 {
		t.Fatalf("no fixtures in %s (%v)", dir, err)
	}
	var out []bloscFixture
	for _, enc := range encs {
		nn := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(enc), "encoded."), ".dat")
		a, err := testutil.ReadNPY(filepath.Join(dir, "array."+nn+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(a.Descr, "O") {
			continue
		}
		b, err := os.ReadFile(enc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, enc)
		out = append(out, bloscFixture{name: rel, enc: b, want: a.Data})
	}
	return out
}

// decodeExact decodes src with d into a dst of capacity exactly n behind a
// prefix, checking that the prefix survives and nothing past cap is written.
func decodeExact(t testing.TB, d Decoder, src []byte, n int) ([]byte, error) {
	t.Helper()
	const guard = 64
	buf := make([]byte, 3+n+guard)
	copy(buf, "pre")
	for i := 3 + n; i < len(buf); i++ {
		buf[i] = 0xA5
	}
	got, err := d.Decode(buf[:3:3+n], src)
	for i := 3 + n; i < len(buf); i++ {
		if buf[i] != 0xA5 {
			t.Fatalf("wrote past cap(dst) at +%d", i-3-n)
		}
	}
	if string(got[:3]) != "pre" || &got[0] != &buf[0] {
		t.Fatalf("dst prefix not kept or dst reallocated")
	}
	return got[3:], err
}

func TestBloscCompat(t *testing.T) {
	files := compatFiles(t)
	// MANIFEST.md says 30, but c-blosc's compat folder holds 29: five
	// versions with 5, 5, 6, 6 and 7 files (1.18.0 has no snappy). Every
	// file there must decode, however many there are.
	if len(files) < 29 {
		t.Fatalf("found %d compat files, want at least 29", len(files))
	}
	want := compatWant()
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeExact(t, Blosc{}, src, len(want))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("decoded bytes differ from int32 0..999999")
			}
			ref, err := bloscRef(src, len(want))
			if err != nil || !bytes.Equal(ref, want) {
				t.Fatalf("reference decoder disagrees: %v", err)
			}
		})
	}
}

func TestBloscNumcodecsFixtures(t *testing.T) {
	fx := numcodecsFixtures(t, "blosc")
	if len(fx) < 13*10 {
		t.Fatalf("only %d blosc fixtures", len(fx))
	}
	for _, f := range fx {
		got, err := decodeExact(t, Blosc{}, f.enc, len(f.want))
		if err != nil {
			t.Errorf("%s: %v", f.name, err)
			continue
		}
		if !bytes.Equal(got, f.want) {
			t.Errorf("%s: decoded bytes differ", f.name)
		}
	}
}

// TestBloscNew checks the registry entry: configs of any shape build the
// same header-driven decoder.
func TestBloscNew(t *testing.T) {
	for _, cfg := range []string{
		`{"id": "blosc"}`,
		`{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": -1, "blocksize": 0}`,
	} {
		d, err := New([]byte(cfg))
		if err != nil {
			t.Fatalf("%s: %v", cfg, err)
		}
		if _, ok := d.(Blosc); !ok {
			t.Fatalf("%s: got %T", cfg, d)
		}
	}
}

func TestBloscTooLittleRoom(t *testing.T) {
	var srcs [][]byte
	for _, f := range compatFiles(t)[:4] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, b)
	}
	for _, f := range numcodecsFixtures(t, "blosc") {
		srcs = append(srcs, f.enc)
	}
	for i, src := range srcs {
		h, err := ParseBlosc(src)
		if err != nil {
			t.Fatal(err)
		}
		if h.Nbytes == 0 {
			continue
		}
		if _, err := decodeExact(t, Blosc{}, src, h.Nbytes-1); !errors.Is(err, ErrTooLarge) {
			t.Errorf("input %d: one byte too little room: got %v, want ErrTooLarge", i, err)
		}
		if _, err := decodeExact(t, Blosc{}, src, h.Nbytes); err != nil {
			t.Errorf("input %d: exact room: %v", i, err)
		}
	}
}

// bloscCorpus returns small real Blosc buffers: the numcodecs fixtures
// and a few built here.
func bloscCorpus(t testing.TB) [][]byte {
	var out [][]byte
	for _, f := range numcodecsFixtures(t, "blosc") {
		out = append(out, f.enc)
	}
	return out
}

// TestBloscDamaged truncates and corrupts real buffers: every result must
// be an error or a full-size output, never a panic, and the reference
// decoder must agree.
func TestBloscDamaged(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for i, src := range bloscCorpus(t) {
		h, _ := ParseBlosc(src)
		for n := range len(src) {
			if n > 64 && r.IntN(8) != 0 {
				continue // every short prefix, then a sample
			}
			if _, err := decodeExact(t, Blosc{}, src[:n], h.Nbytes); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("input %d truncated to %d: got %v, want ErrCorrupt", i, n, err)
			}
		}
		for range 40 {
			bad := slices.Clone(src)
			for range 1 + r.IntN(3) {
				bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
			}
			bloscCheck(t, bad, h.Nbytes)
		}
	}
}

// bloscCheck decodes src into room bytes and checks the result against the
// reference decoder and DecodeBatch, and that BloscStreams agrees.
func bloscCheck(t testing.TB, src []byte, room int) {
	t.Helper()
	got, err := decodeExact(t, Blosc{}, src, room)
	if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrChecksum) {
		t.Fatalf("error matches no sentinel: %v", err)
	}
	h, herr := ParseBlosc(src)
	if err == nil {
		if herr != nil || len(got) != h.Nbytes {
			t.Fatalf("decoded %d bytes, header %+v, %v", len(got), h, herr)
		}
	}
	if herr == nil && h.Nbytes <= room {
		ref, rerr := bloscRef(src, room)
		if (rerr == nil) != (err == nil) {
			t.Fatalf("Decode error %v, reference error %v", err, rerr)
		}
		if err == nil && !bytes.Equal(ref, got) {
			t.Fatalf("Decode and the reference differ")
		}
		if _, serr := BloscStreams(src); err == nil && serr != nil {
			t.Fatalf("decodes but BloscStreams fails: %v", serr)
		}
	}
	jobs := []Job{{Src: src, Dst: make([]byte, 0, room)}}
	if berr := Batch(Blosc{}).DecodeBatch(context.Background(), jobs); berr != nil {
		t.Fatal(berr)
	}
	if (jobs[0].Err == nil) != (err == nil) || !bytes.Equal(jobs[0].Dst, got) {
		t.Fatalf("DecodeBatch (%v) and Decode (%v) disagree", jobs[0].Err, err)
	}
}

func TestBloscHeaderErrors(t *testing.T) {
	fx := numcodecsFixtures(t, "blosc")
	var lz4s []byte // an lz4, shuffled, non-memcpyed buffer
	for _, f := range fx {
		if f.enc[2] == 0x31 && len(f.enc) > 64 {
			lz4s = f.enc
			break
		}
	}
	if lz4s == nil {
		t.Fatal("no lz4 fixture")
	}
	put32 := func(off int, v int32) func([]byte) {
		return func(b []byte) { binary.LittleEndian.PutUint32(b[off:], uint32(v)) }
	}
	cases := []struct {
		name string
		edit func([]byte)
	}{
		{"version 1", func(b []byte) { b[0] = 1 }},
		{"version 3", func(b []byte) { b[0] = 3 }},
		{"versionlz 2", func(b []byte) { b[1] = 2 }},
		{"reserved flag", func(b []byte) { b[2] |= 0x08 }},
		{"format 5", func(b []byte) { b[2] = b[2]&0x1f | 5<<5 }},
		{"typesize 0", func(b []byte) { b[3] = 0 }},
		{"negative nbytes", put32(4, -1)},
		{"blocksize 0", put32(8, 0)},
		{"negative blocksize", put32(8, -4)},
		{"cbytes past end", put32(12, int32(len(lz4s)+1))},
		{"cbytes below header", put32(12, 15)},
		{"bstart in header", put32(16, 3)},
		{"bstart past end", put32(16, int32(len(lz4s)))},
		{"negative bstart", put32(16, -20)},
		{"split size negative", func(b []byte) {
			binary.LittleEndian.PutUint32(b[binary.LittleEndian.Uint32(b[16:]):], 0xffffffff)
		}},
		{"split size past end", func(b []byte) {
			binary.LittleEndian.PutUint32(b[binary.LittleEndian.Uint32(b[16:]):], uint32(len(b)))
		}},
		{"memcpyed with cbytes != nbytes+16", func(b []byte) { b[2] |= 0x02 }},
	}
	h, err := ParseBlosc(lz4s)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := slices.Clone(lz4s)
			c.edit(b)
			if _, err := decodeExact(t, Blosc{}, b, h.Nbytes); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
			if _, err := BloscStreams(b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("BloscStreams: got %v, want ErrCorrupt", err)
			}
		})
	}
	// Trailing bytes after cbytes are ignored; an empty buffer decodes to nothing.
	if got, err := decodeExact(t, Blosc{}, append(slices.Clone(lz4s), 1, 2, 3), h.Nbytes); err != nil || len(got) != h.Nbytes {
		t.Fatalf("trailing bytes: %v", err)
	}
	empty := []byte{2, 1, 0x21, 4, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0}
	if got, err := decodeExact(t, Blosc{}, empty, 0); err != nil || len(got) != 0 {
		t.Fatalf("empty buffer: %d bytes, %v", len(got), err)
	}
}

// TestBloscStreams rebuilds every compat buffer from its streams the way a
// GPU decoder would (decompress each stream into place, then unshuffle each
// block) and compares with Decode.
func TestBloscStreams(t *testing.T) {
	want := compatWant()
	srcs := map[string][]byte{}
	for _, f := range compatFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs[filepath.Base(f)] = b
	}
	for _, f := range numcodecsFixtures(t, "blosc") {
		srcs[f.name] = f.enc
	}
	for name, src := range srcs {
		h, err := ParseBlosc(src)
		if err != nil {
			t.Fatal(err)
		}
		streams, err := BloscStreams(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pre := make([]byte, h.Nbytes)
		next := 0
		for _, s := range streams {
			if s.DstOff != next || s.SrcOff < 16 || s.SrcOff+s.SrcLen > h.Cbytes || s.Stored != (s.SrcLen == s.DstLen) {
				t.Fatalf("%s: bad stream %+v (next dst %d)", name, s, next)
			}
			next += s.DstLen
			d := pre[s.DstOff : s.DstOff+s.DstLen]
			in := src[s.SrcOff : s.SrcOff+s.SrcLen]
			switch {
			case s.Stored:
				copy(d, in)
			case h.Compressor() == "lz4":
				if n, err := lz4.UncompressBlock(in, d); err != nil || n != len(d) {
					t.Fatalf("%s: stream %+v: %d bytes, %v", name, s, n, err)
				}
			default:
				if err := bloscSplit(h.format(), d, in, s.Block, s.Split); err != nil {
					t.Fatalf("%s: stream %+v: %v", name, s, err)
				}
			}
		}
		if next != h.Nbytes {
			t.Fatalf("%s: streams cover %d bytes, want %d", name, next, h.Nbytes)
		}
		got := make([]byte, h.Nbytes)
		copy(got, pre)
		for j := range h.NBlocks() {
			size, _ := h.Block(j)
			blk := got[j*h.Blocksize : j*h.Blocksize+size]
			in := pre[j*h.Blocksize : j*h.Blocksize+size]
			switch h.Shuffle() {
			case BloscByteShuffle:
				byteUnshuffle(blk, in, h.Typesize)
			case BloscBitShuffle:
				if size >= h.Typesize {
					bitUnshuffle(blk, in, h.Typesize)
				}
			}
		}
		dec, err := Blosc{}.Decode(make([]byte, 0, h.Nbytes), src)
		if err != nil || !bytes.Equal(got, dec) {
			t.Fatalf("%s: rebuilt from streams differs from Decode (%v)", name, err)
		}
		if strings.HasSuffix(name, ".cdata") && !bytes.Equal(got, want) {
			t.Fatalf("%s: rebuilt from streams differs from the expected data", name)
		}
	}
}

// TestBloscConcurrent decodes the same buffers from many goroutines (run
// with -race): the shared scratch pool must not mix blocks up.
func TestBloscConcurrent(t *testing.T) {
	fx := numcodecsFixtures(t, "blosc")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range fx {
				f := fx[(i+g)%len(fx)]
				got, err := Blosc{}.Decode(make([]byte, 0, len(f.want)), f.enc)
				if err != nil || !bytes.Equal(got, f.want) {
					t.Errorf("%s: %v", f.name, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestBloscAllocs checks that steady-state decoding of a shuffled lz4
// buffer does not allocate (under -race, sync.Pool drops some Puts, so
// allow a fraction). A garbage collection empties the pools, and the
// package's parallel tests can start one in every run under load (CI saw
// 1.00 once), so the fewest of five measurements counts: an allocation
// of the decode itself is in all five.
func TestBloscAllocs(t *testing.T) {
	var src []byte
	for _, f := range compatFiles(t) {
		if strings.HasSuffix(f, "1.18.0-lz4.cdata") {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src = b
		}
	}
	testutil.Need(t, "blosc-1.18.0-lz4.cdata", src != nil)
	dst := make([]byte, 0, 4000000)
	Blosc{}.Decode(dst, src)
	least := 1e9
	for range 5 {
		least = min(least, testing.AllocsPerRun(20, func() { Blosc{}.Decode(dst, src) }))
	}
	if least > 0.5 {
		t.Fatalf("%.2f allocations per decode", least)
	}
}

// bloscRef is a slow reference decoder written straight from the pseudocode
// of zarr-formats.md §1.3, with the portable unshuffles and a byte-at-a-time
// BloscLZ. It refuses outputs over maxOut bytes.
func bloscRef(src []byte, maxOut int) ([]byte, error) {
	bad := errors.New("reference: bad input")
	if len(src) < 16 {
		return nil, bad
	}
	i32 := func(off int) int { return int(int32(binary.LittleEndian.Uint32(src[off:]))) }
	version, vlz, flags, ts := src[0], src[1], src[2], int(src[3])
	nbytes, blocksize, cbytes := i32(4), i32(8), i32(12)
	if version != 2 || flags&0x08 != 0 || ts == 0 || nbytes < 0 || cbytes < 16 || cbytes > len(src) || nbytes > maxOut {
		return nil, bad
	}
	if nbytes == 0 {
		return []byte{}, nil
	}
	if flags&0x02 != 0 {
		if cbytes != nbytes+16 {
			return nil, bad
		}
		return slices.Clone(src[16 : 16+nbytes]), nil
	}
	format := int(flags >> 5)
	if vlz != 1 || format > 4 || blocksize <= 0 {
		return nil, bad
	}
	buf := src[:cbytes]
	nblocks := nbytes / blocksize
	leftover := nbytes % blocksize
	if leftover > 0 {
		nblocks++
	}
	if 16+4*nblocks > cbytes {
		return nil, bad
	}
	var out []byte
	for j := range nblocks {
		isLeftover := j == nblocks-1 && leftover > 0
		bsize := blocksize
		if isLeftover {
			bsize = leftover
		}
		nsplits := 1
		if flags&0x10 == 0 && ts <= 16 && bsize/ts >= 128 && !isLeftover {
			nsplits = ts
		}
		neblock := bsize / nsplits
		if neblock*nsplits != bsize {
			return nil, bad
		}
		pos := i32(16 + 4*j)
		if pos < 16+4*nblocks || pos >= cbytes {
			return nil, bad
		}
		var tmp []byte
		for range nsplits {
			if pos+4 > cbytes {
				return nil, bad
			}
			csize := i32(pos)
			pos += 4
			if csize < 0 || csize > cbytes-pos {
				return nil, bad
			}
			part := buf[pos : pos+csize]
			if csize != neblock {
				var err error
				if part, err = refSplit(format, part, neblock); err != nil {
					return nil, err
				}
			}
			pos += csize
			tmp = append(tmp, part...)
		}
		block := make([]byte, len(tmp))
		switch {
		case flags&0x01 != 0 && ts > 1:
			byteUnshuffleGeneric(block, tmp, ts)
		case flags&0x04 != 0 && bsize >= ts:
			bitUnshuffleGeneric(block, tmp, ts)
		default:
			copy(block, tmp)
		}
		out = append(out, block...)
	}
	return out, nil
}

// refSplit decodes one split with the libraries directly (and refBloscLZ);
// the result must be exactly n bytes.
func refSplit(format int, src []byte, n int) ([]byte, error) {
	var out []byte
	var err error
	switch format {
	case 0:
		out, err = refBloscLZ(src, n)
	case 1:
		out = make([]byte, n)
		var k int
		k, err = lz4.UncompressBlock(src, out)
		out = out[:k]
	case 2:
		if l, lerr := snappy.DecodedLen(src); lerr != nil || l != n {
			return nil, fmt.Errorf("reference: snappy length %d: %v", l, lerr)
		}
		out, err = snappy.Decode(nil, src)
	case 3:
		var r io.ReadCloser
		if r, err = zlib.NewReader(bytes.NewReader(src)); err == nil {
			out, err = io.ReadAll(io.LimitReader(r, int64(n)+1))
			if err == nil {
				_, err = io.Copy(io.Discard, r) // reach the checksum
			}
		}
	case 4:
		out, err = zstdDecoder().DecodeAll(src, make([]byte, 0, n))
	}
	if err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, fmt.Errorf("reference: split decodes to %d bytes, want %d", len(out), n)
	}
	return out, nil
}

// refBloscLZ decodes a BloscLZ stream one byte at a time, as §1.7 reads.
func refBloscLZ(in []byte, maxOut int) ([]byte, error) {
	bad := errors.New("reference: bad blosclz")
	if len(in) == 0 {
		return []byte{}, nil
	}
	out := []byte{}
	ctrl := int(in[0] & 31)
	ip := 1
	for {
		if ctrl < 32 {
			n := ctrl + 1
			if ip+n > len(in) || len(out)+n > maxOut {
				return nil, bad
			}
			out = append(out, in[ip:ip+n]...)
			ip += n
		} else {
			length := ctrl>>5 - 1
			ofs := (ctrl & 31) << 8
			if length == 6 {
				for {
					if ip >= len(in) {
						return nil, bad
					}
					c := int(in[ip])
					ip++
					length += c
					if c != 255 {
						break
					}
				}
			}
			if ip >= len(in) {
				return nil, bad
			}
			code := int(in[ip])
			ip++
			length += 3
			dist := ofs + code + 1
			if code == 255 && ofs == 31<<8 {
				if ip+2 > len(in) {
					return nil, bad
				}
				dist = int(in[ip])<<8 + int(in[ip+1]) + 8191 + 1
				ip += 2
			}
			if dist > len(out) || len(out)+length > maxOut {
				return nil, bad
			}
			for range length {
				out = append(out, out[len(out)-dist])
			}
		}
		if ip >= len(in) {
			return out, nil
		}
		ctrl = int(in[ip])
		ip++
	}
}

// FuzzBlosc decodes arbitrary buffers: no panics, no writes past cap, and
// agreement with the reference decoder, DecodeBatch and BloscStreams.
func FuzzBlosc(f *testing.F) {
	if dir := testutil.SharedDir(); dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "conformance/numcodecs/fixture/blosc/codec.*/encoded.*.dat"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte{2, 1, 0x21, 4, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0})
	f.Fuzz(func(t *testing.T, src []byte) {
		room := 1 << 16
		if h, err := ParseBlosc(src); err == nil && h.Nbytes <= 4<<20 {
			room = h.Nbytes
		}
		bloscCheck(t, src, room)
	})
}
