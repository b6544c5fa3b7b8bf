package codec

import (
	"bytes"
	stdgzip "compress/gzip"
	stdzlib "compress/zlib"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
)

// compData is n bytes that compress like array data: a slow float64
// signal with noisy low bits.
func compData(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, 0, n+8)
	for i := 0; len(b) < n; i++ {
		v := math.Float64bits(math.Sin(float64(i)/50)*1000) &^ 0xFFFFFF
		v |= uint64(r.IntN(256))
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b[:n]
}

// Encoders written with Go libraries, independent of the decoders tested.

func encGzip(level int) func([]byte) []byte {
	return func(p []byte) []byte {
		var w bytes.Buffer
		z, err := stdgzip.NewWriterLevel(&w, level)
		if err != nil {
			panic(err)
		}
		z.Write(p)
		z.Close()
		return w.Bytes()
	}
}

func encZlib(level int) func([]byte) []byte {
	return func(p []byte) []byte {
		var w bytes.Buffer
		z, err := stdzlib.NewWriterLevel(&w, level)
		if err != nil {
			panic(err)
		}
		z.Write(p)
		z.Close()
		return w.Bytes()
	}
}

func encZstd(opts ...zstd.EOption) func([]byte) []byte {
	return func(p []byte) []byte {
		e, err := zstd.NewWriter(nil, opts...)
		if err != nil {
			panic(err)
		}
		defer e.Close()
		return e.EncodeAll(p, nil)
	}
}

func encXZ(c xz.WriterConfig) func([]byte) []byte {
	return func(p []byte) []byte {
		var w bytes.Buffer
		z, err := c.NewWriter(&w)
		if err != nil {
			panic(err)
		}
		z.Write(p)
		z.Close()
		return w.Bytes()
	}
}

// encLZMAAlone writes a .lzma file; raw strips its 13-byte header, leaving
// the raw LZMA1 stream (with end marker) that liblzma's raw encoder writes.
func encLZMAAlone(raw bool) func([]byte) []byte {
	return func(p []byte) []byte {
		var w bytes.Buffer
		z, err := lzma.WriterConfig{DictCap: 1 << 16, EOSMarker: true}.NewWriter(&w)
		if err != nil {
			panic(err)
		}
		z.Write(p)
		z.Close()
		if raw {
			return w.Bytes()[lzma.HeaderLen:]
		}
		return w.Bytes()
	}
}

func encLZMA2(p []byte) []byte {
	var w bytes.Buffer
	z, err := lzma.Writer2Config{DictCap: 1 << 16}.NewWriter2(&w)
	if err != nil {
		panic(err)
	}
	z.Write(p)
	z.Close()
	return w.Bytes()
}

func encBase64(p []byte) []byte { return []byte(base64.StdEncoding.EncodeToString(p)) }

func compNew(t testing.TB, config string) Decoder {
	t.Helper()
	d, err := New(json.RawMessage(config))
	if err != nil {
		t.Fatalf("New(%s): %v", config, err)
	}
	return d
}

// compCases are the round trips every compressor must pass.
var compCases = []struct {
	name, config string
	enc          func([]byte) []byte
	checked      bool // a flipped byte must be detected
}{
	{"gzip/0", `{"id":"gzip","level":0}`, encGzip(0), true},
	{"gzip/1", `{"id":"gzip"}`, encGzip(1), true},
	{"gzip/9", `{"id":"gzip","level":9}`, encGzip(9), true},
	{"zlib/0", `{"id":"zlib","level":0}`, encZlib(0), true},
	{"zlib/6", `{"id":"zlib"}`, encZlib(6), true},
	{"zstd/default", `{"id":"zstd","level":1}`, encZstd(), false},
	{"zstd/checksum", `{"id":"zstd","checksum":true}`, encZstd(zstd.WithEncoderCRC(true)), true},
	{"zstd/nosize", `{"id":"zstd"}`, encZstd(zstd.WithSingleSegment(false), zstd.WithZeroFrames(true)), false},
	{"lzma/xz-crc64", `{"id":"lzma"}`, encXZ(xz.WriterConfig{DictCap: 1 << 16}), true},
	{"lzma/xz-crc32", `{"id":"lzma","format":1}`, encXZ(xz.WriterConfig{DictCap: 1 << 16, CheckSum: xz.CRC32}), true},
	{"lzma/xz-sha256", `{"id":"lzma","format":0}`, encXZ(xz.WriterConfig{DictCap: 1 << 16, CheckSum: xz.SHA256}), true},
	{"lzma/xz-none", `{"id":"lzma"}`, encXZ(xz.WriterConfig{DictCap: 1 << 16, NoCheckSum: true}), false},
	{"lzma/xz-blocks", `{"id":"lzma"}`, encXZ(xz.WriterConfig{DictCap: 1 << 16, BlockSize: 5000}), true},
	{"lzma/alone", `{"id":"lzma","format":2}`, encLZMAAlone(false), false},
	{"lzma/alone-auto", `{"id":"lzma","format":0}`, encLZMAAlone(false), false},
	{"lzma/raw-lzma2", `{"id":"lzma","format":3,"filters":[{"id":33,"preset":1}]}`, encLZMA2, false},
	{"lzma/raw-lzma1", `{"id":"lzma","format":3,"filters":[{"id":4611686018427387905,"dict_size":1048576}]}`, encLZMAAlone(true), false},
	{"base64", `{"id":"base64"}`, encBase64, false},
}

