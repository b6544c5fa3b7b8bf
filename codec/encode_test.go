package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// encodeConfigs are the configurations the encoder tests cover: every
// encoder, with the settings that change what it writes.
var encodeConfigs = func() []string {
	var out []string
	for _, cname := range []string{"lz4", "lz4hc", "blosclz", "zlib", "zstd"} {
		for _, clevel := range []int{0, 1, 5, 9} {
			for _, shuffle := range []int{-1, 0, 1, 2} {
				if slowCname(cname) && shuffle != 1 && !(clevel == 1 && shuffle == 2) {
					continue // the slow compressors: fewer combinations
				}
				out = append(out, fmt.Sprintf(`{"id":"blosc","cname":%q,"clevel":%d,"shuffle":%d}`, cname, clevel, shuffle))
			}
		}
		out = append(out, fmt.Sprintf(`{"id":"blosc","cname":%q,"clevel":5,"shuffle":2,"blocksize":10000}`, cname))
		if !slowCname(cname) {
			out = append(out, fmt.Sprintf(`{"id":"blosc","cname":%q,"clevel":5,"shuffle":1,"blocksize":256}`, cname))
		}
	}
	return append(out,
		`{"id":"blosc","cname":"lz4","clevel":5,"shuffle":"bitshuffle","typesize":2}`, // Zarr v3 spelling
		`{"id":"lz4"}`, `{"id":"lz4","acceleration":0}`, `{"id":"lz4","acceleration":10}`,
		`{"id":"zstd","level":1}`, `{"id":"zstd","level":3}`, `{"id":"zstd","level":9,"checksum":true}`, `{"id":"zstd","level":0}`,
		`{"id":"gzip","level":0}`, `{"id":"gzip","level":1}`, `{"id":"gzip","level":9}`,
		`{"id":"zlib","level":-1}`, `{"id":"zlib","level":0}`, `{"id":"zlib","level":1}`, `{"id":"zlib","level":9}`,
		`{"id":"shuffle","elementsize":4}`, `{"id":"shuffle","elementsize":8}`, `{"id":"shuffle","elementsize":0}`,
		`{"id":"delta","dtype":"<i4"}`, `{"id":"delta","dtype":">i2"}`, `{"id":"delta","dtype":"|u1"}`, `{"id":"delta","dtype":"<u8"}`,
		`{"id":"crc32"}`, `{"id":"adler32"}`, `{"id":"crc32c"}`, `{"id":"crc32","location":"end"}`,
		`{"id":"fletcher32"}`, `{"id":"jenkins_lookup3","initval":5,"prefix":[1,2,3]}`,
	)
}()

// slowCname is a Blosc compressor whose top levels take long.
func slowCname(c string) bool { return c == "zstd" || c == "zlib" || c == "lz4hc" }

// encodeInputs are chunk contents that take different paths through the
// encoders: compressible floats, runs, noise, and tiny or empty buffers.
func encodeInputs() map[string][]byte {
	r := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 20000)
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	floats := make([]byte, 0, 4*(1<<14+7)) // over two Blosc blocks at clevel 1, the last one short
	for i := range 1<<14 + 7 {
		floats = binary.LittleEndian.AppendUint32(floats, math.Float32bits(288+float32(math.Sin(float64(i)/300))+float32(r.NormFloat64()/8)))
	}
	runs := make([]byte, 40000)
	for i := range runs {
		runs[i] = byte(i / 5000)
	}
	return map[string][]byte{
		"empty": {}, "one": {7}, "small": compData(100, 1), "min-split": compData(128, 2),
		"array": compData(4096, 3), "odd": compData(4099, 4), "noise": noise, "floats": floats, "runs": runs,
	}
}

// decodable reports whether the decoder of config reads src's encoding
// back: numcodecs' LZ4 framing cannot hold an empty chunk, and the filters
// take whole elements only.
func decodable(config string, n int) bool {
	var c Config
	json.Unmarshal([]byte(config), &c)
	switch c.ID() {
	case "lz4":
		return n > 0
	case "shuffle":
		es, _ := c.Int("elementsize", 4)
		return es <= 1 || n%es == 0
	case "delta":
		s, _ := c.String("dtype", "")
		d, _ := ParseDType(s)
		return n%d.Size == 0
	}
	return true
}

