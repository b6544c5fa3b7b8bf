package zarr

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// seedMetadata adds every file named name under ../shared/conformance to
// f's seed corpus (metadata other implementations wrote).
func seedMetadata(f *testing.F, names ...string) {
	root := filepath.Join(testutil.Shared(f), "conformance")
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && slices.Contains(names, d.Name()) {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
		return nil
	})
}

// checkKeys checks that chunk keys round-trip on a: the first and the last
// chunk's key parses back to its coordinates, stored keys too.
func checkKeys(t *testing.T, a *Array) {
	t.Helper()
	if a.NumChunks() <= 0 {
		return
	}
	for _, lin := range []int64{0, a.NumChunks() - 1} {
		c := a.Coords(lin)
		if got := a.Linear(c); got != lin {
			t.Fatalf("Linear(Coords(%d)) = %d", lin, got)
		}
		key := a.ChunkKey(c)
		if got, ok := a.ParseChunkKey(key); !ok || !slices.Equal(got, c) {
			t.Fatalf("ParseChunkKey(ChunkKey(%v) = %q) = %v, %v", c, key, got, ok)
		}
		skey, inner, sharded := a.StoredKey(c)
		sc, ok := a.ParseStoredKey(skey)
		if !ok {
			t.Fatalf("ParseStoredKey(StoredKey(%v) = %q) failed", c, skey)
		}
		if sharded {
			if got, ok := a.InnerCoords(sc, inner); !ok || !slices.Equal(got, c) {
				t.Fatalf("InnerCoords(%v, %d) = %v, %v; want %v", sc, inner, got, ok, c)
			}
		}
	}
}

// FuzzParseV2 feeds arbitrary .zarray documents to the v2 parser: no
// panics; an array that parses as raw rewrites to a .zarray that says no
// compression and parses to the same array; its chunk keys round-trip.
func FuzzParseV2(f *testing.F) {
	seedMetadata(f, ArrayFile)
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseV2(b)
		if err != nil || a.PassThrough != nil {
			return
		}
		checkKeys(t, a)
		out, err := RewriteV2Array(b, a)
		if err != nil {
			t.Fatalf("parses, but does not rewrite: %v", err)
		}
		a2, err := ParseV2(out)
		if err != nil || a2.PassThrough != nil {
			t.Fatalf("the rewritten .zarray does not parse raw: %v, %v\n%s", err, a2.PassThrough, out)
		}
		if a2.ChunkLen() != a.ChunkLen() || !slices.Equal(a2.Grid(), a.Grid()) || a2.DType != a.DType || a2.Separator != a.Separator {
			t.Fatalf("rewritten: chunk %d bytes, grid %v, %s %q; was %d, %v, %s %q", a2.ChunkLen(), a2.Grid(), a2.DType, a2.Separator,
				a.ChunkLen(), a.Grid(), a.DType, a.Separator)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil || string(m["compressor"]) != "null" || string(m["filters"]) != "null" {
			t.Fatalf("the rewritten .zarray says compressor %s, filters %s (%v)", m["compressor"], m["filters"], err)
		}
		// Found nested, a legacy array's keys are "0/0", and its presented
		// .zarray says so.
		n, err := a.ResolveSeparator(func() ([]string, error) { return []string{"0"}, nil })
		if err != nil || n == a {
			return
		}
		checkKeys(t, n)
		out, err = RewriteV2Array(b, n)
		if err != nil {
			t.Fatalf("parses, but does not rewrite nested: %v", err)
		}
		if a2, err := ParseV2(out); err != nil || a2.Separator != "/" || a2.Legacy() || !slices.Equal(a2.Grid(), a.Grid()) {
			t.Fatalf("the rewritten nested .zarray parses to %v (separator %q), %v\n%s", a2, a2.Separator, err, out)
		}
	})
}

// FuzzParseV3 feeds arbitrary zarr.json documents to the v3 parser: no
// panics; a raw array rewrites to a zarr.json that parses to the same
// presented array (unsharded, one bytes codec), its chunk and stored keys
// round-trip, and AsV2 and V2Files do not fail on what parsed.
func FuzzParseV3(f *testing.F) {
	seedMetadata(f, MetadataFile)
	f.Fuzz(func(t *testing.T, b []byte) {
		a, _, err := ParseV3(b)
		if err != nil {
			return
		}
		V2Files(b, nil)
		checkArrayDirs(t, ConsolidatedArrays(b))
		if a == nil || a.PassThrough != nil {
			return
		}
		checkKeys(t, a)
		out, err := RewriteV3(b, nil)
		if err != nil {
			t.Fatalf("parses, but does not rewrite: %v", err)
		}
		a2, _, err := ParseV3(out)
		if err != nil || a2 == nil || a2.PassThrough != nil {
			t.Fatalf("the rewritten zarr.json does not parse raw: %v\n%s", err, out)
		}
		if a2.Shard() != nil || a2.ChunkLen() != a.ChunkLen() || !slices.Equal(a2.Grid(), a.Grid()) {
			t.Fatalf("rewritten: sharded %v, chunk %d bytes, grid %v; was %d, %v", a2.Shard() != nil, a2.ChunkLen(), a2.Grid(), a.ChunkLen(), a.Grid())
		}
		if v, err := a.AsV2(); err == nil {
			checkKeys(t, v)
		}
	})
}