func TestCompressorsRoundTrip(t *testing.T) {
	for _, c := range compCases {
		d := compNew(t, c.config)
		sizes := []int{0, 1, 100, 4096, 70000}
		if strings.HasPrefix(c.name, "lzma/") {
			sizes[4] = 20000 // ulikunitz/xz decodes about 5 MB/s, 0.5 under -race
		}
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/%d", c.name, n), func(t *testing.T) {
				want := compData(n, uint64(n))
				src := c.enc(want)
				compCheck(t, d, src, want, c.checked)
			})
		}
	}
}

// compCheck runs the checks every decoder must pass on one (src, want).
func compCheck(t *testing.T, d Decoder, src, want []byte, checked bool) {
	t.Helper()
	got, err := DecodeFull(d, make([]byte, 0, len(want)), src)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("decode: %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	// Appends after what dst holds, and keeps the caller's array.
	dst := append(make([]byte, 0, 3+len(want)), "abc"...)
	got, err = d.Decode(dst, src)
	if err != nil || string(got[:3]) != "abc" || !bytes.Equal(got[3:], want) || &got[0] != &dst[:1][0] {
		t.Fatalf("decode after a prefix: %d bytes, %v", len(got), err)
	}
	if len(want) > 0 {
		short := make([]byte, 0, len(want)-1)
		if got, err := d.Decode(short, src); !errors.Is(err, ErrTooLarge) || len(got) != 0 {
			t.Fatalf("one byte too little room: %d bytes, %v; want ErrTooLarge", len(got), err)
		}
	}
	if len(src) > 1 {
		// Truncation must not pass silently as a shorter chunk.
		_, err := DecodeFull(d, make([]byte, 0, len(want)), src[:len(src)-1])
		if err == nil {
			t.Fatalf("truncated input decoded")
		}
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrChecksum) {
			t.Fatalf("truncated input: %v, want ErrCorrupt or ErrChecksum", err)
		}
		oneLine(t, err)
	}
	if checked && len(want) > 0 {
		bad := bytes.Clone(src)
		bad[len(bad)/2] ^= 0x10
		got, err := DecodeFull(d, make([]byte, 0, len(want)), bad)
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("a flipped byte in a checked format decoded to different data without error")
		}
		oneLine(t, err)
	}
	compAgree(t, d, []Job{
		{Src: src, Dst: make([]byte, 0, len(want))},
		{Src: src[:len(src)/2], Dst: make([]byte, 0, len(want))},
		{Src: src, Dst: make([]byte, 0, len(want)/2)},
	})
}

// oneLine fails unless err, if any, says it on one line: it ends up
// inside the log line of the failed read.
func oneLine(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Fatalf("the error has a newline in it: %q", err)
	}
}

