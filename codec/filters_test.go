package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// npyData returns the payload of the .npy file at path, which must hold
// raw elements: the array in its memory order, which is what a filter
// decodes to.
func npyData(t testing.TB, path string) []byte {
	t.Helper()
	a, err := testutil.ReadNPY(path)
	if err != nil {
		t.Fatal(err)
	}
	if a.Object() {
		t.Fatalf("%s: object array", path)
	}
	return a.Data
}

func filterNew(t testing.TB, config string) Decoder {
	t.Helper()
	d, err := New(json.RawMessage(config))
	if err != nil {
		t.Fatalf("New(%s): %v", config, err)
	}
	return d
}

// filterDecode decodes src into a fresh dst of capacity room, and checks
// that nothing was written past it.
func filterDecode(t testing.TB, d Decoder, src []byte, room int) ([]byte, error) {
	t.Helper()
	buf := bytes.Repeat([]byte{0xA5}, room+64)
	got, err := d.Decode(buf[:0:room], src)
	if len(got) > room {
		t.Fatalf("decoded %d bytes into room for %d", len(got), room)
	}
	for i, b := range buf[room:] {
		if b != 0xA5 {
			t.Fatalf("wrote past cap(dst) at +%d", i)
		}
	}
	return got, err
}

// Encoding helpers for hand-written vectors, independent of dtype.go.
func le[T any](v ...T) []byte { return testutil.Must(binary.Append(nil, binary.LittleEndian, v)) }
func be[T any](v ...T) []byte { return testutil.Must(binary.Append(nil, binary.BigEndian, v)) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

var filterVectors = []struct {
	name, config string
	src, want    []byte
	err          error // wanted from Decode
}{
	// delta
	{"delta numcodecs doc example", `{"id":"delta","dtype":"<i2","astype":"|i1"}`,
		[]byte{100, 2, 2, 2, 2, 2, 2, 2, 2, 2}, le[int16](100, 102, 104, 106, 108, 110, 112, 114, 116, 118), nil},
	{"delta u1 wraps", `{"id":"delta","dtype":"|u1"}`, []byte{200, 100, 255}, []byte{200, 44, 43}, nil},
	{"delta i1 deltas sign-extend into i4", `{"id":"delta","dtype":"<i4","astype":"|i1"}`,
		[]byte{0xff, 0xff, 0x80}, le[int32](-1, -2, -130), nil},
	{"delta i4 wraps at 2^31", `{"id":"delta","dtype":"<i4"}`,
		le[int32](math.MaxInt32, 1, 1), le[int32](math.MaxInt32, math.MinInt32, math.MinInt32+1), nil},
	{"delta big-endian i2", `{"id":"delta","dtype":">i2"}`, be[int16](1, 2, -4), be[int16](1, 3, -1), nil},
	{"delta big-endian astype to little", `{"id":"delta","dtype":"<u2","astype":">u2"}`, be[uint16](1, 0xffff), le[uint16](1, 0), nil},
	{"delta bool is a running or", `{"id":"delta","dtype":"|b1"}`, []byte{0, 1, 0, 0}, []byte{0, 1, 1, 1}, nil},
	{"delta bool keeps the first raw byte", `{"id":"delta","dtype":"|b1"}`, []byte{2, 0, 3}, []byte{2, 1, 1}, nil},
	{"delta f4 adds in float32", `{"id":"delta","dtype":"<f4"}`,
		le[float32](1, 0x1p-24, 0x1p-24), le[float32](1, 1, 1), nil},
	{"delta f4 big-endian", `{"id":"delta","dtype":">f4"}`, be[float32](1.5, 0.25), be[float32](1.5, 1.75), nil},
	{"delta f8", `{"id":"delta","dtype":"<f8"}`, le(1e16, 1, 1, 4), le(1e16, 1e16, 1e16, 1e16+4), nil},
	{"delta f8 deltas sum in f8 before the int cast", `{"id":"delta","dtype":"<i4","astype":"<f8"}`,
		le(0.7, 0.7, 0.7), le[int32](0, 1, 2), nil},
	{"delta i4 into f4 sums in f8", `{"id":"delta","dtype":"<f4","astype":"<i4"}`,
		le[int32](1<<24, 1, 1), le[float32](1<<24, 1<<24, 1<<24+2), nil},
	{"delta timedelta NaT absorbs", `{"id":"delta","dtype":"<m8[s]"}`,
		le[int64](5, math.MinInt64, 1), le[int64](5, math.MinInt64, math.MinInt64), nil},
	{"delta v3 dtype name", `{"id":"delta","dtype":"int32"}`, le[int32](3, -1), le[int32](3, 2), nil},
	{"delta empty", `{"id":"delta","dtype":"<i4"}`, nil, nil, nil},
	{"delta ragged input", `{"id":"delta","dtype":"<i4"}`, []byte{1, 2, 3}, nil, ErrCorrupt},

	// fixedscaleoffset
	{"fso numcodecs doc example", `{"id":"fixedscaleoffset","offset":1000,"scale":10,"dtype":"<f8","astype":"|u1"}`,
		[]byte{0, 1, 2, 10}, le(1000.0, 1000.1, 1000.2, 1001.0), nil},
	{"fso float to int truncates", `{"id":"fixedscaleoffset","offset":0,"scale":10,"dtype":"<i4","astype":"<i2"}`,
		le[int16](-15, 15, 19, -9), le[int32](-1, 1, 1, 0), nil},
	{"fso f4 computes in float32", `{"id":"fixedscaleoffset","offset":0.1,"scale":7,"dtype":"<f4","astype":"<f4"}`,
		le[float32](1), le[uint32](0x3e78af8c), nil}, // in float64 it would be 0x3e78af8b
	{"fso f2 divides in float16", `{"id":"fixedscaleoffset","offset":0,"scale":10,"dtype":"<f4","astype":"<f2"}`,
		le[uint16](0x3c00), le[uint32](0x3dccc000), nil}, // half(0.1), not float32(0.1)
	{"fso f2 with scale 1000 divides in float32", `{"id":"fixedscaleoffset","offset":0,"scale":1000,"dtype":"<f4","astype":"<f2"}`,
		le[uint16](0x3c00), le[uint32](0x3a83126f), nil},
	{"fso big-endian both", `{"id":"fixedscaleoffset","offset":-1,"scale":2,"dtype":">f8","astype":">i4"}`,
		be[int32](3), be(0.5), nil},

	// quantize
	{"quantize f2 to f8", `{"id":"quantize","digits":1,"dtype":"<f8","astype":"<f2"}`,
		le[uint16](0x3c00, 0x7e00, 0x0001, 0xfc00), le[uint64](0x3ff0000000000000, 0x7ff8000000000000, 0x3e70000000000000, 0xfff0000000000000), nil},
	{"quantize f8 to f4 rounds to even", `{"id":"quantize","digits":5,"dtype":"<f4","astype":"<f8"}`,
		le(1+0x1p-24, 1+0x1p-24+0x1p-50), le[float32](1, 1+0x1p-23), nil},

	// astype
	{"astype i2 to i4", `{"id":"astype","encode_dtype":"<i2","decode_dtype":"<i4"}`, le[int16](-2, 300), le[int32](-2, 300), nil},
	{"astype i4 to u1 wraps", `{"id":"astype","encode_dtype":"<i4","decode_dtype":"|u1"}`, le[int32](300, -1), []byte{44, 255}, nil},
	{"astype f8 to i1 truncates then wraps", `{"id":"astype","encode_dtype":"<f8","decode_dtype":"|i1"}`,
		le(300.6, -2.5, 70000.9), []byte{44, 0xfe, 112}, nil},
	{"astype f8 NaN to i4", `{"id":"astype","encode_dtype":"<f8","decode_dtype":"<i4"}`,
		le(math.NaN(), 1e10), le[int32](math.MinInt32, math.MinInt32), nil},
	{"astype f8 to f2 rounds once", `{"id":"astype","encode_dtype":"<f8","decode_dtype":"<f2"}`,
		le(1+0x1p-11+0x1p-40, 1+0x1p-11, 65520, 0x1p-25+0x1p-60), le[uint16](0x3c01, 0x3c00, 0x7c00, 0x0001), nil},
	{"astype f8 to u4 out of range: vector body, then scalar tail", `{"id":"astype","encode_dtype":"<f8","decode_dtype":"<u4"}`,
		le(1e10, 1e10, 1e10, 1e10, 1e10, -1), le[uint32](0, 0, 0, 0, 1410065408, math.MaxUint32), nil},
	{"astype c8 to u4 out of range: the vector body stops a block early", `{"id":"astype","encode_dtype":"<c8","decode_dtype":"<u4"}`,
		le[float32](1e10, 0, 1e10, 0, 1e10, 0, 1e10, 0, 1e10, 0, 1e10, 0, 1e10, 0, 1e10, 0),
		le[uint32](0, 0, 0, 0, 1410065408, 1410065408, 1410065408, 1410065408), nil},
	{"astype to bool", `{"id":"astype","encode_dtype":"<f8","decode_dtype":"|b1"}`, le(math.NaN(), 0, -0.0, 0.1), []byte{1, 0, 0, 1}, nil},
	{"astype bool raw byte", `{"id":"astype","encode_dtype":"|b1","decode_dtype":"|i1"}`, []byte{2, 0, 1}, []byte{1, 0, 1}, nil},
	{"astype big-endian f4 to little f8", `{"id":"astype","encode_dtype":">f4","decode_dtype":"<f8"}`, be[float32](1.5), le(1.5), nil},
	{"astype u8 to f4 rounds once", `{"id":"astype","encode_dtype":"<u8","decode_dtype":"<f4"}`,
		le[uint64](1<<63 + 1<<39 + 1), le[float32](1<<63 + 1<<40), nil},
	{"astype ragged", `{"id":"astype","encode_dtype":"<i2","decode_dtype":"<i4"}`, []byte{1}, nil, ErrCorrupt},

	// packbits
	{"packbits numcodecs doc example", `{"id":"packbits"}`, []byte{4, 144}, []byte{1, 0, 0, 1}, nil},
	{"packbits full byte", `{"id":"packbits"}`, []byte{0, 0xff, 0x01}, cat(bytes.Repeat([]byte{1}, 8), []byte{0, 0, 0, 0, 0, 0, 0, 1}), nil},
	{"packbits seven pad bits", `{"id":"packbits"}`, []byte{7, 0x80}, []byte{1}, nil},
	{"packbits empty array", `{"id":"packbits"}`, []byte{0}, nil, nil},
	{"packbits no header", `{"id":"packbits"}`, nil, nil, ErrCorrupt},
	{"packbits pad 8", `{"id":"packbits"}`, []byte{8, 0}, nil, ErrCorrupt},
	{"packbits pad without data", `{"id":"packbits"}`, []byte{1}, nil, ErrCorrupt},

	// shuffle
	{"shuffle 2", `{"id":"shuffle","elementsize":2}`, []byte{1, 2, 3, 4, 5, 6}, []byte{1, 4, 2, 5, 3, 6}, nil},
	{"shuffle 4 default", `{"id":"shuffle"}`, []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{1, 3, 5, 7, 2, 4, 6, 8}, nil},
	{"shuffle 0 is a copy", `{"id":"shuffle","elementsize":0}`, []byte{1, 2, 3}, []byte{1, 2, 3}, nil},
	{"shuffle ragged", `{"id":"shuffle","elementsize":4}`, []byte{1, 2, 3, 4, 5, 6}, nil, ErrCorrupt},

	// bitround
	{"bitround is a copy", `{"id":"bitround","keepbits":3}`, le(1.5), le(1.5), nil},
}

func TestFilterVectors(t *testing.T) {
	for _, tc := range filterVectors {
		t.Run(tc.name, func(t *testing.T) {
			d := filterNew(t, tc.config)
			got, err := filterDecode(t, d, tc.src, len(tc.want)+8)
			if !errors.Is(err, tc.err) || (err != nil && tc.err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if tc.err != nil {
				return
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("got  %x\nwant %x", got, tc.want)
			}
			// The same through the batch API, appending after a prefix.
			jobs := []Job{{Src: tc.src, Dst: make([]byte, 0, len(tc.want))}}
			if err := Batch(d).DecodeBatch(context.Background(), jobs); err != nil || jobs[0].Err != nil {
				t.Fatalf("batch: %v %v", err, jobs[0].Err)
			}
			if !bytes.Equal(jobs[0].Dst, tc.want) {
				t.Fatalf("batch got %x", jobs[0].Dst)
			}
			pre, err := d.Decode(append(make([]byte, 0, 3+len(tc.want)), 7, 8, 9), tc.src)
			if err != nil || !bytes.Equal(pre, cat([]byte{7, 8, 9}, tc.want)) {
				t.Fatalf("append after prefix: %x, %v", pre, err)
			}
			if s, ok := d.(EncodedSizer); ok {
				n, err := s.EncodedLen(len(tc.want))
				if err != nil || n != len(tc.src) {
					t.Fatalf("EncodedLen(%d) = %d, %v; want %d", len(tc.want), n, err, len(tc.src))
				}
			} else {
				t.Fatalf("%T is not an EncodedSizer", d)
			}
		})
	}
}

// TestFilterTooLarge: one byte too little room is ErrTooLarge, and
// nothing is written past cap(dst).
func TestFilterTooLarge(t *testing.T) {
	for _, tc := range filterVectors {
		if tc.err != nil || len(tc.want) == 0 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			d := filterNew(t, tc.config)
			if _, err := filterDecode(t, d, tc.src, len(tc.want)-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
		})
	}
}

func TestFilterConfigErrors(t *testing.T) {
	for _, config := range []string{
		`{"id":"delta"}`,
		`{"id":"delta","dtype":"<f16"}`,
		`{"id":"delta","dtype":"|S3"}`,
		`{"id":"delta","dtype":"<U4"}`,
		`{"id":"delta","dtype":"|O"}`,
		`{"id":"delta","dtype":"<i3"}`,
		`{"id":"delta","dtype":7}`,
		`{"id":"delta","dtype":"<M8[ns]"}`, // numpy cannot add datetimes
		`{"id":"delta","dtype":"<m8[s]","astype":"<f8"}`,
		`{"id":"delta","dtype":"<i4","astype":"<M8"}`,
		`{"id":"fixedscaleoffset","offset":0,"dtype":"<f8"}`,
		`{"id":"fixedscaleoffset","scale":1,"dtype":"<f8"}`,
		`{"id":"fixedscaleoffset","scale":"10","offset":0,"dtype":"<f8"}`,
		`{"id":"fixedscaleoffset","scale":1e999,"offset":0,"dtype":"<f8"}`,
		`{"id":"fixedscaleoffset","scale":100000000000000000000,"offset":0,"dtype":"<f8"}`,
		`{"id":"fixedscaleoffset","scale":1,"offset":0,"dtype":"<f8","astype":"<c8"}`,
		`{"id":"quantize","digits":2,"dtype":"<i4"}`,
		`{"id":"quantize","digits":2,"dtype":"<f8","astype":"<i2"}`,
		`{"id":"quantize","dtype":"<f8"}`,
		`{"id":"astype","encode_dtype":"<i4"}`,
		`{"id":"astype","encode_dtype":"<M8[s]","decode_dtype":"<m8[s]"}`,
		`{"id":"astype","encode_dtype":"<M8[s]","decode_dtype":"<M8[ns]"}`,
		`{"id":"bitround"}`,
		`{"id":"bitround","keepbits":-1}`,
		`{"id":"shuffle","elementsize":"4"}`,
	} {
		if _, err := New(json.RawMessage(config)); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%s) = %v, want ErrConfig", config, err)
		}
	}
}

