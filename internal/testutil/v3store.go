package testutil

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The Zarr v3 test store: a small Zarr v3 encoder, written from the
// specification (zarr-formats.md §4) and independent of the decoder, and
// the store the tests of the tree and of the mount read. Its own test has
// zarrita (an independent reader) read what it writes.

// A V3Array is one array of the v3 test store.
type V3Array struct {
	Path      string
	DType     string // int16, int32, int64, uint8
	Shape     []int
	Chunks    []int  // chunk_grid chunk shape: the shard shape when sharded
	Inner     []int  // inner chunk shape of sharding_indexed; nil: unsharded
	Start     bool   // index_location "start"
	Sep       string // chunk key separator
	V2Keys    bool   // chunk_key_encoding "v2" (else "default")
	Transpose []int  // unsharded: a transpose codec before bytes
	CRC       bool   // crc32c after gzip (the inner codecs when sharded)
	Fill      int64
	Absent    func(c []int) bool // presented chunks not written (all fill): absent values or empty index entries
	BadIndex  []int              // the shard at these coordinates gets a wrong index crc32c
	OuterCRC  bool               // sharded: crc32c after sharding_indexed, over the whole shard
}

// A V3Store is a v3 store written at test time, with the decoded bytes of
// every presented chunk.
type V3Store struct {
	Root   string
	Arrays []V3Array
	Meta   map[string][]byte            // zarr.json documents as stored, by directory key
	Raw    map[string]map[string][]byte // array path -> presented key (v3 form) -> decoded chunk
	Raw2   map[string]map[string][]byte // the same, keys in --as-v2 form
	Bad    map[string]bool              // presented keys (v3 form, from the root) whose reads fail
}

func (a V3Array) itemSize() int {
	return map[string]int{"int16": 2, "int32": 4, "int64": 8, "uint8": 1}[a.DType]
}

// presented is the shape of the presented chunks.
func (a V3Array) presented() []int {
	if a.Inner != nil {
		return a.Inner
	}
	return a.Chunks
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func grid(shape, chunk []int) []int {
	g := make([]int, len(shape))
	for i := range shape {
		g[i] = ceilDiv(shape[i], chunk[i])
	}
	return g
}

func prod(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}

// unravel returns the coordinates of C-order index i in shape.
func unravel(i int, shape []int) []int {
	c := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		c[d] = i % shape[d]
		i /= shape[d]
	}
	return c
}

// value is the element at idx: its C-order index in the array, plus one,
// wrapped to fit every test dtype; never the fill value 0.
func (a V3Array) value(idx []int) int64 {
	lin := 0
	for d, v := range idx {
		lin = lin*a.Shape[d] + v
	}
	return int64(lin%250) + 1
}

func (a V3Array) put(b []byte, v int64) {
	switch a.itemSize() {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, uint64(v))
	}
}