// TestEncodeRoundTrip encodes every input with every encoder (and item
// sizes 1 to 16 for Blosc's typesize) and decodes the result with the
// decoder of the same configuration: it must give back the input. It also
// checks the bound, the one-byte-short ErrTooLarge, and that the loop, the
// pool and Encode agree byte for byte.
func TestEncodeRoundTrip(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	inputs := encodeInputs()
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range inputs {
			if !yield(k) {
				return
			}
		}
	})
	for _, config := range encodeConfigs {
		t.Run(config, func(t *testing.T) {
			d, err := New(json.RawMessage(config))
			if err != nil {
				t.Fatal(err)
			}
			itemSizes := []int{4} // the configuration says everything
			if strings.Contains(config, `"blosc"`) && !strings.Contains(config, `"typesize"`) {
				itemSizes = []int{1, 4, 8, 3, 300} // Blosc's typesize
				if strings.Contains(config, `"shuffle":0`) {
					itemSizes = []int{1, 4, 300}
				}
			}
			for _, itemSize := range itemSizes {
				e, err := NewEncoder(json.RawMessage(config), itemSize)
				if err != nil {
					t.Fatal(err)
				}
				var srcs [][]byte
				for _, name := range names {
					src := inputs[name]
					if !decodable(config, len(src)) {
						continue
					}
					srcs = append(srcs, src)
					bound := e.MaxEncodedLen(len(src))
					enc, err := e.Encode(make([]byte, 0, bound), src)
					if err != nil {
						t.Fatalf("itemsize %d, %s: %v", itemSize, name, err)
					}
					got, err := d.Decode(make([]byte, 0, len(src)), enc)
					if err != nil || !bytes.Equal(got, src) {
						t.Fatalf("itemsize %d, %s: decode of the encoding: %v (%d bytes, want %d)", itemSize, name, err, len(got), len(src))
					}
					// Exactly the room it needs works, one byte less does not.
					prefix := []byte("kept")
					exact, err := e.Encode(append(make([]byte, 0, len(prefix)+len(enc)), prefix...), src)
					if err != nil || !bytes.Equal(exact[len(prefix):], enc) || string(exact[:len(prefix)]) != "kept" {
						t.Fatalf("itemsize %d, %s: with exact room: %v", itemSize, name, err)
					}
					if len(enc) > 0 {
						if _, err := e.Encode(make([]byte, 0, len(enc)-1), src); !errors.Is(err, ErrTooLarge) {
							t.Fatalf("itemsize %d, %s: one byte short: %v, want ErrTooLarge", itemSize, name, err)
						}
					}
				}
				loop, pool := EncodeJobs(e, srcs), EncodeJobs(e, srcs)
				if err := EncoderBatch(e).EncodeBatch(context.Background(), loop); err != nil {
					t.Fatal(err)
				}
				if err := p.EncoderBatch(e).EncodeBatch(context.Background(), pool); err != nil {
					t.Fatal(err)
				}
				for i := range loop {
					if loop[i].Err != nil || pool[i].Err != nil || !bytes.Equal(loop[i].Dst, pool[i].Dst) {
						t.Fatalf("itemsize %d, job %d: loop (%v) and pool (%v) disagree", itemSize, i, loop[i].Err, pool[i].Err)
					}
				}
			}
		})
	}
}

// TestEncodeBatchCancel: jobs not started when the context ends get its
// error, from the loop and from the pool.
func TestEncodeBatchCancel(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	e := lz4Encoder{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, b := range map[string]BatchEncoder{"loop": EncoderBatch(e), "pool": p.EncoderBatch(e)} {
		jobs := EncodeJobs(e, [][]byte{compData(1000, 1), compData(1000, 2)})
		if err := b.EncodeBatch(ctx, jobs); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", name, err)
		}
		for i, j := range jobs {
			if !errors.Is(j.Err, context.Canceled) {
				t.Errorf("%s job %d: %v", name, i, j.Err)
			}
		}
	}
	p.Close()
	jobs := EncodeJobs(e, [][]byte{compData(10, 1)})
	if err := p.EncoderBatch(e).EncodeBatch(context.Background(), jobs); !errors.Is(err, ErrPoolClosed) {
		t.Errorf("closed pool: %v, want ErrPoolClosed", err)
	}
}

