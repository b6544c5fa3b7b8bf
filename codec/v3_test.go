package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

func TestV3Config(t *testing.T) {
	tests := []struct {
		name, conf, endian string
		want               string // JSON of the wanted Config; "" when an error is wanted
		err                error
	}{
		{"blosc", `{"typesize":4,"cname":"zstd","clevel":5,"shuffle":"noshuffle","blocksize":0}`, "little",
			`{"id":"blosc","cname":"zstd","clevel":5,"shuffle":0,"blocksize":0}`, nil},
		{"blosc", `{"cname":"lz4","clevel":1,"shuffle":"bitshuffle","typesize":2}`, "little",
			`{"id":"blosc","cname":"lz4","clevel":1,"shuffle":2}`, nil},
		{"blosc", `{"cname":"lz4","shuffle":1}`, "", `{"id":"blosc","cname":"lz4","shuffle":1}`, nil},
		{"blosc", `{"shuffle":"sideways"}`, "", "", ErrConfig},
		{"gzip", `{"level":5}`, "little", `{"id":"gzip","level":5}`, nil},
		{"zstd", `{"level":0,"checksum":false}`, "big", `{"id":"zstd","level":0,"checksum":false}`, nil},
		{"crc32c", ``, "little", `{"id":"crc32c"}`, nil},
		{"crc32c", `null`, "little", `{"id":"crc32c"}`, nil},
		{"numcodecs.zlib", `{"level":1}`, "little", `{"id":"zlib","level":1}`, nil},
		{"numcodecs.zlib", `{"id":"zlib","level":1}`, "little", `{"id":"zlib","level":1}`, nil},
		{"numcodecs.zlib", `{"id":"gzip"}`, "little", "", ErrConfig},
		{"numcodecs.delta", `{"dtype":"int32"}`, "little", `{"id":"delta","dtype":"<i4"}`, nil},
		{"numcodecs.delta", `{"dtype":"<i4","astype":"int16"}`, "big", `{"id":"delta","dtype":">i4","astype":">i2"}`, nil},
		{"numcodecs.fixedscaleoffset", `{"dtype":"float32","astype":"uint8","scale":10,"offset":1}`, "big",
			`{"id":"fixedscaleoffset","dtype":">f4","astype":"|u1","scale":10,"offset":1}`, nil},
		{"numcodecs.astype", `{"encode_dtype":"f4","decode_dtype":"float64"}`, "little",
			`{"id":"astype","encode_dtype":"<f4","decode_dtype":"<f8"}`, nil},
		{"numcodecs.delta", `{"dtype":"|S3"}`, "little", "", ErrConfig},
		{"numcodecs.shuffle", `{"elementsize":4}`, "big", `{"id":"shuffle","elementsize":4}`, nil},
		{"zlib", `{"level":3}`, "little", `{"id":"zlib","level":3}`, nil},
		{"vlen-utf8", `{}`, "", "", ErrNotRaw},
		{"transpose", `{"order":[1,0]}`, "little", "", ErrConfig},
		{"gzip", `[1]`, "", "", ErrConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name+tt.conf, func(t *testing.T) {
			got, err := V3Config(tt.name, json.RawMessage(tt.conf), tt.endian)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want Config
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if !bytes.Equal(g, w) {
				t.Errorf("V3Config = %s, want %s", g, w)
			}
		})
	}
}