func TestDType(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want DType
		str  string
	}{
		{"<f8", DType{Kind: 'f', Size: 8}, "<f8"},
		{">i2", DType{Kind: 'i', Size: 2, Big: true}, ">i2"},
		{"|b1", DType{Kind: 'b', Size: 1}, "|b1"},
		{"bool", DType{Kind: 'b', Size: 1}, "|b1"},
		{">u1", DType{Kind: 'u', Size: 1}, "|u1"},
		{"|i4", DType{Kind: 'i', Size: 4}, "<i4"},
		{"=f4", DType{Kind: 'f', Size: 4}, "<f4"},
		{"f2", DType{Kind: 'f', Size: 2}, "<f2"},
		{"int32", DType{Kind: 'i', Size: 4}, "<i4"},
		{"uint8", DType{Kind: 'u', Size: 1}, "|u1"},
		{"float64", DType{Kind: 'f', Size: 8}, "<f8"},
		{">c16", DType{Kind: 'c', Size: 16, Big: true}, ">c16"},
		{"<M8[ns]", DType{Kind: 'M', Size: 8, Unit: "ns"}, "<M8[ns]"},
		{"<m8[10s]", DType{Kind: 'm', Size: 8, Unit: "10s"}, "<m8[10s]"},
		{"datetime64[ms]", DType{Kind: 'M', Size: 8, Unit: "ms"}, "<M8[ms]"},
		// Dtypes that arrays have and filters do not take.
		{"|S3", DType{Kind: 'S', Size: 3}, "|S3"},
		{">S3", DType{Kind: 'S', Size: 3}, "|S3"},
		{"<U4", DType{Kind: 'U', Size: 16}, "<U4"},
		{">U1", DType{Kind: 'U', Size: 4, Big: true}, ">U1"},
		{"|V8", DType{Kind: 'V', Size: 8}, "|V8"},
		{"|S0", DType{Kind: 'S', Size: 0}, "|S0"},
		{"|O", DType{Kind: 'O', Size: 8}, "|O"},
		{"|O8", DType{Kind: 'O', Size: 8}, "|O"},
		{"<f16", DType{Kind: 'f', Size: 16}, "<f16"},
		{">c32", DType{Kind: 'c', Size: 32, Big: true}, ">c32"},
		{"<M8", DType{Kind: 'M', Size: 8}, "<M8"},
		{"datetime64", DType{Kind: 'M', Size: 8}, "<M8"},
		// Datetime units as numpy writes them.
		{"<M8[generic]", DType{Kind: 'M', Size: 8}, "<M8"},
		{"<M8[1s]", DType{Kind: 'M', Size: 8, Unit: "s"}, "<M8[s]"},
		{">m8[μs]", DType{Kind: 'm', Size: 8, Unit: "us", Big: true}, ">m8[us]"},
		{"<M8[10μs]", DType{Kind: 'M', Size: 8, Unit: "10us"}, "<M8[10us]"},
		{"<M8[2147483647D]", DType{Kind: 'M', Size: 8, Unit: "2147483647D"}, "<M8[2147483647D]"},
	} {
		got, err := ParseDType(tc.in)
		if err != nil || got != tc.want || got.String() != tc.str {
			t.Errorf("ParseDType(%q) = %+v (%s), %v; want %+v (%s)", tc.in, got, got, err, tc.want, tc.str)
		}
	}
	for _, p := range []struct {
		name  string
		parse func(string) (DType, error)
		bad   []string
	}{
		{"ParseDType", ParseDType, []string{"", "<", "<f", "<f1", "<i3", "<b2", "<i04", "<i+4", "<f32", "<c4", "|O4", "<M4", "|S-1", "|S2000000000",
			"<M8[xs]", "<M8[0s]", "<M8[010s]", "<M8[2147483648s]", "<M8[2generic]", "<M8[]", "<m8[s", "<i4[s]", "x4", "int128"}},
		// Filters compute with numbers only.
		{"parseFilterDType", parseFilterDType, []string{"", "<", "<f", "<f16", "<f1", "<i3", "<b2", "|S3", "<U4", "|O", "|V8", "<M8",
			"<M8[xs]", "<M8[0s]", "<m8[s", "x4", "int128", "<c32", "<m8[generic]"}},
	} {
		for _, bad := range p.bad {
			if d, err := p.parse(bad); !errors.Is(err, ErrConfig) {
				t.Errorf("%s(%q) = %+v, %v; want ErrConfig", p.name, bad, d, err)
			}
		}
	}
	for _, good := range []string{"<f8", "|b1", "int32", "<c16", "<M8[ns]", ">m8[10s]"} {
		if _, err := parseFilterDType(good); err != nil {
			t.Errorf("parseFilterDType(%q): %v", good, err)
		}
	}
}