// compAgree checks that Batch, a Pool and Decode agree on jobs.
func compAgree(t testing.TB, d Decoder, jobs []Job) {
	t.Helper()
	clone := func() []Job {
		c := make([]Job, len(jobs))
		for i, j := range jobs {
			c[i] = Job{Src: j.Src, Dst: make([]byte, 0, cap(j.Dst))}
		}
		return c
	}
	a, b := clone(), clone()
	if err := Batch(d).DecodeBatch(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	p := NewPool(2)
	defer p.Close()
	if err := p.Batch(d).DecodeBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	for i := range jobs {
		got, err := d.Decode(make([]byte, 0, cap(jobs[i].Dst)), jobs[i].Src)
		if !bytes.Equal(a[i].Dst, got) || !bytes.Equal(b[i].Dst, got) ||
			(a[i].Err == nil) != (err == nil) || (b[i].Err == nil) != (err == nil) {
			t.Fatalf("job %d: Decode (%d, %v), Batch (%d, %v), Pool (%d, %v) disagree",
				i, len(got), err, len(a[i].Dst), a[i].Err, len(b[i].Dst), b[i].Err)
		}
	}
}

func TestGzipMembers(t *testing.T) {
	d := compNew(t, `{"id":"gzip"}`)
	a, b := compData(5000, 1), compData(7000, 2)
	ea, eb := encGzip(1)(a), encGzip(9)(b)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name string
		src  []byte
		want []byte
		err  error
	}{
		{"two members", cat(ea, eb), cat(a, b), nil},
		{"empty member", cat(ea, encGzip(1)(nil), eb), cat(a, b), nil},
		{"zero padding between and after", cat(ea, make([]byte, 5), eb, make([]byte, 3)), cat(a, b), nil},
		{"empty input (Python decodes it to nothing)", nil, nil, nil},
		{"leading zeros", cat(make([]byte, 4), ea), nil, ErrCorrupt},
		{"garbage after a member", cat(ea, []byte("xyz")), nil, ErrCorrupt},
		{"second member truncated", cat(ea, eb[:len(eb)-4]), nil, ErrCorrupt},
		{"bad crc", cat(ea[:len(ea)-8], []byte{1, 2, 3, 4}, ea[len(ea)-4:]), nil, ErrChecksum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err != nil {
				_, err := d.Decode(make([]byte, 0, 1<<16), tt.src)
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			got, err := DecodeFull(d, make([]byte, 0, len(tt.want)), tt.src)
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("got %d bytes, %v", len(got), err)
			}
		})
	}
	// The second member overflowing is ErrTooLarge, not success.
	if _, err := d.Decode(make([]byte, 0, len(a)), cat(ea, eb)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("two members into room for one: %v", err)
	}
}

func TestZlibEdges(t *testing.T) {
	d := compNew(t, `{"id":"zlib"}`)
	a := compData(5000, 3)
	ea := encZlib(6)(a)
	// Python's zlib.decompress ignores bytes after the Adler-32 trailer.
	if got, err := DecodeFull(d, make([]byte, 0, len(a)), append(bytes.Clone(ea), "xyz"...)); err != nil || !bytes.Equal(got, a) {
		t.Fatalf("trailing bytes: %v", err)
	}
	bad := bytes.Clone(ea)
	bad[len(bad)-1] ^= 1
	if _, err := d.Decode(make([]byte, 0, len(a)), bad); !errors.Is(err, ErrChecksum) {
		t.Fatalf("bad adler32: %v, want ErrChecksum", err)
	}
	if _, err := d.Decode(make([]byte, 0, 10), nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("empty input: %v, want ErrCorrupt", err)
	}
}

func TestZstdFrames(t *testing.T) {
	d := compNew(t, `{"id":"zstd"}`)
	a, b := compData(5000, 4), compData(9000, 5)
	ea := encZstd()(a)
	eb := encZstd(zstd.WithEncoderCRC(true), zstd.WithSingleSegment(false))(b)
	skippable := []byte{0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'z', 'f', 's'}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	got, err := DecodeFull(d, make([]byte, 0, len(a)+len(b)), cat(skippable, ea, skippable, eb))
	if err != nil || !bytes.Equal(got, cat(a, b)) {
		t.Fatalf("two frames and skippable frames: %d bytes, %v", len(got), err)
	}
	bad := bytes.Clone(eb)
	bad[len(bad)-1] ^= 1 // the content checksum
	if _, err := d.Decode(make([]byte, 0, len(b)), bad); !errors.Is(err, ErrChecksum) {
		t.Fatalf("bad content checksum: %v, want ErrChecksum", err)
	}
	// A frame whose header says it is larger than dst is refused before decoding.
	if _, err := d.Decode(make([]byte, 0, len(a)-1), ea); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("content size over cap: %v", err)
	}
	if _, err := d.Decode(make([]byte, 0, 10), []byte("not zstd")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage: %v, want ErrCorrupt", err)
	}
}

