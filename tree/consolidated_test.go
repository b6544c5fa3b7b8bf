package tree

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
)

// TestConsolidatedDescribesServed: consolidated metadata describes what
// each array's directory serves, not what its entry alone says. An array
// whose own .zarray (zarr.json) is invalid is passed through, its chunks
// served as stored: its entry stays as stored (a consolidated reader then
// decompresses the stored chunks itself), in .zmetadata and in a v3
// group's consolidated metadata alike; under --as-v2, where such an array
// is not shown, its entry is left out.
func TestConsolidatedDescribesServed(t *testing.T) {
	root := t.TempDir()
	write := func(key, data string) { testutil.WriteFile(t, root, key, []byte(data)) }
	za := `{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "|u1", "compressor": {"id": "zlib", "level": 1}, "fill_value": 0, "order": "C", "filters": null}`
	chunk := string(testutil.ZlibBytes(t, []byte{1, 2}))
	write(".zgroup", `{"zarr_format": 2}`)
	write("sparse/.zarray", za[:40]) // truncated
	write("sparse/0", chunk)
	write("ok/.zarray", za)
	write("ok/0", chunk)
	write(".zmetadata", `{"zarr_consolidated_format": 1, "metadata": {".zgroup": {"zarr_format": 2}, "sparse/.zarray": `+za+`, "ok/.zarray": `+za+`}}`)
	zj := `{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
		"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
		"chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
		"fill_value": 0, "codecs": [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}], "attributes": {}}`
	write("v3/zarr.json", `{"zarr_format": 3, "node_type": "group", "attributes": {},
		"consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata": {"a": `+zj+`, "b": `+zj+`}}}`)
	write("v3/a/zarr.json", zj[:50]) // truncated
	write("v3/b/zarr.json", zj)
	ctx := context.Background()

	t.Run("v2", func(t *testing.T) {
		tr, _ := treeOver(t, dirStore(t, root))
		var doc struct {
			Metadata map[string]json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal(testutil.Must(tr.ReadFile(ctx, ".zmetadata")), &doc); err != nil {
			t.Fatal(err)
		}
		if c := compressor(t, doc.Metadata["sparse/.zarray"]); c != `{"id":"zlib","level":1}` {
			t.Errorf(".zmetadata says compressor %s for sparse, whose chunks are served as stored", c)
		}
		if c := compressor(t, doc.Metadata["ok/.zarray"]); c != "null" {
			t.Errorf(".zmetadata says compressor %s for ok, whose chunks are served decoded", c)
		}
		if got := testutil.Must(tr.ReadFile(ctx, "sparse/0")); string(got) != chunk {
			t.Errorf("sparse/0 = %x, want it as stored", got)
		}
	})
	t.Run("v3", func(t *testing.T) {
		tr, _ := treeOver(t, dirStore(t, root))
		var doc struct {
			Consolidated struct {
				Metadata map[string]struct {
					Codecs json.RawMessage `json:"codecs"`
				} `json:"metadata"`
			} `json:"consolidated_metadata"`
		}
		if err := json.Unmarshal(testutil.Must(tr.ReadFile(ctx, "v3/zarr.json")), &doc); err != nil {
			t.Fatal(err)
		}
		if c := compact(t, doc.Consolidated.Metadata["a"].Codecs); c != `[{"name":"bytes"},{"name":"gzip","configuration":{"level":1}}]` {
			t.Errorf("consolidated codecs of a, passed through: %s, want them as stored", c)
		}
		if c := compact(t, doc.Consolidated.Metadata["b"].Codecs); c != `[{"name":"bytes"}]` {
			t.Errorf("consolidated codecs of b, served decoded: %s", c)
		}
	})
	t.Run("as-v2", func(t *testing.T) {
		tr, _ := treeOver(t, dirStore(t, root), func(c *Config) { c.AsV2 = true })
		var doc struct {
			Metadata map[string]json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal(testutil.Must(tr.ReadFile(ctx, "v3/.zmetadata")), &doc); err != nil {
			t.Fatal(err)
		}
		if _, ok := doc.Metadata["a/.zarray"]; ok {
			t.Errorf("v3/.zmetadata describes a, which --as-v2 does not show")
		}
		if c := compressor(t, doc.Metadata["b/.zarray"]); c != "null" {
			t.Errorf("v3/.zmetadata: b's compressor %s", c)
		}
	})
}

// dirStore opens the directory root as a store, closed when the test ends.
func dirStore(t testing.TB, root string) store.Store {
	ds, err := store.Dir(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	return ds
}

// compressor is the "compressor" of a .zarray document, compacted.
func compressor(t *testing.T, zarray []byte) string {
	t.Helper()
	var m struct {
		Compressor json.RawMessage `json:"compressor"`
	}
	if err := json.Unmarshal(zarray, &m); err != nil {
		t.Fatalf("%s: %v", zarray, err)
	}
	return compact(t, m.Compressor)
}

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return buf.String()
}