// TestDTypeAccess checks the element accessors in both byte orders.
func TestDTypeAccess(t *testing.T) {
	b := make([]byte, 8)
	for _, tc := range []struct {
		dt    string
		bytes []byte
		i     int64
		u     uint64
	}{
		{"<i2", []byte{0xfe, 0xff}, -2, 0xfffe},
		{">i2", []byte{0xff, 0xfe}, -2, 0xfffe},
		{"<u4", []byte{1, 0, 0, 0x80}, 1<<31 + 1, 1<<31 + 1},
		{">i8", []byte{0x80, 0, 0, 0, 0, 0, 0, 1}, math.MinInt64 + 1, 1<<63 + 1},
		{"|i1", []byte{0x80}, -128, 0x80},
	} {
		d, _ := ParseDType(tc.dt)
		if got := d.Int(tc.bytes); got != tc.i {
			t.Errorf("%s Int = %d, want %d", tc.dt, got, tc.i)
		}
		if got := d.Uint(tc.bytes); got != tc.u {
			t.Errorf("%s Uint = %#x, want %#x", tc.dt, got, tc.u)
		}
		d.PutInt(b, tc.i)
		if !bytes.Equal(b[:d.Size], tc.bytes) {
			t.Errorf("%s PutInt = %x, want %x", tc.dt, b[:d.Size], tc.bytes)
		}
	}
	for _, tc := range []struct {
		dt    string
		f     float64
		bytes []byte
	}{
		{"<f2", 1.5, []byte{0x00, 0x3e}},
		{">f2", -2, []byte{0xc0, 0x00}},
		{">f4", 1.5, []byte{0x3f, 0xc0, 0, 0}},
		{"<f8", 0.5, []byte{0, 0, 0, 0, 0, 0, 0xe0, 0x3f}},
		{"<f2", 0x1p-24, []byte{0x01, 0x00}},           // smallest subnormal
		{"<f2", 65504, []byte{0xff, 0x7b}},             // largest half
		{"<f2", 0x1p-14 - 0x1p-24, []byte{0xff, 0x03}}, // largest subnormal
	} {
		d, _ := ParseDType(tc.dt)
		d.PutFloat(b, tc.f)
		if !bytes.Equal(b[:d.Size], tc.bytes) {
			t.Errorf("%s PutFloat(%v) = %x, want %x", tc.dt, tc.f, b[:d.Size], tc.bytes)
		}
		if got := d.Float(tc.bytes); got != tc.f {
			t.Errorf("%s Float(%x) = %v, want %v", tc.dt, tc.bytes, got, tc.f)
		}
	}
}