// TestNewEncoderErrors: ids without an encoder, object codecs and bad
// settings are refused with the codec package's errors.
func TestNewEncoderErrors(t *testing.T) {
	tests := []struct {
		config string
		err    error
	}{
		{`{"id":"nosuch"}`, ErrUnknownCodec},
		{`{"id":"bz2"}`, ErrUnknownCodec}, // decoded, not encoded
		{`{"id":"vlen-utf8"}`, ErrNotRaw},
		{`{"id":"blosc","cname":"snappy"}`, ErrConfig},
		{`{"id":"blosc","clevel":10}`, ErrConfig},
		{`{"id":"blosc","shuffle":3}`, ErrConfig},
		{`{"id":"blosc","shuffle":"byteshuffle"}`, ErrConfig},
		{`{"id":"gzip","level":10}`, ErrConfig},
		{`{"id":"zstd","checksum":"yes"}`, ErrConfig},
		{`"lz4"`, ErrConfig},
	}
	for _, tt := range tests {
		if _, err := NewEncoder(json.RawMessage(tt.config), 4); !errors.Is(err, tt.err) {
			t.Errorf("NewEncoder(%s) = %v, want %v", tt.config, err, tt.err)
		}
	}
	// Deltas zfuse does not encode: floats round, bools do not invert,
	// narrower storage overflows. They are refused up front.
	for _, c := range []string{`{"id":"delta","dtype":"<f8"}`, `{"id":"delta","dtype":"|b1"}`, `{"id":"delta","dtype":"<i4","astype":"<i2"}`} {
		if _, err := NewEncoder(json.RawMessage(c), 4); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", c, err)
		}
	}
	if ids := EncoderIDs(); !slices.Contains(ids, "blosc") || !slices.Contains(ids, "zstd") || slices.Contains(ids, "bz2") {
		t.Errorf("EncoderIDs() = %v", ids)
	}
}

// TestBloscBlockSize pins compute_blocksize of c-blosc 1.21 for the cases
// its rules distinguish (zarr-formats.md §1.4).
func TestBloscBlockSize(t *testing.T) {
	tests := []struct {
		cname                       string
		clevel, typesize, blocksize int
		nbytes, want                int
	}{
		{"lz4", 5, 4, 0, 1 << 20, 512 << 10},     // 32K*4, split: *4
		{"lz4", 9, 8, 0, 4 << 20, 1 << 20},       // 256K*8 capped at 1 MiB
		{"lz4", 1, 4, 0, 1 << 20, 64 << 10},      // 16K*4
		{"lz4", 5, 1, 0, 1 << 20, 128 << 10},     // typesize 1: 128K, not enlarged below 64K
		{"lz4", 5, 32, 0, 1 << 20, 128 << 10},    // typesize over 16: no split, no enlargement
		{"zstd", 5, 4, 0, 1 << 20, 256 << 10},    // HCR *2, never split
		{"zstd", 9, 4, 0, 4 << 20, 1 << 20},      // 64K*8*2
		{"lz4hc", 9, 4, 0, 4 << 20, 1 << 20},     // HCR and split: 256K capped, *4
		{"lz4", 0, 4, 0, 1 << 20, 8 << 10},       // clevel 0: L1/4, no enlargement
		{"lz4", 5, 1, 256, 1 << 20, 64 << 10},    // a forced blocksize that splits is enlarged
		{"lz4", 5, 2, 256, 1 << 20, 64 << 10},    // (as numcodecs 0.11 shows: u1 and i2 256 -> 65536)
		{"lz4", 5, 4, 256, 1 << 20, 256},         // one that does not split is kept (f4 256 -> 256)
		{"lz4", 5, 4, 1000, 1 << 20, 64 << 10},   // f4 1000 -> 65536
		{"lz4", 5, 8, 1000, 1 << 20, 1000},       // f8 1000 -> 1000
		{"zstd", 5, 1, 256, 1 << 20, 256},        // zstd never splits, never enlarges
		{"lz4", 5, 4, 100, 1 << 20, 128},         // forced below 128: 128
		{"lz4", 5, 4, 0, 10000, 10000},           // clipped to nbytes
		{"lz4", 5, 3, 0, 10001, 9999},            // and rounded down to a multiple of typesize
		{"lz4", 5, 4, 0, 3, 1},                   // smaller than one element
		{"blosclz", 5, 2, 0, 1 << 20, 256 << 10}, // 128K*2
	}
	for _, tt := range tests {
		e := &bloscEncoder{Cname: tt.cname, Clevel: tt.clevel, Shuffle: 1, Typesize: tt.typesize, Blocksize: tt.blocksize}
		if got := e.BlockSize(tt.nbytes); got != tt.want {
			t.Errorf("%s clevel %d typesize %d blocksize %d, %d bytes: %d, want %d", tt.cname, tt.clevel, tt.typesize, tt.blocksize, tt.nbytes, got, tt.want)
		}
	}
}

