package zarr

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/internal/testutil"
)

func zarritaV3(t testing.TB) string {
	t.Helper()
	return testutil.Conformance(t, "zarrita.js/fixtures/v3/data.zarr")
}

// readV3 reads every presented chunk of the array at dir through the API
// and assembles the whole array (C order, presented byte order); absent
// chunks hold the fill value. Sharded arrays are read both ways (whole
// shard, and index then range) and must agree.
func readV3(t testing.TB, dir string, a *Array) []byte {
	t.Helper()
	n := a.ItemSize
	for _, d := range a.Shape {
		n *= d
	}
	out := make([]byte, n)
	fillBytes(out, a.Fill)
	for lin := range a.NumChunks() {
		coords := a.Coords(lin)
		chunk, err := readChunkV3(dir, a, coords)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatalf("chunk %v: %v", coords, err)
		}
		placeChunk(out, chunk, a, coords)
	}
	return out
}

// readChunkV3 is what a reader does for one presented chunk.
func readChunkV3(dir string, a *Array, coords []int) ([]byte, error) {
	key, inner, sharded := a.StoredKey(coords)
	stored, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(key)))
	if err != nil {
		return nil, err
	}
	if !sharded {
		return a.DecodeChunk(make([]byte, 0, a.ChunkLen()), stored)
	}
	whole, werr := a.DecodeFromShard(make([]byte, 0, a.ChunkLen()), stored, coords)
	if a.WholeShard() {
		return whole, werr
	}
	sh := a.Shard()
	size := int64(len(stored))
	off, n := sh.IndexRange(size)
	ix, err := sh.ParseIndex(stored[off:off+n], size)
	if err != nil {
		if werr == nil {
			return nil, errors.New("ranged read failed where the whole-shard read did not")
		}
		return nil, err
	}
	o, l, err := ix.Entry(inner)
	var got []byte
	if err == nil {
		got, err = a.DecodeChunk(make([]byte, 0, a.ChunkLen()), stored[o:o+l])
	}
	if (err == nil) != (werr == nil) || !bytes.Equal(got, whole) {
		return nil, errors.New("ranged and whole-shard reads disagree")
	}
	return got, err
}

// placeChunk copies a presented chunk into the whole array, clipping the
// edge.
func placeChunk(out, chunk []byte, a *Array, coords []int) {
	rank := len(a.Shape)
	is := a.ItemSize
	if rank == 0 {
		copy(out, chunk[:is])
		return
	}
	for e := 0; e < len(chunk)/is; e++ {
		local := Unravel(int64(e), a.Chunks)
		off, ok := 0, true
		for d := range rank {
			g := coords[d]*a.Chunks[d] + local[d]
			if g >= a.Shape[d] {
				ok = false
				break
			}
			off = off*a.Shape[d] + g
		}
		if ok {
			copy(out[off*is:], chunk[e*is:(e+1)*is])
		}
	}
}

// encodeValues writes values as elements of kind and size in the byte
// order of a.
func encodeValues(a *Array, kind byte, values []float64) []byte {
	t := codec.DType{Kind: kind, Size: a.ItemSize, Big: a.Endian == "big"}
	b := make([]byte, len(values)*a.ItemSize)
	for i, v := range values {
		e := b[i*a.ItemSize:]
		switch kind {
		case 'f':
			t.PutFloat(e, v)
		default:
			t.PutInt(e, int64(v))
		}
	}
	return b
}