// FuzzConsolidated feeds arbitrary .zmetadata documents to the rewriter:
// no panics; what it rewrites is JSON, and rewriting that again changes
// nothing.
func FuzzConsolidated(f *testing.F) {
	seedMetadata(f, ConsolidatedFile)
	f.Add([]byte(`{"zarr_consolidated_format":1,"metadata":{".zgroup":{"zarr_format":2},"a/.zarray":{"zarr_format":2,"shape":[4],"chunks":[2],"dtype":"<i4","compressor":{"id":"zlib","level":1},"filters":null,"fill_value":0,"order":"C"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkArrayDirs(t, ConsolidatedArrays(b))
		out, err := RewriteV2Consolidated(b, nil)
		if err != nil {
			return
		}
		// Nothing presented raw: every entry stays as stored.
		stored, err := RewriteV2Consolidated(b, func(string) *Array { return nil })
		if err != nil {
			t.Fatalf("rewrites with its own parse, not with none raw: %v", err)
		}
		if e, err := v2Entries(stored); err != nil || !sameEntries(t, e, b) {
			t.Fatalf("with no array raw, entries changed: %v\n%s\nfrom\n%s", err, stored, b)
		}
		if !json.Valid(out) {
			t.Fatalf("rewrote to invalid JSON:\n%s", out)
		}
		again, err := RewriteV2Consolidated(out, nil)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("rewriting again: %v\n%s\nthen\n%s", err, out, again)
		}
	})
}

// checkArrayDirs fails unless every directory ConsolidatedArrays gave is a
// valid path below the document's, in order, once.
func checkArrayDirs(t *testing.T, dirs []string) {
	t.Helper()
	for i, d := range dirs {
		if !fs.ValidPath(d) || (i > 0 && dirs[i-1] >= d) {
			t.Fatalf("ConsolidatedArrays: %q", dirs)
		}
	}
}

// sameEntries reports whether the entries e are those of the .zmetadata
// document b, as JSON values.
func sameEntries(t *testing.T, e map[string]json.RawMessage, b []byte) bool {
	t.Helper()
	want, err := v2Entries(b)
	if err != nil || len(want) != len(e) {
		return false
	}
	for k, v := range want {
		var x, y any
		if json.Unmarshal(v, &x) != nil || json.Unmarshal(e[k], &y) != nil {
			return false
		}
		if !bytes.Equal(testJSON(x), testJSON(y)) {
			return false
		}
	}
	return true
}

func testJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// FuzzChunkKey parses arbitrary keys against arrays of every key layout:
// a key that parses names coordinates inside the grid and is the key
// ChunkKey gives them (legacy arrays also take "0/0" for "0.0").
func FuzzChunkKey(f *testing.F) {
	docs := []string{
		`{"zarr_format":2,"shape":[10,7,3],"chunks":[3,2,3],"dtype":"<i2","compressor":null,"filters":null,"fill_value":0,"order":"C","dimension_separator":"."}`,
		`{"zarr_format":2,"shape":[10,7],"chunks":[3,2],"dtype":"<f8","compressor":null,"filters":null,"fill_value":0,"order":"F","dimension_separator":"/"}`,
		`{"zarr_format":2,"shape":[10,7],"chunks":[3,2],"dtype":"|u1","compressor":null,"filters":null,"fill_value":0,"order":"C"}`,
		`{"zarr_format":2,"shape":[],"chunks":[],"dtype":"<i8","compressor":null,"filters":null,"fill_value":0,"order":"C"}`,
	}
	v3 := []string{
		`{"zarr_format":3,"node_type":"array","shape":[10,7,3],"data_type":"int16","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[3,2,3]}},"chunk_key_encoding":{"name":"default"},"fill_value":0,"codecs":[{"name":"bytes","configuration":{"endian":"little"}}]}`,
		`{"zarr_format":3,"node_type":"array","shape":[10,7],"data_type":"int16","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[3,2]}},"chunk_key_encoding":{"name":"v2","configuration":{"separator":"."}},"fill_value":0,"codecs":[{"name":"bytes","configuration":{"endian":"little"}}]}`,
		`{"zarr_format":3,"node_type":"array","shape":[8,8],"data_type":"int16","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[4,4]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"."}},"fill_value":0,"codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[2,2],"codecs":[{"name":"bytes","configuration":{"endian":"little"}}],"index_codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}]}}]}`,
	}
	var arrays []*Array
	for _, d := range docs {
		a, err := ParseV2([]byte(d))
		if err != nil {
			f.Fatal(err)
		}
		arrays = append(arrays, a)
	}
	for _, d := range v3 {
		a, _, err := ParseV3([]byte(d))
		if err != nil || a == nil {
			f.Fatal(err)
		}
		arrays = append(arrays, a)
	}
	for _, k := range []string{"0.0.0", "3.3.0", "0/1", "3/6", "c/0/0/0", "c/3/3/0", "0", "c", "c.1.1", "1.1", "01.1", "-1.0", "1.+1", "c/0/0/0/0", "1//1"} {
		f.Add(k, uint8(0))
	}
	f.Fuzz(func(t *testing.T, rel string, which uint8) {
		a := arrays[int(which)%len(arrays)]
		if c, ok := a.ParseChunkKey(rel); ok {
			if len(c) != len(a.Grid()) {
				t.Fatalf("%q: %d coordinates for %d dimensions", rel, len(c), len(a.Grid()))
			}
			for d, x := range c {
				if x < 0 || x >= a.Grid()[d] {
					t.Fatalf("%q: coordinates %v outside the grid %v", rel, c, a.Grid())
				}
			}
			if key := a.ChunkKey(c); key != rel {
				t.Fatalf("%q parses to %v, whose key is %q", rel, c, key)
			}
		}
		if c, ok := a.ParseStoredKey(rel); ok {
			for d, x := range c {
				if x < 0 || x >= a.StoredGrid()[d] {
					t.Fatalf("stored key %q: coordinates %v outside the stored grid %v", rel, c, a.StoredGrid())
				}
			}
		}
	})
}
