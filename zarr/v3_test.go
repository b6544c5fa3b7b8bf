package zarr

import (
	"bytes"
	"encoding/json"
	"errors"
	iofs "io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/codec"
)

// v3Need skips a test when something it needs is absent, and fails it in CI.
func v3Need(t testing.TB, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s required in CI", what)
	}
	t.Skipf("no %s", what)
}

// v3Shared returns the shared directory (ZFUSE_SHARED, or ../shared beside
// the repository root), or "" when it is absent.
func v3Shared() string {
	if d := os.Getenv("ZFUSE_SHARED"); d != "" {
		return d
	}
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(dir, "..", "shared")
			if _, err := os.Stat(d); err == nil {
				return d
			}
			return ""
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

func zarritaV3(t testing.TB) string {
	t.Helper()
	s := v3Shared()
	d := filepath.Join(s, "conformance", "zarrita.js", "fixtures", "v3", "data.zarr")
	_, err := os.Stat(filepath.Join(d, "zarr.json"))
	v3Need(t, "conformance/zarrita.js/fixtures/v3", s != "" && err == nil)
	return d
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
		if errors.Is(err, iofs.ErrNotExist) {
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
		local := unravel(e, a.Chunks)
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

func arange(from, to int) []float64 {
	var v []float64
	for i := from; i < to; i++ {
		v = append(v, float64(i))
	}
	return v
}

// zarritaV3Values are the values generate-v3.py wrote (MANIFEST §5).
var zarritaV3Values = map[string]struct {
	kind   byte
	values []float64
}{
	"1d.contiguous.gzip.i2":                   {'i', []float64{1, 2, 3, 4}},
	"1d.contiguous.blosc.i2":                  {'i', []float64{1, 2, 3, 4}},
	"1d.contiguous.raw.i2":                    {'i', []float64{1, 2, 3, 4}},
	"1d.contiguous.i4":                        {'i', []float64{1, 2, 3, 4}},
	"1d.contiguous.u1":                        {'u', []float64{255, 0, 255, 0}},
	"1d.contiguous.f2.le":                     {'f', []float64{-1000.5, 0, 1000.5, 0}},
	"1d.contiguous.f4.le":                     {'f', []float64{-1000.5, 0, 1000.5, 0}},
	"1d.contiguous.f4.be":                     {'f', []float64{-1000.5, 0, 1000.5, 0}},
	"1d.contiguous.f8":                        {'f', []float64{1.5, 2.5, 3.5, 4.5}},
	"1d.contiguous.b1":                        {'b', []float64{1, 0, 1, 0}},
	"1d.chunked.i2":                           {'i', []float64{1, 2, 3, 4}},
	"1d.chunked.ragged.i2":                    {'i', []float64{1, 2, 3, 4, 5}},
	"2d.contiguous.i2":                        {'i', []float64{1, 2, 3, 4}},
	"2d.chunked.i2":                           {'i', []float64{1, 2, 3, 4}},
	"2d.chunked.ragged.i2":                    {'i', arange(1, 10)},
	"3d.contiguous.i2":                        {'i', arange(0, 27)},
	"3d.chunked.i2":                           {'i', arange(0, 27)},
	"3d.chunked.mixed.i2.C":                   {'i', arange(0, 27)},
	"3d.chunked.mixed.i2.F":                   {'i', arange(0, 27)},
	"1d.contiguous.compressed.sharded.i2":     {'i', []float64{1, 2, 3, 4}},
	"1d.contiguous.compressed.sharded.i4":     {'i', []float64{1, 2, 3, 4}},
	"1d.contiguous.compressed.sharded.u1":     {'u', []float64{255, 0, 255, 0}},
	"1d.contiguous.compressed.sharded.f4":     {'f', []float64{-1000.5, 0, 1000.5, 0}},
	"1d.contiguous.compressed.sharded.f8":     {'f', []float64{1.5, 2.5, 3.5, 4.5}},
	"1d.contiguous.compressed.sharded.b1":     {'b', []float64{1, 0, 1, 0}},
	"1d.chunked.compressed.sharded.i2":        {'i', []float64{1, 2, 3, 4}},
	"1d.chunked.filled.compressed.sharded.i2": {'i', []float64{1, 2, 0, 0}},
	"2d.contiguous.compressed.sharded.i2":     {'i', []float64{1, 2, 3, 4}},
	"2d.chunked.compressed.sharded.filled.i2": {'i', arange(0, 16)},
	"2d.chunked.compressed.sharded.i2":        {'i', arange(1, 17)},
	"2d.chunked.ragged.compressed.sharded.i2": {'i', arange(1, 10)},
	"3d.contiguous.compressed.sharded.i2":     {'i', arange(0, 27)},
	"3d.chunked.compressed.sharded.i2":        {'i', arange(0, 64)},
	"3d.chunked.mixed.compressed.sharded.i2":  {'i', arange(0, 27)},
	"1d.contiguous.delta.i4":                  {'i', []float64{1, 2, 3, 4}},
	"3d.contiguous.delta.i4.mixed":            {'i', arange(0, 27)},
	"consolidated/1d.chunked.i2":              {'i', []float64{1, 2, 3, 4}},
	"consolidated/2d.contiguous.i2":           {'i', []float64{1, 2, 3, 4}},
	"consolidated/nested/1d.i2":               {'i', []float64{10, 20, 30, 40}},
}

// zarritaV3Nodes returns every zarr.json under root, by path relative to root.
func zarritaV3Nodes(t testing.TB, root string) map[string][]byte {
	nodes := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
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
		want, known := zarritaV3Values[rel]
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
			if w := encodeValues(a, want.kind, want.values); !bytes.Equal(got, w) {
				t.Errorf("decoded %v\nwant    %v\ncodecs %s", got, w, a.Codecs)
			}
		})
		decoded++
	}
	if decoded != len(zarritaV3Values) {
		t.Errorf("decoded %d arrays, want %d", decoded, len(zarritaV3Values))
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
	if _, err := readChunkV3(dir, a, []int{0, 0}); !errors.Is(err, iofs.ErrNotExist) {
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
	if _, err := readChunkV3(dir, a, []int{3}); !errors.Is(err, iofs.ErrNotExist) {
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
		out, err := RewriteV3(doc)
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

	out, err := RewriteV3(doc)
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
	out, err = RewriteV3(root2)
	if err != nil || !bytes.Contains(out, []byte(`"consolidated_metadata": null`)) {
		t.Errorf("root group: %v\n%s", err, out)
	}
}

// unused guard for math import in later tests
var _ = math.NaN