// TestDTypeHalf checks every float16 through float32 and float64 and back,
// and rounding at every midpoint between neighbouring halves.
func TestDTypeHalf(t *testing.T) {
	for h := range 1 << 16 {
		h := uint16(h)
		f32, f64 := halfToFloat32(h), halfToFloat64(h)
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 { // NaN: payload kept
			if halfFromFloat32(f32) != h || halfFromFloat64(f64) != h {
				t.Fatalf("NaN %#x does not round-trip", h)
			}
			continue
		}
		if float64(math.Float32frombits(f32)) != math.Float64frombits(f64) {
			t.Fatalf("%#x: float32 %v != float64 %v", h, math.Float32frombits(f32), math.Float64frombits(f64))
		}
		if halfFromFloat32(f32) != h || halfFromFloat64(f64) != h {
			t.Fatalf("%#x does not round-trip", h)
		}
		if h&0x7fff >= 0x7bff {
			continue
		}
		// Midpoint to the next half up (in magnitude): ties go to the even one.
		x := math.Float64frombits(f64)
		next := math.Float64frombits(halfToFloat64(h + 1))
		mid := x + (next-x)/2
		even := h
		if h&1 == 1 {
			even = h + 1
		}
		if got := halfFromFloat64(math.Float64bits(mid)); got != even {
			t.Fatalf("midpoint after %#x rounds to %#x, want %#x", h, got, even)
		}
		if got := halfFromFloat64(math.Float64bits(math.Nextafter(mid, next))); got != h+1 {
			t.Fatalf("just above the midpoint after %#x rounds to %#x", h, got)
		}
		if got := halfFromFloat64(math.Float64bits(math.Nextafter(mid, x))); got != h {
			t.Fatalf("just below the midpoint after %#x rounds to %#x", h, got)
		}
	}
}