func TestXZStreams(t *testing.T) {
	d := compNew(t, `{"id":"lzma"}`)
	a, b := compData(5000, 6), compData(9000, 7)
	ea, eb := encXZ(xz.WriterConfig{DictCap: 1 << 16})(a), encXZ(xz.WriterConfig{DictCap: 1 << 16, CheckSum: xz.CRC32})(b)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name string
		src  []byte
		want []byte
		err  error
	}{
		{"two streams", cat(ea, eb), cat(a, b), nil},
		{"stream padding", cat(ea, make([]byte, 8), eb, make([]byte, 4)), cat(a, b), nil},
		{"padding not a multiple of 4", cat(ea, make([]byte, 3)), nil, ErrCorrupt},
		{"garbage after a stream", cat(ea, []byte("garbage!")), nil, ErrCorrupt},
		{"empty", nil, nil, ErrCorrupt},
		{"bad footer magic", cat(ea[:len(ea)-1], []byte{'Q'}), nil, ErrCorrupt},
		{"bad block check", flipAt(ea, len(ea)-12-12-1), nil, ErrChecksum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err != nil {
				_, err := d.Decode(make([]byte, 0, 1<<16), tt.src)
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			got, err := DecodeFull(d, make([]byte, 0, len(tt.want)), tt.src)
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("got %d bytes, %v", len(got), err)
			}
		})
	}
}

func flipAt(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 1
	return c
}

// TestLZMADictionaryBound checks that a small chunk written with a 64 MiB
// dictionary (preset 9) is decoded without allocating that dictionary.
func TestLZMADictionaryBound(t *testing.T) {
	want := compData(4096, 8)
	cases := []struct {
		name, config string
		src          []byte
	}{
		{"xz", `{"id":"lzma"}`, encXZ(xz.WriterConfig{DictCap: 64 << 20})(want)},
		{"alone", `{"id":"lzma","format":2}`, func() []byte {
			var w bytes.Buffer
			z, _ := lzma.WriterConfig{DictCap: 64 << 20, EOSMarker: true}.NewWriter(&w)
			z.Write(want)
			z.Close()
			return w.Bytes()
		}()},
		{"raw", `{"id":"lzma","format":3,"filters":[{"id":33,"preset":9}]}`, encLZMA2(want)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := compNew(t, c.config)
			dst := make([]byte, 0, len(want))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			const runs = 5
			for range runs {
				got, err := DecodeFull(d, dst, c.src)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("decode: %v", err)
				}
			}
			runtime.ReadMemStats(&after)
			if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 1<<20 {
				t.Fatalf("%d bytes allocated per 4 KiB chunk; the dictionary is not bounded by the chunk", per)
			}
		})
	}
}

func TestLZMAConfig(t *testing.T) {
	tests := []struct {
		config string
		err    error
	}{
		{`{"id":"lzma","format":3,"filters":[{"id":3,"dist":4},{"id":33,"preset":1}]}`, ErrConfig},
		{`{"id":"lzma","format":3,"filters":[{"id":4}]}`, ErrConfig},
		{`{"id":"lzma","format":1,"filters":[{"id":3,"dist":4},{"id":33}]}`, ErrConfig},
		{`{"id":"lzma","format":3,"filters":null}`, ErrConfig},
		{`{"id":"lzma","format":3,"filters":[{"id":33,"preset":10}]}`, ErrConfig},
		{`{"id":"lzma","format":4}`, ErrConfig},
		{`{"id":"lzma","format":3,"filters":[{"id":33,"preset":2147483654}]}`, nil}, // 6 | extreme
		{`{"id":"lzma","format":1,"check":-1,"preset":null,"filters":null}`, nil},
	}
	for _, tt := range tests {
		_, err := New(json.RawMessage(tt.config))
		if tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
			t.Errorf("New(%s) = %v, want %v", tt.config, err, tt.err)
		}
	}
	_, err := New(json.RawMessage(`{"id":"lzma","format":3,"filters":[{"id":3,"dist":4},{"id":33}]}`))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("delta")) {
		t.Errorf("unsupported filter error does not name it: %v", err)
	}
}

func TestBase64Lenient(t *testing.T) {
	d := compNew(t, `{"id":"base64"}`)
	want := compData(100, 9)
	enc := encBase64(want)
	wrapped := append(append(bytes.Clone(enc[:40]), "\n "...), enc[40:]...)
	if got, err := DecodeFull(d, make([]byte, 0, len(want)), wrapped); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("base64 with a newline: %v", err)
	}
	if _, err := d.Decode(make([]byte, 0, 100), []byte("abc")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad length: %v", err)
	}
}