// TestBloscLayout checks the container an encoding has, as a c-blosc
// reader sees it: the header's flags (shuffle, split, memcpyed, format),
// typesize, block size, and block starts in order.
func TestBloscLayout(t *testing.T) {
	data := compData(1<<20, 9)
	tests := []struct {
		name  string
		e     bloscEncoder
		n     int
		flags byte
	}{
		{"lz4 shuffle split", bloscEncoder{Cname: "lz4", Clevel: 5, Shuffle: 1, Typesize: 8}, 1 << 20, 0x21},
		{"lz4 bitshuffle", bloscEncoder{Cname: "lz4", Clevel: 5, Shuffle: 2, Typesize: 8}, 1 << 20, 0x24},
		{"zstd never splits", bloscEncoder{Cname: "zstd", Clevel: 5, Shuffle: 1, Typesize: 8}, 1 << 20, 0x91},
		{"zlib split", bloscEncoder{Cname: "zlib", Clevel: 5, Shuffle: 1, Typesize: 8}, 1 << 20, 0x61},
		{"blosclz", bloscEncoder{Cname: "blosclz", Clevel: 5, Shuffle: 1, Typesize: 8}, 1 << 20, 0x01},
		{"typesize 32 does not split", bloscEncoder{Cname: "lz4", Clevel: 5, Shuffle: 1, Typesize: 32}, 1 << 20, 0x31},
		{"clevel 0 is memcpyed", bloscEncoder{Cname: "lz4", Clevel: 0, Shuffle: 1, Typesize: 8}, 1 << 20, 0x23},
		{"under 128 bytes is memcpyed", bloscEncoder{Cname: "lz4", Clevel: 5, Shuffle: 1, Typesize: 4}, 100, 0x33},
		{"typesize over 255 is 1: no shuffle, and the noisy bytes store raw", bloscEncoder{Cname: "lz4", Clevel: 5, Shuffle: 1, Typesize: 300}, 1 << 20, 0x23},
	}
	for _, tt := range tests {
		src := data[:tt.n]
		out, err := tt.e.Encode(make([]byte, 0, tt.e.MaxEncodedLen(tt.n)), src)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		h, err := ParseBlosc(out)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		ts := min(tt.e.Typesize, 255)
		if tt.e.Typesize > 255 {
			ts = 1
		}
		if h.Flags != tt.flags || h.Typesize != ts || h.Nbytes != tt.n || h.Cbytes != len(out) || h.Blocksize != tt.e.BlockSize(tt.n) {
			t.Errorf("%s: header %+v, want flags %#x typesize %d blocksize %d", tt.name, h, tt.flags, ts, tt.e.BlockSize(tt.n))
		}
		if streams, err := BloscStreams(out); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		} else {
			for i := 1; i < len(streams); i++ {
				if streams[i].SrcOff <= streams[i-1].SrcOff {
					t.Errorf("%s: stream %d starts at %d, before stream %d", tt.name, i, streams[i].SrcOff, i-1)
				}
			}
		}
	}
	// Noise that does not compress at all is stored raw, as c-blosc does
	// when the streams do not fit in nbytes+16.
	r := rand.New(rand.NewPCG(1, 1))
	noise := make([]byte, 100000)
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	e := bloscEncoder{Cname: "lz4", Clevel: 5, Shuffle: 0, Typesize: 1}
	out, _ := e.Encode(make([]byte, 0, e.MaxEncodedLen(len(noise))), noise)
	if h, _ := ParseBlosc(out); !h.Memcpyed() || len(out) != len(noise)+16 {
		t.Errorf("noise: flags %#x, %d bytes; want memcpyed, %d", h.Flags, len(out), len(noise)+16)
	}
}

// TestEncodersWriteWithinCap: an encoder writes nothing past cap(dst),
// whatever the room, and returns dst's own array.
func TestEncodersWriteWithinCap(t *testing.T) {
	src := compData(20000, 7)
	for _, config := range encodeConfigs {
		if !decodable(config, len(src)) {
			continue
		}
		e, err := NewEncoder(json.RawMessage(config), 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, room := range []int{0, 1000, e.MaxEncodedLen(len(src))} {
			encodeCheck(t, e, src, room)
		}
	}
}

// encodeCheck encodes src into room bytes and checks what every encoder
// promises: nothing written past cap(dst), dst's array used, only our
// error kinds.
func encodeCheck(t testing.TB, e Encoder, src []byte, room int) []byte {
	t.Helper()
	const guard = 64
	buf := make([]byte, room+guard)
	for i := range buf[room:] {
		buf[room+i] = 0xA5
	}
	out, err := e.Encode(buf[:0:room], src)
	for i, c := range buf[room:] {
		if c != 0xA5 {
			t.Fatalf("%T wrote past cap(dst) at cap+%d", e, i)
		}
	}
	switch {
	case err == nil && (len(out) > room || (len(out) > 0 && unsafe.SliceData(out) != unsafe.SliceData(buf))):
		t.Fatalf("%T: output (len %d cap %d) is not dst's array (cap %d)", e, len(out), cap(out), room)
	case err != nil && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrConfig):
		t.Fatalf("%T: error of no codec kind: %v", e, err)
	case err != nil:
		return nil
	}
	return out
}