// filterFixtureExpected names the expected output of one encoded fixture:
// numcodecs 0.11's decode for the lossy codecs, the source array otherwise.
func filterFixtureExpected(root, codec, codecDir, nn string) string {
	lossy := map[string]bool{"fixedscaleoffset": true, "quantize": true, "astype/f": true}
	if lossy[codec] {
		return filepath.Join(root, "decoded_by_numcodecs_0.11", codec, codecDir, "decoded."+nn+".npy")
	}
	return filepath.Join(root, "fixture", codec, "array."+nn+".npy")
}

// TestFilterFixtures decodes numcodecs' own backward-compatibility
// fixtures for the filters.
func TestFilterFixtures(t *testing.T) {
	root := testutil.Conformance(t, "numcodecs")
	count := 0
	for _, codec := range []string{"delta/bool", "delta/float32", "delta/float64", "delta/int32", "delta/uint16",
		"shuffle", "fixedscaleoffset", "quantize", "astype/f", "astype/i", "packbits"} {
		dirs, _ := filepath.Glob(filepath.Join(root, "fixture", codec, "codec.*"))
		if len(dirs) == 0 {
			t.Errorf("%s: no fixtures", codec)
		}
		for _, dir := range dirs {
			config, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			d := filterNew(t, string(config))
			encs, _ := filepath.Glob(filepath.Join(dir, "encoded.*.dat"))
			for _, enc := range encs {
				nn := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(enc), "encoded."), ".dat")
				name := codec + "/" + filepath.Base(dir) + "/" + nn
				src, err := os.ReadFile(enc)
				if err != nil {
					t.Fatal(err)
				}
				want := npyData(t, filterFixtureExpected(root, codec, filepath.Base(dir), nn))
				got, err := DecodeFull(d, make([]byte, 0, len(want)), src)
				if err != nil {
					t.Errorf("%s: %v", name, err)
				} else if !bytes.Equal(got, want) {
					t.Errorf("%s: decoded bytes differ", name)
				}
				if n, err := d.(EncodedSizer).EncodedLen(len(want)); err != nil || n != len(src) {
					t.Errorf("%s: EncodedLen(%d) = %d, %v; want %d", name, len(want), n, err, len(src))
				}
				count++
			}
		}
	}
	t.Logf("%d fixtures", count)
}