func TestKindOfV3(t *testing.T) {
	for name, want := range map[string]V3Kind{
		"transpose": ArrayToArray, "numcodecs.delta": ArrayToArray, "bytes": ArrayToBytes,
		"sharding_indexed": ArrayToBytes, "vlen-utf8": ArrayToBytes, "blosc": BytesToBytes,
		"crc32c": BytesToBytes, "numcodecs.zstd": BytesToBytes, "numcodecs.pcodec": ArrayToBytes,
	} {
		if got := KindOfV3(name); got != want {
			t.Errorf("KindOfV3(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestTranspose(t *testing.T) {
	tests := []struct {
		shape, order []int
		itemSize     int
	}{
		{[]int{3, 3, 3}, []int{2, 1, 0}, 2},
		{[]int{2, 3, 4}, []int{1, 0, 2}, 4},
		{[]int{2, 3, 4}, []int{2, 0, 1}, 1},
		{[]int{5, 7}, []int{1, 0}, 8},
		{[]int{4, 1, 3}, []int{1, 0, 2}, 2}, // identity in effect
		{[]int{6}, []int{0}, 3},
		{[]int{}, []int{}, 16},
		{[]int{0, 3}, []int{1, 0}, 2},
	}
	for _, tt := range tests {
		n := tt.itemSize
		for _, d := range tt.shape {
			n *= d
		}
		a := make([]byte, n)
		for i := range a {
			a[i] = byte(i*7 + i/3)
		}
		if n >= 2 {
			binary.LittleEndian.PutUint16(a, 0xbeef)
		}
		b := testutil.Transpose(a, tt.shape, tt.order, tt.itemSize)
		tr, err := NewTranspose(tt.shape, tt.order, tt.itemSize)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tr.Decode(make([]byte, 0, n), b)
		if err != nil || !bytes.Equal(got, a) {
			t.Errorf("%v %v: Decode = %v, %v; want %v", tt.shape, tt.order, got, err, a)
		}
		if n > 0 {
			if _, err := tr.Decode(make([]byte, 0, n-1), b); !errors.Is(err, ErrTooLarge) {
				t.Errorf("%v %v: one byte short: %v", tt.shape, tt.order, err)
			}
			if _, err := tr.Decode(make([]byte, 0, n), b[1:]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%v %v: short input: %v", tt.shape, tt.order, err)
			}
		}
	}
	for _, order := range [][]int{{0, 0}, {0, 2}, {0}} {
		if _, err := NewTranspose([]int{2, 2}, order, 1); !errors.Is(err, ErrConfig) {
			t.Errorf("NewTranspose(order %v) = %v, want ErrConfig", order, err)
		}
	}
}

func FuzzTranspose(f *testing.F) {
	f.Add([]byte{3, 3, 3, 2, 1, 0}, byte(2))
	f.Fuzz(func(t *testing.T, spec []byte, item byte) {
		rank := len(spec) / 2
		if rank > 4 {
			rank = 4
		}
		shape, order := make([]int, rank), make([]int, rank)
		for i := range rank {
			shape[i] = int(spec[i] % 5)
			order[i] = int(spec[rank+i]) % max(rank, 1)
		}
		is := int(item%9) + 1
		tr, err := NewTranspose(shape, order, is)
		if err != nil {
			return
		}
		n := is
		for _, d := range shape {
			n *= d
		}
		a := make([]byte, n)
		for i := range a {
			a[i] = byte(i)
		}
		got, err := tr.Decode(make([]byte, 0, n), testutil.Transpose(a, shape, order, is))
		if err != nil || !bytes.Equal(got, a) {
			t.Fatalf("%v %v %d: %v", shape, order, is, err)
		}
	})
}

func BenchmarkTranspose(b *testing.B) {
	for _, bc := range []struct {
		name     string
		shape    []int
		order    []int
		itemSize int
	}{
		{"2d-f4-256x256", []int{256, 256}, []int{1, 0}, 4},
		{"3d-i2-64x64x64", []int{64, 64, 64}, []int{2, 1, 0}, 2},
		{"3d-u1-64x64x64", []int{64, 64, 64}, []int{2, 0, 1}, 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := bc.itemSize
			for _, d := range bc.shape {
				n *= d
			}
			a := make([]byte, n)
			for i := range a {
				a[i] = byte(i)
			}
			src := testutil.Transpose(a, bc.shape, bc.order, bc.itemSize)
			tr, err := NewTranspose(bc.shape, bc.order, bc.itemSize)
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if dst, err = tr.Decode(dst[:0], src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
