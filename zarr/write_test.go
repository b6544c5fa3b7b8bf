package zarr

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/codec"
)

const writeV2 = `{"zarr_format":2,"shape":[10,7],"chunks":[4,3],"dtype":"<i4","compressor":{"id":"zlib","level":1},
"filters":null,"fill_value":-1,"order":"C","dimension_separator":"."}`

const writeV3 = `{"zarr_format":3,"node_type":"array","shape":[10,7],"data_type":"int32",
"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[4,3]}},
"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":-1,
"codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":1,"checksum":false}}],
"attributes":{"units":"K"},"dimension_names":["y","x"]}`

func mustCfg(t testing.TB, s string) codec.Config {
	t.Helper()
	var c codec.Config
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// source parses stored metadata files as the tree would.
func source(t testing.TB, files map[string][]byte) *Array {
	t.Helper()
	if b, ok := files[ArrayFile]; ok {
		a, err := ParseV2(b)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a, _, err := ParseV3(files[MetadataFile])
	if err != nil || a == nil {
		t.Fatal(err)
	}
	return a
}

// TestStoreArray writes the metadata of arrays in both formats as every
// target and checks what the written metadata presents: shape, dtype,
// fill value, attributes and dimension names kept; chunks, sharding and
// codecs as asked; and that an Encoding of it round-trips a chunk.
func TestStoreArray(t *testing.T) {
	srcs := map[string]map[string][]byte{
		"v2": {ArrayFile: []byte(writeV2), AttrsFile: []byte(`{"units":"K","_ARRAY_DIMENSIONS":["y","x"]}`)},
		"v3": {MetadataFile: []byte(writeV3)},
	}
	blosc := mustCfg(t, `{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":0}`)
	targets := map[string]Target{
		"v2 blosc":            {Format: 2, Chunks: []int{5, 7}, Compressor: blosc},
		"v2 delta+zstd":       {Format: 2, Chunks: []int{4, 3}, Compressor: mustCfg(t, `{"id":"zstd","level":3}`), Filters: []codec.Config{mustCfg(t, `{"id":"delta","dtype":"<i4"}`)}},
		"v2 raw":              {Format: 2, Chunks: []int{2, 2}},
		"v3 blosc":            {Format: 3, Chunks: []int{5, 7}, Compressor: blosc},
		"v3 gzip shuffle":     {Format: 3, Chunks: []int{3, 3}, Compressor: mustCfg(t, `{"id":"gzip","level":6}`), Filters: []codec.Config{mustCfg(t, `{"id":"shuffle","elementsize":4}`)}},
		"v3 sharded lz4":      {Format: 3, Chunks: []int{2, 3}, Shard: []int{2, 2}, Compressor: mustCfg(t, `{"id":"lz4","acceleration":1}`)},
		"v3 sharded raw":      {Format: 3, Chunks: []int{1, 7}, Shard: []int{4, 1}},
		"v3 sharded crc32c":   {Format: 3, Chunks: []int{5, 1}, Shard: []int{1, 3}, Compressor: mustCfg(t, `{"id":"crc32c"}`)},
		"v3 sharded zstd one": {Format: 3, Chunks: []int{10, 7}, Shard: []int{1, 1}, Compressor: mustCfg(t, `{"id":"zstd","level":1}`)},
	}
	for sname, src := range srcs {
		a := source(t, src)
		for tname, tg := range targets {
			t.Run(sname+" to "+tname, func(t *testing.T) {
				files, err := StoreArray(src, a, tg)
				if err != nil {
					t.Fatal(err)
				}
				enc, err := NewEncoding(files)
				if err != nil {
					t.Fatalf("%v\n%s%s", err, files[ArrayFile], files[MetadataFile])
				}
				d := enc.Array()
				if d.Format != tg.Format || !slices.Equal(d.Shape, a.Shape) || !slices.Equal(d.Chunks, tg.Chunks) || !bytes.Equal(d.Fill, a.Fill) || d.ItemSize != 4 {
					t.Fatalf("presents format %d shape %v chunks %v fill %v, want %d %v %v %v", d.Format, d.Shape, d.Chunks, d.Fill, tg.Format, a.Shape, tg.Chunks, a.Fill)
				}
				checkAttrs(t, files, tg.Format)
				if (d.Shard() != nil) != (tg.Shard != nil) {
					t.Fatalf("sharded %v, want %v", d.Shard() != nil, tg.Shard != nil)
				}
				roundTrip(t, enc)
			})
		}
	}
	// v2 cannot shard; ranks must agree.
	a := source(t, srcs["v2"])
	if _, err := StoreArray(srcs["v2"], a, Target{Format: 2, Chunks: []int{2, 2}, Shard: []int{2, 2}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("v2 sharded: %v", err)
	}
	if _, err := StoreArray(srcs["v2"], a, Target{Format: 3, Chunks: []int{2}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("wrong rank: %v", err)
	}
}

// checkAttrs: the attributes and dimension names of the sources above.
func checkAttrs(t *testing.T, files map[string][]byte, format int) {
	t.Helper()
	var attrs map[string]any
	if format == 2 {
		json.Unmarshal(files[AttrsFile], &attrs)
		if attrs["units"] != "K" || len(attrs["_ARRAY_DIMENSIONS"].([]any)) != 2 {
			t.Errorf(".zattrs %s", files[AttrsFile])
		}
		return
	}
	var m struct {
		Attributes map[string]any `json:"attributes"`
		Dims       []string       `json:"dimension_names"`
	}
	json.Unmarshal(files[MetadataFile], &m)
	if m.Attributes["units"] != "K" || !slices.Equal(m.Dims, []string{"y", "x"}) || m.Attributes["_ARRAY_DIMENSIONS"] != nil {
		t.Errorf("zarr.json attributes %v, dimension_names %v", m.Attributes, m.Dims)
	}
}

// roundTrip encodes random chunks of enc's array and decodes them with the
// array's own decoder; for a sharded array it assembles a shard with an
// empty inner chunk and reads every inner chunk back through its index.
func roundTrip(t *testing.T, enc *Encoding) {
	t.Helper()
	a := enc.Array()
	r := rand.New(rand.NewPCG(1, 2))
	chunk := func() []byte {
		b := make([]byte, a.ChunkLen())
		for i := 0; i < len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], uint32(r.IntN(50)))
		}
		return b
	}
	e := enc.Chunk()
	encode := func(b []byte) []byte {
		out, err := e.Encode(make([]byte, 0, e.MaxEncodedLen(len(b))), b)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	sh := a.Shard()
	if sh == nil {
		want := chunk()
		got, err := a.DecodeChunk(make([]byte, 0, a.ChunkLen()), encode(want))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("chunk round trip: %v", err)
		}
		return
	}
	n := sh.InnerChunks()
	wants := make([][]byte, n)
	inner := make([][]byte, n)
	for i := range n {
		if i == 1 {
			continue // empty
		}
		wants[i] = chunk()
		inner[i] = encode(wants[i])
	}
	shard, err := enc.Shard(inner)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for i := range n {
		coords, ok := a.InnerCoords(make([]int, len(a.Shape)), i)
		if !ok {
			continue
		}
		got, err := a.DecodeFromShard(make([]byte, 0, a.ChunkLen()), shard, coords)
		switch {
		case wants[i] == nil:
			if !isNotExist(err) {
				t.Errorf("empty inner chunk %d: %v", i, err)
			}
		case err != nil || !bytes.Equal(got, wants[i]):
			t.Errorf("inner chunk %d: %v", i, err)
		}
		seen++
	}
	if seen == 0 {
		t.Fatal("no inner chunk read")
	}
	if _, err := enc.Shard(inner[1:]); err == nil {
		t.Error("a shard of the wrong number of inner chunks was assembled")
	}
}

// TestStoreArrayConversions covers the data types and fill values that
// change form between v2 and v3, and F order.
func TestStoreArrayConversions(t *testing.T) {
	tests := []struct {
		dtype, fill string
		v3type      string
	}{
		{"|b1", "true", `"bool"`},
		{">f8", `"NaN"`, `"float64"`},
		{"<f4", "null", `"float32"`},
		{"<c16", `[1.5, "-Infinity"]`, `"complex128"`},
		{"<M8[10ms]", "-9223372036854775808", `{"configuration":{"scale_factor":10,"unit":"ms"},"name":"numpy.datetime64"}`},
		{"<m8", "0", `{"configuration":{"scale_factor":1,"unit":"generic"},"name":"numpy.timedelta64"}`},
		{"|S3", `"YWI="`, `{"configuration":{"length_bytes":3},"name":"null_terminated_bytes"}`},
		{"<U2", `"é"`, `{"configuration":{"length_bytes":8},"name":"fixed_length_utf32"}`},
		{"|V4", `"AQIDBA=="`, `"r32"`},
		{"|u1", "7", `"uint8"`},
	}
	for _, tt := range tests {
		za := `{"zarr_format":2,"shape":[5,4],"chunks":[2,3],"dtype":"` + tt.dtype + `","compressor":null,"filters":null,"fill_value":` + tt.fill + `,"order":"F"}`
		src := map[string][]byte{ArrayFile: []byte(za)}
		a := source(t, src)
		files, err := StoreArray(src, a, Target{Format: 3, Chunks: []int{2, 3}, Compressor: mustCfg(t, `{"id":"zstd","level":1}`)})
		if err != nil {
			t.Fatalf("%s: %v", tt.dtype, err)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(files[MetadataFile], &m)
		var dt bytes.Buffer
		json.Compact(&dt, m["data_type"])
		v3, _, err := ParseV3(files[MetadataFile])
		switch {
		case err != nil:
			t.Errorf("%s: %v\n%s", tt.dtype, err, files[MetadataFile])
		case dt.String() != tt.v3type:
			t.Errorf("%s: data_type %s, want %s", tt.dtype, dt.String(), tt.v3type)
		case v3.Order != "C" || v3.DType != a.DType:
			t.Errorf("%s: v3 presents %s order %s, want %s C", tt.dtype, v3.DType, v3.Order, a.DType)
		case a.Fill != nil && !bytes.Equal(v3.Fill, a.Fill):
			t.Errorf("%s: fill % x, want % x (%s)", tt.dtype, v3.Fill, a.Fill, m["fill_value"])
		case a.Fill == nil && !bytes.Equal(v3.Fill, make([]byte, a.ItemSize)):
			t.Errorf("%s: a v2 null fill becomes zeros in v3, got % x", tt.dtype, v3.Fill)
		}
		// And back to v2: the same dtype and fill value.
		back, err := StoreArray(files, v3, Target{Format: 2, Chunks: []int{2, 3}})
		if err != nil {
			t.Fatalf("%s back: %v", tt.dtype, err)
		}
		v2, err := ParseV2(back[ArrayFile])
		if err != nil || v2.DType != a.DType || !bytes.Equal(v2.Fill, v3.Fill) || v2.Order != "C" {
			t.Errorf("%s back to v2: %v %s\n%s", tt.dtype, err, v2.DType, back[ArrayFile])
		}
	}
	structured := map[string][]byte{ArrayFile: []byte(`{"zarr_format":2,"shape":[5],"chunks":[2],"dtype":[["a","<i4"]],"compressor":null,"filters":null,"fill_value":null,"order":"C"}`)}
	if _, err := StoreArray(structured, source(t, structured), Target{Format: 3, Chunks: []int{2}}); !errors.Is(err, codec.ErrNotRaw) {
		t.Errorf("structured to v3: %v, want ErrNotRaw", err)
	}
}

// TestStoreGroupAndConsolidate: group attributes in both formats, and
// consolidated metadata over what was written.
func TestStoreGroupAndConsolidate(t *testing.T) {
	for _, src := range []map[string][]byte{
		{GroupFile: []byte(`{"zarr_format":2}`), AttrsFile: []byte(`{"title":"t"}`)},
		{MetadataFile: []byte(`{"zarr_format":3,"node_type":"group","attributes":{"title":"t"},"consolidated_metadata":{"kind":"inline","metadata":{}}}`)},
	} {
		for _, format := range []int{2, 3} {
			g, err := StoreGroup(src, format)
			if err != nil {
				t.Fatal(err)
			}
			arr, err := StoreArray(map[string][]byte{ArrayFile: []byte(writeV2)}, source(t, map[string][]byte{ArrayFile: []byte(writeV2)}), Target{Format: format, Chunks: []int{4, 3}})
			if err != nil {
				t.Fatal(err)
			}
			c, err := Consolidate(format, map[string]map[string][]byte{"": g, "sub/a": arr})
			if err != nil {
				t.Fatal(err)
			}
			if format == 2 {
				var z struct {
					Metadata map[string]json.RawMessage `json:"metadata"`
				}
				json.Unmarshal(c[ConsolidatedFile], &z)
				if z.Metadata[".zgroup"] == nil || !strings.Contains(string(z.Metadata[".zattrs"]), `"t"`) || z.Metadata["sub/a/.zarray"] == nil {
					t.Errorf(".zmetadata %s", c[ConsolidatedFile])
				}
				continue
			}
			_, grp, err := ParseV3(c[MetadataFile])
			if err != nil || grp == nil || grp.Consolidated["sub/a"] == nil || !strings.Contains(string(grp.Attributes), `"t"`) {
				t.Errorf("zarr.json %s: %v", c[MetadataFile], err)
			}
		}
	}
}

// TestCopyBox copies regions between chunk buffers of both orders and
// checks every element against the array coordinates it must hold.
func TestCopyBox(t *testing.T) {
	const is = 2
	shape := []int{7, 5, 6}
	val := func(x []int) uint16 { return uint16(x[0]*100 + x[1]*10 + x[2]) }
	fill := func(l ChunkLayout) []byte {
		b := make([]byte, prod(l.Shape)*is)
		st := l.strides(is)
		forEach(l.Shape, func(x []int) {
			g := []int{l.Origin[0] + x[0], l.Origin[1] + x[1], l.Origin[2] + x[2]}
			o := 0
			for i := range x {
				o += x[i] * st[i]
			}
			binary.LittleEndian.PutUint16(b[o:], val(g))
		})
		return b
	}
	for _, so := range []string{"C", "F"} {
		for _, do := range []string{"C", "F"} {
			sl := ChunkLayout{Origin: []int{0, 0, 0}, Shape: shape, Order: so}
			dl := ChunkLayout{Origin: []int{2, 1, 3}, Shape: []int{4, 4, 4}, Order: do}
			src := fill(sl)
			dst := make([]byte, prod(dl.Shape)*is)
			box := Box{Lo: []int{2, 1, 3}, Hi: []int{6, 5, 6}} // dl's region within src
			CopyBox(dst, dl, src, sl, box, is)
			st := dl.strides(is)
			forEach(dl.Shape, func(x []int) {
				g := []int{dl.Origin[0] + x[0], dl.Origin[1] + x[1], dl.Origin[2] + x[2]}
				o := 0
				for i := range x {
					o += x[i] * st[i]
				}
				got := binary.LittleEndian.Uint16(dst[o:])
				in := g[0] < box.Hi[0] && g[1] < box.Hi[1] && g[2] < box.Hi[2]
				if (in && got != val(g)) || (!in && got != 0) {
					t.Fatalf("%s→%s at %v: %d", so, do, g, got)
				}
			})
		}
	}
}

func forEach(shape []int, fn func([]int)) {
	x := make([]int, len(shape))
	for {
		fn(x)
		i := len(shape) - 1
		for ; i >= 0; i-- {
			if x[i]++; x[i] < shape[i] {
				break
			}
			x[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

func TestAllFill(t *testing.T) {
	big := bytes.Repeat([]byte{1, 2, 3}, 5000)
	tests := []struct {
		b, elem []byte
		want    bool
	}{
		{make([]byte, 10000), []byte{0, 0}, true},
		{append(make([]byte, 9999), 1), []byte{0}, false},
		{big, []byte{1, 2, 3}, true},
		{append(bytes.Clone(big), 1, 2, 4), []byte{1, 2, 3}, false},
		{big, []byte{1, 2}, false},
		{big, nil, false},
		{bytes.Repeat([]byte{9}, 6000), bytes.Repeat([]byte{9}, 6000), true}, // one element over 4 KiB
	}
	for i, tt := range tests {
		if got := AllFill(tt.b, tt.elem); got != tt.want {
			t.Errorf("%d: AllFill = %v", i, got)
		}
	}
}

func TestChunksIn(t *testing.T) {
	a, err := ParseV2([]byte(writeV2)) // 10x7 in 4x3
	if err != nil {
		t.Fatal(err)
	}
	var got [][]int
	a.ChunksIn(Box{Lo: []int{3, 2}, Hi: []int{9, 4}}, func(c []int) bool { got = append(got, slices.Clone(c)); return true })
	want := [][]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("ChunksIn = %v, want %v", got, want)
	}
	if b := a.ChunkBox([]int{2, 2}); !slices.Equal(b.Lo, []int{8, 6}) || !slices.Equal(b.Hi, []int{10, 7}) {
		t.Errorf("ChunkBox = %v", b)
	}
}