// chunk returns the decoded chunk at coords: C order of the presented chunk
// shape, little-endian, padding past the array's edge holding the fill.
func (a V3Array) Chunk(coords []int) []byte {
	shape, is := a.presented(), a.itemSize()
	out := make([]byte, prod(shape)*is)
	for i := range prod(shape) {
		local := unravel(i, shape)
		idx := make([]int, len(shape))
		v, inside := a.Fill, true
		for d := range shape {
			idx[d] = coords[d]*shape[d] + local[d]
			inside = inside && idx[d] < a.Shape[d]
		}
		if inside {
			v = a.value(idx)
		}
		a.put(out[i*is:], v)
	}
	return out
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func withCRC(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func gzipped(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, 1)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return buf.Bytes()
}

// key formats a chunk key of the array's encoding; v2form drops the "c"
// prefix (the --as-v2 view's keys).
func (a V3Array) Key(coords []int, v2form bool) string {
	parts := make([]string, len(coords))
	for i, c := range coords {
		parts[i] = strconv.Itoa(c)
	}
	if a.V2Keys || v2form {
		if len(coords) == 0 {
			return "0"
		}
		return strings.Join(parts, a.Sep)
	}
	return strings.Join(append([]string{"c"}, parts...), a.Sep)
}

// zarrJSON is the array's stored metadata.
func (a V3Array) ZarrJSON() []byte {
	codecs := []any{map[string]any{"name": "bytes", "configuration": map[string]any{"endian": "little"}},
		map[string]any{"name": "gzip", "configuration": map[string]any{"level": 1}}}
	if a.CRC {
		codecs = append(codecs, map[string]any{"name": "crc32c"})
	}
	if a.Transpose != nil {
		codecs = append([]any{map[string]any{"name": "transpose", "configuration": map[string]any{"order": a.Transpose}}}, codecs...)
	}
	if a.Inner != nil {
		loc := "end"
		if a.Start {
			loc = "start"
		}
		codecs = []any{map[string]any{"name": "sharding_indexed", "configuration": map[string]any{
			"chunk_shape": a.Inner, "codecs": codecs, "index_location": loc,
			"index_codecs": []any{map[string]any{"name": "bytes", "configuration": map[string]any{"endian": "little"}}, map[string]any{"name": "crc32c"}},
		}}}
		if a.OuterCRC {
			codecs = append(codecs, map[string]any{"name": "crc32c"})
		}
	}
	cke := map[string]any{"name": "default", "configuration": map[string]any{"separator": a.Sep}}
	if a.V2Keys {
		cke["name"] = "v2"
	}
	names := make([]string, len(a.Shape))
	for i := range names {
		names[i] = "dim" + strconv.Itoa(i)
	}
	b, _ := json.Marshal(map[string]any{
		"zarr_format": 3, "node_type": "array", "shape": a.Shape, "data_type": a.DType,
		"chunk_grid":         map[string]any{"name": "regular", "configuration": map[string]any{"chunk_shape": a.Chunks}},
		"chunk_key_encoding": cke, "fill_value": a.Fill, "codecs": codecs,
		"attributes": map[string]any{"name": a.Path}, "dimension_names": names,
	})
	return b
}

func (s *V3Store) Write(t testing.TB, key string, b []byte) {
	t.Helper()
	WriteFile(t, s.Root, key, b)
}

// Add writes array a: its zarr.json and chunks or shards.
func (s *V3Store) Add(t testing.TB, a V3Array) {
	s.Arrays = append(s.Arrays, a)
	s.Meta[a.Path] = a.ZarrJSON()
	s.Write(t, a.Path+"/zarr.json", s.Meta[a.Path])
	raw, raw2 := map[string][]byte{}, map[string][]byte{}
	s.Raw[a.Path], s.Raw2[a.Path] = raw, raw2
	is := a.itemSize()
	shards := map[string][][]int{} // stored key -> presented coords in it
	for i := range prod(grid(a.Shape, a.presented())) {
		c := unravel(i, grid(a.Shape, a.presented()))
		if a.Absent != nil && a.Absent(c) {
			continue
		}
		raw[a.Key(c, false)], raw2[a.Key(c, true)] = a.Chunk(c), a.Chunk(c)
		if a.Inner != nil {
			sc := make([]int, len(c))
			for d := range c {
				sc[d] = c[d] / (a.Chunks[d] / a.Inner[d])
			}
			shards[a.Key(sc, false)] = append(shards[a.Key(sc, false)], c)
			continue
		}
		enc := a.Chunk(c)
		if a.Transpose != nil {
			enc = Transpose(enc, a.Chunks, a.Transpose, is)
		}
		if enc = gzipped(t, enc); a.CRC {
			enc = withCRC(enc)
		}
		s.Write(t, a.Path+"/"+a.Key(c, false), enc)
	}
	for key, cs := range shards {
		s.Write(t, a.Path+"/"+key, s.shard(t, a, cs, key))
	}
}

// shard encodes the shard holding the presented chunks cs: inner chunks
// in reverse C order (so that only the index says where they are), the
// index (crc32c'd) at the start or end, every other entry empty.
func (s *V3Store) shard(t testing.TB, a V3Array, cs [][]int, key string) []byte {
	per := make([]int, len(a.Chunks))
	for d := range per {
		per[d] = a.Chunks[d] / a.Inner[d]
	}
	n := prod(per)
	index := make([]uint64, 2*n)
	for i := range index {
		index[i] = math.MaxUint64
	}
	ixLen := 16*n + 4
	var data []byte
	base := 0
	if a.Start {
		base = ixLen
	}
	for _, c := range slices.Backward(cs) {
		i := 0
		for d := range c {
			i = i*per[d] + c[d]%per[d]
		}
		enc := gzipped(t, a.Chunk(c))
		if a.CRC {
			enc = withCRC(enc)
		}
		index[2*i], index[2*i+1] = uint64(base+len(data)), uint64(len(enc))
		data = append(data, enc...)
	}
	var ix []byte
	for _, v := range index {
		ix = binary.LittleEndian.AppendUint64(ix, v)
	}
	ix = withCRC(ix)
	if a.BadIndex != nil && a.Key(a.BadIndex, false) == key {
		ix[len(ix)-1] ^= 0xff
		for _, c := range cs {
			s.Bad[a.Path+"/"+a.Key(c, false)] = true
		}
	}
	shard := append(data, ix...)
	if a.Start {
		shard = append(ix, data...)
	}
	if a.OuterCRC {
		shard = withCRC(shard)
	}
	return shard
}

func (s *V3Store) group(t testing.TB, dir string, doc map[string]any) {
	b, _ := json.Marshal(doc)
	s.Meta[dir] = b
	key := "zarr.json"
	if dir != "." {
		key = dir + "/zarr.json"
	}
	s.Write(t, key, b)
}

// NewV3Store writes the v3 test store:
//
//	zarr.json          root group, attributes {"answer": 42}
//	plain/             int32 5x7 in 2x3 chunks, "c/i/j", one chunk absent
//	dots/              uint8 9 in 4, v2 keys "i", gzip+crc32c, one absent
//	transposed/        int16 3x5 in 2x3, transpose [1,0], "c.i.j"
//	scalar/            int64 0-d
//	sharded/end/       int32 10x7, shards 4x4 of 2x2 inner, index at the end;
//	                   inner (0,0) empty, shard (1,1) absent, edge shards
//	sharded/start/     int16 9, shards 4 of 2, index at the start, "c.i",
//	                   gzip+crc32c inner chunks, inner 1 empty
//	sharded/deep/      uint8 4x6x5, shards 2x6x5 of 2x3x5, v2 keys "i/j/k"
//	sharded/corrupt/   int32 8, shards 4 of 2; shard 1's index crc32c wrong
//	sharded/whole/     int16 6x4, shards 4x4 of 2x2, crc32c over each whole
//	                   shard (read whole), inner (0,1) empty
//	strings/           vlen strings: passed through (hidden under --as-v2)
//	sub/               group with consolidated metadata of sub/arr
func NewV3Store(t testing.TB) *V3Store {
	s := &V3Store{Root: t.TempDir(), Meta: map[string][]byte{}, Raw: map[string]map[string][]byte{},
		Raw2: map[string]map[string][]byte{}, Bad: map[string]bool{}}
	s.group(t, ".", map[string]any{"zarr_format": 3, "node_type": "group", "attributes": map[string]any{"answer": 42}})
	is := func(want ...int) func([]int) bool {
		return func(c []int) bool { return slices.Equal(c, want) }
	}
	s.Add(t, V3Array{Path: "plain", DType: "int32", Shape: []int{5, 7}, Chunks: []int{2, 3}, Sep: "/", Absent: is(1, 1)})
	s.Add(t, V3Array{Path: "dots", DType: "uint8", Shape: []int{9}, Chunks: []int{4}, Sep: ".", V2Keys: true, CRC: true, Absent: is(1)})
	s.Add(t, V3Array{Path: "transposed", DType: "int16", Shape: []int{3, 5}, Chunks: []int{2, 3}, Sep: ".", Transpose: []int{1, 0}})
	s.Add(t, V3Array{Path: "scalar", DType: "int64", Shape: []int{}, Chunks: []int{}, Sep: "/"})
	s.Add(t, V3Array{Path: "sharded/end", DType: "int32", Shape: []int{10, 7}, Chunks: []int{4, 4}, Inner: []int{2, 2}, Sep: "/",
		Absent: func(c []int) bool { return (c[0] == 0 && c[1] == 0) || (c[0]/2 == 1 && c[1]/2 == 1) }})
	s.Add(t, V3Array{Path: "sharded/start", DType: "int16", Shape: []int{9}, Chunks: []int{4}, Inner: []int{2}, Start: true, Sep: ".",
		CRC: true, Fill: 7, Absent: is(1)})
	s.Add(t, V3Array{Path: "sharded/deep", DType: "uint8", Shape: []int{4, 6, 5}, Chunks: []int{2, 6, 5}, Inner: []int{2, 3, 5},
		Sep: "/", V2Keys: true, Absent: is(1, 1, 0)})
	s.Add(t, V3Array{Path: "sharded/corrupt", DType: "int32", Shape: []int{8}, Chunks: []int{4}, Inner: []int{2}, Sep: "/",
		BadIndex: []int{1}})
	s.Add(t, V3Array{Path: "sharded/whole", DType: "int16", Shape: []int{6, 4}, Chunks: []int{4, 4}, Inner: []int{2, 2}, Sep: "/",
		OuterCRC: true, Absent: is(0, 1)})
	s.Meta["strings"] = []byte(`{"zarr_format":3,"node_type":"array","shape":[2],"data_type":"string",` +
		`"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},"chunk_key_encoding":{"name":"default"},` +
		`"fill_value":"","codecs":[{"name":"vlen-utf8"}]}`)
	s.Write(t, "strings/zarr.json", s.Meta["strings"])
	s.Write(t, "strings/c/0", []byte("opaque vlen bytes"))
	s.Add(t, V3Array{Path: "sub/arr", DType: "int16", Shape: []int{4}, Chunks: []int{2}, Sep: "/"})
	var arr any
	json.Unmarshal(s.Meta["sub/arr"], &arr)
	s.group(t, "sub", map[string]any{"zarr_format": 3, "node_type": "group", "attributes": map[string]any{"sub": true},
		"consolidated_metadata": map[string]any{"kind": "inline", "must_understand": false, "metadata": map[string]any{"arr": arr}}})
	return s
}

// values returns the whole array as an independent reader decodes it, in C
// order: the encoder's values, and the fill value where a chunk is absent.
func (a V3Array) values() (shape []int, data []float64) {
	pc := a.presented()
	for i := range prod(a.Shape) {
		idx := unravel(i, a.Shape)
		c := make([]int, len(idx))
		for d := range idx {
			c[d] = idx[d] / pc[d]
		}
		v := a.value(idx)
		if a.Absent != nil && a.Absent(c) {
			v = a.Fill
		}
		data = append(data, float64(v))
	}
	return a.Shape, data
}