// zarritaV3Nodes returns every zarr.json under root, by path relative to root.
func zarritaV3Nodes(t testing.TB, root string) map[string][]byte {
	nodes := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != MetadataFile {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		b, err := os.ReadFile(p)
		nodes[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

func TestZarritaV3Fixtures(t *testing.T) {
	root := zarritaV3(t)
	decoded := 0
	for rel, doc := range zarritaV3Nodes(t, root) {
		a, g, err := ParseV3(doc)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if g != nil {
			continue
		}
		want, known := testutil.ZarritaV3[rel]
		if strings.Contains(rel, "string") {
			if !errors.Is(a.PassThrough, codec.ErrNotRaw) {
				t.Errorf("%s: PassThrough = %v, want ErrNotRaw", rel, a.PassThrough)
			}
			continue
		}
		if !known {
			t.Errorf("%s: no known values", rel)
			continue
		}
		t.Run(rel, func(t *testing.T) {
			if a.PassThrough != nil {
				t.Fatalf("PassThrough: %v", a.PassThrough)
			}
			got := readV3(t, filepath.Join(root, rel), a)
			if w := encodeValues(a, want.Kind, want.Data); !bytes.Equal(got, w) {
				t.Errorf("decoded %v\nwant    %v\ncodecs %s", got, w, a.Codecs)
			}
		})
		decoded++
	}
	if decoded != len(testutil.ZarritaV3) {
		t.Errorf("decoded %d arrays, want %d", decoded, len(testutil.ZarritaV3))
	}
}

// TestZarritaV3Sharding checks the facts MANIFEST states about the sharded
// fixtures: absent shards and empty inner chunks stay absent, and
// presented chunks are the inner chunks.
func TestZarritaV3Sharding(t *testing.T) {
	root := zarritaV3(t)
	open := func(name string) (*Array, string) {
		doc, err := os.ReadFile(filepath.Join(root, name, MetadataFile))
		if err != nil {
			t.Fatal(err)
		}
		a, _, err := ParseV3(doc)
		if err != nil || a.Shard() == nil {
			t.Fatalf("%s: %v, sharded %v", name, err, a != nil && a.Shard() != nil)
		}
		return a, filepath.Join(root, name)
	}
	a, dir := open("2d.chunked.compressed.sharded.filled.i2")
	if !slices.Equal(a.Chunks, []int{1, 1}) || !slices.Equal(a.Grid(), []int{4, 4}) || !slices.Equal(a.StoredGrid(), []int{2, 2}) {
		t.Errorf("chunks %v grid %v stored grid %v", a.Chunks, a.Grid(), a.StoredGrid())
	}
	if key, inner, sharded := a.StoredKey([]int{3, 2}); key != "c/1/1" || inner != 2 || !sharded {
		t.Errorf("StoredKey(3,2) = %q %d %v", key, inner, sharded)
	}
	if _, err := readChunkV3(dir, a, []int{0, 0}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("inner chunk (0,0) of c/0/0: %v, want ErrNotExist", err)
	}
	if c, ok := a.InnerCoords([]int{1, 0}, 3); !ok || !slices.Equal(c, []int{3, 1}) {
		t.Errorf("InnerCoords(c/1/0, 3) = %v %v", c, ok)
	}
	if s, ok := a.ParseStoredKey("c/1/0"); !ok || !slices.Equal(s, []int{1, 0}) {
		t.Errorf("ParseStoredKey(c/1/0) = %v %v", s, ok)
	}
	if _, ok := a.ParseStoredKey("c/2/0"); ok {
		t.Errorf("ParseStoredKey(c/2/0) accepted a shard outside the grid")
	}

	a, dir = open("1d.chunked.filled.compressed.sharded.i2")
	if key, _, _ := a.StoredKey([]int{2}); key != "c/1" {
		t.Errorf("StoredKey(2) = %q", key)
	}
	if _, err := readChunkV3(dir, a, []int{3}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("chunk 3 in absent shard c/1: %v", err)
	}

	a, _ = open("2d.chunked.ragged.compressed.sharded.i2")
	if !slices.Equal(a.Grid(), []int{3, 3}) || !slices.Equal(a.StoredGrid(), []int{2, 2}) {
		t.Errorf("ragged grid %v, stored %v", a.Grid(), a.StoredGrid())
	}
	if _, ok := a.ParseChunkKey("c/3/0"); ok {
		t.Errorf("inner chunk beyond the array is presented")
	}
	if _, ok := a.InnerCoords([]int{1, 1}, 1); ok {
		t.Errorf("InnerCoords gave an inner chunk beyond the array")
	}
	if c, ok := a.InnerCoords([]int{1, 1}, 0); !ok || !slices.Equal(c, []int{2, 2}) {
		t.Errorf("InnerCoords(c/1/1, 0) = %v %v", c, ok)
	}
}

func TestRewriteV3Fixtures(t *testing.T) {
	root := zarritaV3(t)
	for rel, doc := range zarritaV3Nodes(t, root) {
		out, err := RewriteV3(doc, nil)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		a, _, _ := ParseV3(doc)
		p, g, err := ParseV3(out)
		if err != nil {
			t.Errorf("%s: presented zarr.json does not parse: %v", rel, err)
			continue
		}
		if g != nil {
			continue
		}
		var in, pm map[string]json.RawMessage
		json.Unmarshal(doc, &in)
		json.Unmarshal(out, &pm)
		for _, k := range []string{"data_type", "fill_value", "chunk_key_encoding", "attributes", "dimension_names", "storage_transformers", "shape"} {
			if !jsonEqual(in[k], pm[k]) {
				t.Errorf("%s: %s changed from %s to %s", rel, k, in[k], pm[k])
			}
		}
		if a.PassThrough != nil {
			if !jsonEqual(in["codecs"], pm["codecs"]) {
				t.Errorf("%s: passed-through codecs rewritten", rel)
			}
			continue
		}
		if p.Shard() != nil || !slices.Equal(p.Chunks, a.Chunks) || p.Endian != a.Endian || p.ChunkLen() != a.ChunkLen() {
			t.Errorf("%s: presented array: chunks %v endian %q, want %v %q", rel, p.Chunks, p.Endian, a.Chunks, a.Endian)
		}
		if _, ok := p.Decoder().(codec.Raw); !ok {
			t.Errorf("%s: presented codecs %s still need decoding", rel, pm["codecs"])
		}
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	ex, ey := json.Unmarshal(a, &x), json.Unmarshal(b, &y)
	if ex != nil || ey != nil {
		return ex != nil && ey != nil && a == nil && b == nil
	}
	bx, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return bytes.Equal(bx, by)
}

func TestRewriteV3Consolidated(t *testing.T) {
	root := zarritaV3(t)
	doc, err := os.ReadFile(filepath.Join(root, "consolidated", MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	// Make the consolidated entries worth rewriting: give one array a
	// sharded, compressed pipeline, as a consolidated store of sharded
	// arrays would have.
	sharded, err := os.ReadFile(filepath.Join(root, "2d.chunked.compressed.sharded.i2", MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(doc, &m)
	var s any
	json.Unmarshal(sharded, &s)
	m["consolidated_metadata"].(map[string]any)["metadata"].(map[string]any)["sharded"] = s
	doc, _ = json.Marshal(m)

	out, err := RewriteV3(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, g, err := ParseV3(out)
	if err != nil || g == nil {
		t.Fatalf("ParseV3(presented) = %v", err)
	}
	if len(g.Consolidated) != 5 {
		t.Errorf("%d consolidated entries, want 5", len(g.Consolidated))
	}
	for k, v := range g.Consolidated {
		a, _, err := ParseV3(v)
		if err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		if a == nil {
			continue
		}
		if _, ok := a.Decoder().(codec.Raw); !ok || a.Shard() != nil {
			t.Errorf("%s: consolidated entry not rewritten: %s", k, v)
		}
	}
	if a, _, _ := ParseV3(g.Consolidated["sharded"]); a == nil || !slices.Equal(a.Chunks, []int{1, 1}) {
		t.Errorf("sharded entry presented with chunks %v, want the inner [1 1]", a.Chunks)
	}
	if !jsonEqual(g.Attributes, json.RawMessage(`{"answer": 42}`)) {
		t.Errorf("attributes %s", g.Attributes)
	}
	// "consolidated_metadata": null is tolerated and kept.
	root2, _ := os.ReadFile(filepath.Join(root, MetadataFile))
	out, err = RewriteV3(root2, nil)
	if err != nil || !bytes.Contains(out, []byte(`"consolidated_metadata": null`)) {
		t.Errorf("root group: %v\n%s", err, out)
	}
}

// v3Doc returns an array zarr.json: a 1-d int16 array of shape 10 in chunks
// of 4, with each of set's keys replaced (a value of "" deletes the key).
func v3Doc(set map[string]string) []byte {
	m := map[string]json.RawMessage{
		"zarr_format":        json.RawMessage(`3`),
		"node_type":          json.RawMessage(`"array"`),
		"shape":              json.RawMessage(`[10]`),
		"data_type":          json.RawMessage(`"int16"`),
		"chunk_grid":         json.RawMessage(`{"name":"regular","configuration":{"chunk_shape":[4]}}`),
		"chunk_key_encoding": json.RawMessage(`{"name":"default","configuration":{"separator":"/"}}`),
		"fill_value":         json.RawMessage(`0`),
		"codecs":             json.RawMessage(`[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":0,"checksum":false}}]`),
		"attributes":         json.RawMessage(`{}`),
	}
	return docWith(m, set)
}

// docWith returns the JSON document m with the keys of set replaced by
// their JSON values ("" deletes the key).
func docWith(m map[string]json.RawMessage, set map[string]string) []byte {
	for k, v := range set {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = json.RawMessage(v)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func TestParseV3(t *testing.T) {
	type set = map[string]string
	tests := []struct {
		name     string
		set      set
		dtype    string // wanted DType
		endian   string
		chunkLen int64
		pass     error // wanted PassThrough
		invalid  bool
	}{
		{"int16", set{}, "<i2", "little", 8, nil, false},
		{"big float32", set{"data_type": `"float32"`, "codecs": `[{"name":"bytes","configuration":{"endian":"big"}},"crc32c"]`}, ">f4", "big", 16, nil, false},
		{"bool bare bytes", set{"data_type": `"bool"`, "fill_value": `false`, "codecs": `["bytes"]`}, "|b1", "", 4, nil, false},
		{"int16 bare bytes", set{"codecs": `["bytes"]`}, "<i2", "little", 8, nil, false},
		{"old endian name", set{"codecs": `[{"name":"endian","configuration":{"endian":"big"}}]`}, ">i2", "big", 8, nil, false},
		{"r24", set{"data_type": `"r24"`, "fill_value": `[1,2,3]`}, "|V3", "", 12, nil, false},
		{"complex128", set{"data_type": `"complex128"`, "fill_value": `[0, "NaN"]`}, "<c16", "little", 64, nil, false},
		{"datetime", set{"data_type": `{"name":"numpy.datetime64","configuration":{"unit":"ms","scale_factor":10}}`, "fill_value": `-9223372036854775808`}, "<M8[10ms]", "little", 32, nil, false},
		{"timedelta", set{"data_type": `{"name":"numpy.timedelta64","configuration":{"unit":"s"}}`, "fill_value": `"NaT"`}, "<m8[s]", "little", 32, nil, false},
		{"utf32", set{"data_type": `{"name":"fixed_length_utf32","configuration":{"length_bytes":16}}`, "fill_value": `""`}, "<U4", "little", 64, nil, false},
		{"datetime μs", set{"data_type": `{"name":"numpy.datetime64","configuration":{"unit":"μs","scale_factor":1}}`, "fill_value": `"NaT"`}, "<M8[us]", "little", 32, nil, false},
		{"datetime generic", set{"data_type": `{"name":"numpy.datetime64","configuration":{"unit":"generic"}}`, "fill_value": `0`}, "<M8", "little", 32, nil, false},
		{"transpose C", set{"codecs": `[{"name":"transpose","configuration":{"order":"C"}},"bytes"]`}, "<i2", "little", 8, nil, false},
		{"numcodecs with id", set{"data_type": `"int32"`, "codecs": `[{"name":"numcodecs.delta","configuration":{"id":"delta","dtype":"<i4"}},"bytes",{"name":"numcodecs.zlib","configuration":{"level":1}}]`}, "<i4", "little", 16, nil, false},
		{"optional extension", set{"my_ext": `{"must_understand": false, "x": 1}`}, "<i2", "little", 8, nil, false},
		{"optional codec", set{"codecs": `["bytes",{"name":"nonesuch","must_understand":false}]`}, "<i2", "little", 8, nil, false},
		{"optional codec first", set{"codecs": `[{"name":"nonesuch","must_understand":false},"bytes"]`}, "<i2", "little", 8, nil, false},
		{"optional transformer", set{"storage_transformers": `[{"name":"x","must_understand":false}]`}, "<i2", "little", 8, nil, false},
		{"dimension names", set{"dimension_names": `["x"]`}, "<i2", "little", 8, nil, false},
		{"null dimension names", set{"dimension_names": `null`}, "<i2", "little", 8, nil, false},
		{"v2 key encoding", set{"chunk_key_encoding": `{"name":"v2","configuration":{"separator":"."}}`}, "<i2", "little", 8, nil, false},
		{"bare key encoding", set{"chunk_key_encoding": `"default"`}, "<i2", "little", 8, nil, false},
		{"null fill", set{"fill_value": `null`}, "<i2", "little", 8, nil, false},

		{"string", set{"data_type": `"string"`, "fill_value": `""`, "codecs": `[{"name":"vlen-utf8"},"zstd"]`}, "string", "", 0, codec.ErrNotRaw, false},
		{"unknown type", set{"data_type": `{"name":"quaternion","configuration":{}}`}, `{"name":"quaternion","configuration":{}}`, "", 0, codec.ErrNotRaw, false},
		{"vlen codec", set{"codecs": `[{"name":"vlen-bytes"}]`}, "<i2", "little", 8, codec.ErrNotRaw, false},
		{"unknown codec", set{"codecs": `["bytes","nonesuch"]`}, "<i2", "little", 8, codec.ErrUnknownCodec, false},
		{"pcodec", set{"codecs": `[{"name":"numcodecs.pcodec","configuration":{}}]`}, "<i2", "little", 8, codec.ErrUnknownCodec, false},
		{"extension", set{"my_ext": `{"x": 1}`}, "<i2", "little", 8, codec.ErrUnknownCodec, false},
		{"transformer", set{"storage_transformers": `[{"name":"x"}]`}, "<i2", "little", 8, codec.ErrUnknownCodec, false},
		{"rectilinear", set{"chunk_grid": `{"name":"rectilinear","configuration":{}}`}, "<i2", "little", 0, codec.ErrUnknownCodec, false},
		{"unknown key encoding", set{"chunk_key_encoding": `{"name":"morton"}`}, "<i2", "little", 8, codec.ErrUnknownCodec, false},

		{"format 2", set{"zarr_format": `2`}, "", "", 0, nil, true},
		{"no node type", set{"node_type": ""}, "", "", 0, nil, true},
		{"no shape", set{"shape": ""}, "", "", 0, nil, true},
		{"negative shape", set{"shape": `[-1]`}, "", "", 0, nil, true},
		{"rank mismatch", set{"shape": `[10, 10]`}, "", "", 0, nil, true},
		{"zero chunk", set{"chunk_grid": `{"name":"regular","configuration":{"chunk_shape":[0]}}`}, "", "", 0, nil, true},
		{"no chunk grid", set{"chunk_grid": ""}, "", "", 0, nil, true},
		{"no codecs", set{"codecs": `[]`}, "", "", 0, nil, true},
		{"codecs out of order", set{"codecs": `["bytes",{"name":"transpose","configuration":{"order":[0]}}]`}, "", "", 0, nil, true},
		{"two array-to-bytes", set{"codecs": `["bytes","bytes"]`}, "", "", 0, nil, true},
		{"no array-to-bytes", set{"codecs": `["zstd"]`}, "", "", 0, nil, true},
		{"bad endian", set{"codecs": `[{"name":"bytes","configuration":{"endian":"middle"}}]`}, "", "", 0, nil, true},
		{"bad transpose", set{"codecs": `[{"name":"transpose","configuration":{"order":[1]}},"bytes"]`}, "", "", 0, nil, true},
		{"fill out of range", set{"fill_value": `70000`}, "", "", 0, nil, true},
		{"fill not integral", set{"fill_value": `1.5`}, "", "", 0, nil, true},
		{"no fill", set{"fill_value": ""}, "", "", 0, nil, true},
		{"bad separator", set{"chunk_key_encoding": `{"name":"default","configuration":{"separator":"-"}}`}, "", "", 0, nil, true},
		{"dimension names length", set{"dimension_names": `["x","y"]`}, "", "", 0, nil, true},
		{"attributes list", set{"attributes": `[1]`}, "", "", 0, nil, true},
		{"r7", set{"data_type": `"r7"`}, "", "", 0, nil, true},
		{"bad datetime unit", set{"data_type": `{"name":"numpy.datetime64","configuration":{"unit":"fortnight"}}`}, "", "", 0, nil, true},
		{"zero datetime scale", set{"data_type": `{"name":"numpy.datetime64","configuration":{"unit":"s","scale_factor":0}}`}, "", "", 0, nil, true},
		{"huge datetime scale", set{"data_type": `{"name":"numpy.datetime64","configuration":{"unit":"s","scale_factor":2147483648}}`}, "", "", 0, nil, true},
		{"not json", set{}, "", "", 0, nil, true},
		{"sharding not dividing", set{"codecs": `[{"name":"sharding_indexed","configuration":{"chunk_shape":[3],"codecs":["bytes"],"index_codecs":["bytes"]}}]`}, "", "", 0, nil, true},
		{"sharding bad location", set{"codecs": `[{"name":"sharding_indexed","configuration":{"chunk_shape":[2],"codecs":["bytes"],"index_codecs":["bytes"],"index_location":"middle"}}]`}, "", "", 0, nil, true},
		{"sharding rank", set{"codecs": `[{"name":"sharding_indexed","configuration":{"chunk_shape":[2,2],"codecs":["bytes"],"index_codecs":["bytes"]}}]`}, "", "", 0, nil, true},
		{"index without bytes", set{"codecs": `[{"name":"sharding_indexed","configuration":{"chunk_shape":[2],"codecs":["bytes"],"index_codecs":["crc32c"]}}]`}, "", "", 0, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := v3Doc(tt.set)
			if tt.name == "not json" {
				doc = doc[:len(doc)-3]
			}
			a, g, err := ParseV3(doc)
			if tt.invalid {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("ParseV3 = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil || g != nil {
				t.Fatalf("ParseV3 = %v, group %v", err, g)
			}
			if a.DType != tt.dtype || a.Endian != tt.endian || a.ChunkLen() != tt.chunkLen {
				t.Errorf("DType %q Endian %q ChunkLen %d; want %q %q %d", a.DType, a.Endian, a.ChunkLen(), tt.dtype, tt.endian, tt.chunkLen)
			}
			switch {
			case tt.pass == nil && a.PassThrough != nil:
				t.Errorf("PassThrough = %v", a.PassThrough)
			case tt.pass != nil && !errors.Is(a.PassThrough, tt.pass):
				t.Errorf("PassThrough = %v, want %v", a.PassThrough, tt.pass)
			case tt.pass == nil && a.Decoder() == nil:
				t.Errorf("no decoder")
			}
		})
	}
}

func TestParseV3Group(t *testing.T) {
	tests := []struct {
		doc     string
		attrs   string
		entries int // -1: no consolidated metadata
		invalid bool
	}{
		{`{"zarr_format":3,"node_type":"group"}`, `{}`, -1, false},
		{`{"zarr_format":3,"node_type":"group","attributes":{"a":1},"consolidated_metadata":null}`, `{"a":1}`, -1, false},
		{`{"zarr_format":3,"node_type":"group","consolidated_metadata":{"kind":"inline","must_understand":false,"metadata":{}}}`, `{}`, 0, false},
		{`{"zarr_format":3,"node_type":"group","consolidated_metadata":{"kind":"inline","metadata":{"x":{"zarr_format":3,"node_type":"group"}}}}`, `{}`, 1, false},
		{`{"zarr_format":3,"node_type":"group","consolidated_metadata":{"kind":"sidecar"}}`, ``, 0, true},
		{`{"zarr_format":3,"node_type":"group","attributes":[]}`, ``, 0, true},
		{`{"zarr_format":3,"node_type":"folder"}`, ``, 0, true},
		{`{"zarr_format":2}`, ``, 0, true},
		{`[]`, ``, 0, true},
	}
	for _, tt := range tests {
		a, g, err := ParseV3([]byte(tt.doc))
		if tt.invalid {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: err = %v, want ErrInvalid", tt.doc, err)
			}
			continue
		}
		if err != nil || a != nil || g == nil {
			t.Errorf("%s: %v %v %v", tt.doc, a, g, err)
			continue
		}
		if !jsonEqual(g.Attributes, json.RawMessage(tt.attrs)) || (tt.entries < 0) != (g.Consolidated == nil) || (tt.entries >= 0 && len(g.Consolidated) != tt.entries) {
			t.Errorf("%s: attributes %s, consolidated %v", tt.doc, g.Attributes, g.Consolidated)
		}
	}
}

func TestV3Fill(t *testing.T) {
	tests := []struct {
		dtype, fill string
		big         bool
		want        []byte // nil with v2 "": invalid
		v2          string // the --as-v2 fill_value
	}{
		{`"int16"`, `-1`, false, []byte{0xff, 0xff}, `-1`},
		{`"int16"`, `-2`, true, []byte{0xff, 0xfe}, `-2`},
		{`"int32"`, `7.0`, false, []byte{7, 0, 0, 0}, `7`},
		{`"uint64"`, `18446744073709551615`, false, []byte{255, 255, 255, 255, 255, 255, 255, 255}, `18446744073709551615`},
		{`"int64"`, `-9223372036854775808`, true, []byte{0x80, 0, 0, 0, 0, 0, 0, 0}, `-9223372036854775808`},
		{`"bool"`, `true`, false, []byte{1}, `true`},
		{`"float32"`, `"NaN"`, false, []byte{0, 0, 0xc0, 0x7f}, `"NaN"`},
		{`"float32"`, `"Infinity"`, true, []byte{0x7f, 0x80, 0, 0}, `"Infinity"`},
		{`"float64"`, `"-Infinity"`, false, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0xff}, `"-Infinity"`},
		{`"float64"`, `"0x7ff0000000000001"`, false, []byte{1, 0, 0, 0, 0, 0, 0xf0, 0x7f}, `"NaN"`},
		{`"float32"`, `"0x3f800000"`, false, []byte{0, 0, 0x80, 0x3f}, `1`},
		{`"float32"`, `0.1`, false, []byte{0xcd, 0xcc, 0xcc, 0x3d}, `0.1`},
		{`"float16"`, `1000.5`, false, []byte{0xd1, 0x63}, `1000.5`},
		{`"float16"`, `"0x3c00"`, true, []byte{0x3c, 0}, `1`},
		{`"complex64"`, `[1.5, "NaN"]`, false, []byte{0, 0, 0xc0, 0x3f, 0, 0, 0xc0, 0x7f}, `[1.5, "NaN"]`},
		{`"r16"`, `[1, 255]`, false, []byte{1, 255}, `"Af8="`},
		{`{"name":"numpy.datetime64","configuration":{"unit":"ns"}}`, `"NaT"`, false, []byte{0, 0, 0, 0, 0, 0, 0, 0x80}, `-9223372036854775808`},
		{`{"name":"fixed_length_utf32","configuration":{"length_bytes":12}}`, `"ab"`, false, []byte{'a', 0, 0, 0, 'b', 0, 0, 0, 0, 0, 0, 0}, `"ab"`},
		{`{"name":"null_terminated_bytes","configuration":{"length_bytes":3}}`, `"YQ=="`, false, []byte{'a', 0, 0}, `"YQAA"`},
		{`"int16"`, `null`, false, nil, `null`},

		{`"int8"`, `128`, false, nil, ``},
		{`"uint8"`, `-1`, false, nil, ``},
		{`"int16"`, `"1"`, false, nil, ``},
		{`"float32"`, `"1.5"`, false, nil, ``},
		{`"float32"`, `"0xZZ"`, false, nil, ``},
		{`"bool"`, `"yes"`, false, nil, ``},
		{`"r16"`, `[1]`, false, nil, ``},
		{`"r16"`, `[1, 256]`, false, nil, ``},
		{`"complex64"`, `1`, false, nil, ``},
		{`{"name":"fixed_length_utf32","configuration":{"length_bytes":4}}`, `"ab"`, false, nil, ``},
	}
	for _, tt := range tests {
		dt, err := parseDataType(json.RawMessage(tt.dtype))
		if err != nil {
			t.Fatal(err)
		}
		dt.Big = tt.big
		got, err := dt.fill(json.RawMessage(tt.fill))
		if tt.want == nil && tt.v2 == "" {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s %s: fill = %v, %v; want ErrInvalid", tt.dtype, tt.fill, got, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, tt.want) {
			t.Errorf("%s %s: fill = %v, %v; want %v", tt.dtype, tt.fill, got, err, tt.want)
		}
		if v2 := dt.v2Fill(json.RawMessage(tt.fill), got); !jsonEqual(v2, json.RawMessage(tt.v2)) {
			t.Errorf("%s %s: v2 fill = %s, want %s", tt.dtype, tt.fill, v2, tt.v2)
		}
	}
	if math.Float32frombits(0x3dcccccd) != 0.1 {
		t.Fatal("float32 0.1 bits")
	}
}

func TestV3ChunkKeys(t *testing.T) {
	doc := func(enc string, shape string) []byte {
		chunks := "[]"
		if shape != "[]" {
			chunks = "[4, 3, 3]"
		}
		return v3Doc(map[string]string{"chunk_key_encoding": enc, "shape": shape,
			"chunk_grid": `{"name":"regular","configuration":{"chunk_shape":` + chunks + `}}`})
	}
	tests := []struct {
		enc, shape string
		coords     []int
		key        string
		v2key      string // the --as-v2 key
		bad        []string
	}{
		{`{"name":"default","configuration":{"separator":"/"}}`, "[10, 7, 3]", []int{2, 1, 0}, "c/2/1/0", "2/1/0", []string{"2/1/0", "c/2/1", "c.2.1.0", "c/3/0/0", "c/2/1/00", "x/2/1/0", "c"}},
		{`{"name":"default"}`, "[10, 7, 3]", []int{2, 1, 0}, "c/2/1/0", "2/1/0", []string{"c.2.1.0"}},
		{`{"name":"default","configuration":{"separator":"."}}`, "[10, 7, 3]", []int{2, 1, 0}, "c.2.1.0", "2.1.0", []string{"c/2/1/0", "2.1.0"}},
		{`{"name":"v2","configuration":{"separator":"."}}`, "[10, 7, 3]", []int{2, 1, 0}, "2.1.0", "2.1.0", []string{"c.2.1.0", "2/1/0"}},
		{`{"name":"v2"}`, "[10, 7, 3]", []int{2, 1, 0}, "2.1.0", "2.1.0", []string{"2/1/0"}},
		{`{"name":"v2","configuration":{"separator":"/"}}`, "[10, 7, 3]", []int{2, 1, 0}, "2/1/0", "2/1/0", []string{"2.1.0"}},
		{`{"name":"default"}`, "[]", []int{}, "c", "0", []string{"0", "c/0"}},
		{`{"name":"v2"}`, "[]", []int{}, "0", "0", []string{"c"}},
	}
	for _, tt := range tests {
		a, _, err := ParseV3(doc(tt.enc, tt.shape))
		if err != nil || a.PassThrough != nil {
			t.Fatalf("%s: %v %v", tt.enc, err, a.PassThrough)
		}
		if k := a.ChunkKey(tt.coords); k != tt.key {
			t.Errorf("%s: ChunkKey(%v) = %q, want %q", tt.enc, tt.coords, k, tt.key)
		}
		if c, ok := a.ParseChunkKey(tt.key); !ok || !slices.Equal(c, tt.coords) {
			t.Errorf("%s: ParseChunkKey(%q) = %v %v", tt.enc, tt.key, c, ok)
		}
		if k, _, sharded := a.StoredKey(tt.coords); k != tt.key || sharded {
			t.Errorf("%s: StoredKey = %q %v", tt.enc, k, sharded)
		}
		for _, b := range tt.bad {
			if c, ok := a.ParseChunkKey(b); ok {
				t.Errorf("%s: ParseChunkKey(%q) = %v, want not a key", tt.enc, b, c)
			}
		}
		v, err := a.AsV2()
		if err != nil {
			t.Fatal(err)
		}
		if k := v.ChunkKey(tt.coords); k != tt.v2key {
			t.Errorf("%s: v2 ChunkKey = %q, want %q", tt.enc, k, tt.v2key)
		}
		if c, ok := v.ParseChunkKey(tt.v2key); !ok || !slices.Equal(c, tt.coords) {
			t.Errorf("%s: v2 ParseChunkKey(%q) = %v %v", tt.enc, tt.v2key, c, ok)
		}
		if k, _, _ := v.StoredKey(tt.coords); k != tt.key {
			t.Errorf("%s: v2 view StoredKey = %q, want the stored %q", tt.enc, k, tt.key)
		}
		if v.Legacy() || a.Legacy() {
			t.Errorf("%s: Legacy", tt.enc)
		}
	}
}