// TestFilterNumcodecs is the cross-check: numcodecs 0.11 encodes random
// arrays (and the test writes random stored elements full of edge values:
// NaN, infinities, out-of-range floats, extreme integers, raw bool bytes,
// big-endian dtypes) for every filter across many dtype pairs, and
// numcodecs' own decode of each must equal ours byte for byte. numcodecs'
// errors must be ours too.
func TestFilterNumcodecs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python; skipped with -short")
	}
	testutil.NeedPython(t, "numcodecs", "numpy")
	dir := t.TempDir()
	seed := "1"
	if s := os.Getenv("ZFUSE_FILTER_SEED"); s != "" {
		seed = s
	}
	cmd := exec.Command(testutil.Python, "testdata/filters_numcodecs.py", dir, seed)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("filters_numcodecs.py: %v\n%s", err, out)
	}
	var spec struct {
		Cases []struct {
			Config   json.RawMessage
			Note     string
			Enc, Dec string
			Error    string
		}
		ResultTypes map[string]*string `json:"result_types"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	refused := 0
	for i, c := range spec.Cases {
		var compact bytes.Buffer
		json.Compact(&compact, c.Config)
		name := fmt.Sprintf("case %d %s (%s)", i, compact.String(), c.Note)
		src, err := os.ReadFile(filepath.Join(dir, c.Enc))
		if err != nil {
			t.Fatal(err)
		}
		d, newErr := New(c.Config)
		if c.Error != "" {
			if newErr == nil {
				if _, err := d.Decode(make([]byte, 0, 16*len(src)+16), src); err == nil {
					t.Errorf("%s: numcodecs failed (%s), we did not", name, c.Error)
				}
			}
			continue
		}
		if newErr != nil {
			if errors.Is(newErr, ErrConfig) && filterTimeConversion(c.Config) {
				refused++ // datetime unit conversions: refused on purpose
				continue
			}
			t.Errorf("%s: New: %v", name, newErr)
			continue
		}
		want, err := os.ReadFile(filepath.Join(dir, c.Dec))
		if err != nil {
			t.Fatal(err)
		}
		got, err := filterDecode(t, d, src, len(want))
		switch {
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case !bytes.Equal(got, want):
			t.Errorf("%s: %s", name, filterFirstDiff(got, want))
		}
		if n, err := d.(EncodedSizer).EncodedLen(len(want)); err != nil || n != len(src) {
			t.Errorf("%s: EncodedLen(%d) = %d, %v; want %d", name, len(want), n, err, len(src))
		}
		var probe Config
		json.Unmarshal(c.Config, &probe)
		ids[probe.ID()]++
	}
	t.Logf("%d numcodecs cases: decoded %v, refused %d datetime unit conversions", len(spec.Cases), ids, refused)

	// np.result_type, which Delta relies on, for every pair of dtypes.
	for pair, want := range spec.ResultTypes {
		a, b, _ := strings.Cut(pair, ",")
		da, err1 := ParseDType(a)
		db, err2 := ParseDType(b)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", pair, err1, err2)
		}
		got, err := resultType(da, db)
		switch {
		case want == nil && err == nil:
			t.Errorf("result_type(%s) = %s, numpy has none", pair, got)
		case want == nil:
		case err != nil:
			if da.Unit != db.Unit && da.Unit != "" && db.Unit != "" {
				continue // unit conversion: refused on purpose
			}
			t.Errorf("result_type(%s): %v, numpy says %s", pair, err, *want)
		default:
			w, _ := ParseDType(*want)
			if got.Kind != w.Kind || got.Size != w.Size || got.Unit != w.Unit {
				t.Errorf("result_type(%s) = %s, numpy says %s", pair, got, *want)
			}
		}
	}
}

// filterTimeConversion reports whether a config casts between datetime
// units or between datetime and timedelta, which the filters refuse.
func filterTimeConversion(config json.RawMessage) bool {
	var c Config
	json.Unmarshal(config, &c)
	var times []DType
	for key := range c {
		if s, err := c.String(key, ""); err == nil {
			if d, err := ParseDType(s); err == nil && (d.Kind == 'M' || d.Kind == 'm') {
				times = append(times, d)
			}
		}
	}
	return len(times) == 2 && !times[0].sameType(times[1])
}

func filterFirstDiff(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("got %d bytes, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			lo, hi := max(0, i-8), min(len(got), i+8)
			return fmt.Sprintf("first difference at byte %d of %d: got %x want %x", i, len(got), got[lo:hi], want[lo:hi])
		}
	}
	return "equal"
}

// filterFuzzConfigs are the configurations FuzzFilters picks from.
var filterFuzzConfigs = []string{
	`{"id":"delta","dtype":"<i4"}`,
	`{"id":"delta","dtype":">u2","astype":"|i1"}`,
	`{"id":"delta","dtype":"|b1"}`,
	`{"id":"delta","dtype":"<f4"}`,
	`{"id":"delta","dtype":"<u4","astype":">f8"}`,
	`{"id":"delta","dtype":"<f2","astype":"<i2"}`,
	`{"id":"delta","dtype":"<c8","astype":">c16"}`,
	`{"id":"delta","dtype":"<m8[s]","astype":"<i8"}`,
	`{"id":"fixedscaleoffset","offset":1000,"scale":10,"dtype":"<f8","astype":"<i2"}`,
	`{"id":"fixedscaleoffset","offset":0.5,"scale":100000,"dtype":"<u4","astype":"<f2"}`,
	`{"id":"fixedscaleoffset","offset":-3,"scale":0.1,"dtype":">i8","astype":">f4"}`,
	`{"id":"quantize","digits":3,"dtype":"<f8","astype":"<f2"}`,
	`{"id":"quantize","digits":3,"dtype":">f2","astype":"<f8"}`,
	`{"id":"astype","encode_dtype":"<f8","decode_dtype":"<u4"}`,
	`{"id":"astype","encode_dtype":">c8","decode_dtype":"|b1"}`,
	`{"id":"astype","encode_dtype":"|u1","decode_dtype":">f2"}`,
	`{"id":"packbits"}`,
	`{"id":"shuffle","elementsize":3}`,
	`{"id":"shuffle","elementsize":8}`,
	`{"id":"bitround","keepbits":4}`,
}

// FuzzFilters: any input with any filter configuration either decodes or
// fails cleanly, never writes past cap(dst), and Batch agrees with Decode.
func FuzzFilters(f *testing.F) {
	decs := make([]Decoder, len(filterFuzzConfigs))
	for i, c := range filterFuzzConfigs {
		decs[i] = filterNew(f, c)
	}
	for i, tc := range filterVectors {
		for j, c := range filterFuzzConfigs {
			if c == tc.config {
				f.Add(uint8(j), uint16(len(tc.want)), tc.src)
			}
		}
		f.Add(uint8(i), uint16(len(tc.src)*2), tc.src)
	}
	f.Fuzz(func(t *testing.T, pick uint8, room uint16, src []byte) {
		d := decs[int(pick)%len(decs)]
		got, err := filterDecode(t, d, src, int(room))
		jobs := []Job{{Src: src, Dst: make([]byte, 0, int(room))}}
		if berr := Batch(d).DecodeBatch(context.Background(), jobs); berr != nil {
			t.Fatal(berr)
		}
		if (err == nil) != (jobs[0].Err == nil) || !bytes.Equal(got, jobs[0].Dst) {
			t.Fatalf("Decode = %x, %v; DecodeBatch = %x, %v", got, err, jobs[0].Dst, jobs[0].Err)
		}
		if err != nil && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("unexpected error %v", err)
		}
		if err == nil {
			if s, ok := d.(EncodedSizer); ok && !strings.Contains(filterFuzzConfigs[int(pick)%len(decs)], "packbits") {
				if n, err := s.EncodedLen(len(got)); err != nil || n != len(src) {
					t.Fatalf("EncodedLen(%d) = %d, %v; want %d", len(got), n, err, len(src))
				}
			}
		}
	})
}

func filterBench(b *testing.B, config string, src []byte, decoded int) {
	d := filterNew(b, config)
	dst := make([]byte, 0, decoded)
	b.SetBytes(int64(decoded))
	b.ReportAllocs()
	var err error
	for b.Loop() {
		if dst, err = d.Decode(dst[:0], src); err != nil {
			b.Fatal(err)
		}
	}
	if len(dst) != decoded {
		b.Fatalf("decoded %d bytes", len(dst))
	}
}

// filterBenchSrc is n pseudo-random bytes (a fixed LCG, so runs compare).
func filterBenchSrc(n int) []byte {
	b := make([]byte, n)
	x := uint32(1)
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

func BenchmarkDelta(b *testing.B) {
	const mib = 1 << 20
	for _, tc := range []struct{ name, config string }{
		{"i4", `{"id":"delta","dtype":"<i4"}`},
		{"f8", `{"id":"delta","dtype":"<f8"}`},
		{"i2-to-i4", `{"id":"delta","dtype":"<i4","astype":"<i2"}`},
		{"f4-big-endian", `{"id":"delta","dtype":">f4"}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			d := filterNew(b, tc.config).(*deltaFilter)
			filterBench(b, tc.config, filterBenchSrc(mib/d.DType.Size*d.AsType.Size), mib)
		})
	}
}

func BenchmarkFixedScaleOffset(b *testing.B) {
	const mib = 1 << 20
	for _, tc := range []struct{ name, config string }{
		{"i2-to-f8", `{"id":"fixedscaleoffset","offset":1000,"scale":10,"dtype":"<f8","astype":"<i2"}`},
		{"f8-to-f8", `{"id":"fixedscaleoffset","offset":1000,"scale":10,"dtype":"<f8","astype":"<f8"}`},
		{"u1-to-f4", `{"id":"fixedscaleoffset","offset":1000,"scale":10,"dtype":"<f4","astype":"|u1"}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f := filterNew(b, tc.config).(*fixedScaleOffset)
			n := mib / f.DType.Size * f.AsType.Size
			filterBench(b, tc.config, filterBenchSrc(n), mib)
		})
	}
}
