package zarr

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/internal/testutil"
)

func TestParseV2(t *testing.T) {
	const base = `"zarr_format": 2, "order": "C", "fill_value": 0, "filters": null`
	tests := []struct {
		name     string
		doc      string
		chunkLen int64
		grid     []int
		pass     error // wanted PassThrough, or nil
		invalid  bool
	}{
		{"f4 2d", `{` + base + `, "shape": [10, 7], "chunks": [4, 3], "dtype": "<f4", "compressor": {"id": "zlib", "level": 1}}`, 48, []int{3, 3}, nil, false},
		{"0-d", `{` + base + `, "shape": [], "chunks": [], "dtype": "<i8", "compressor": null}`, 8, []int{}, nil, false},
		{"empty dim", `{` + base + `, "shape": [0, 5], "chunks": [2, 5], "dtype": "|u1", "compressor": null}`, 10, []int{0, 1}, nil, false},
		{"unicode", `{` + base + `, "shape": [4], "chunks": [2], "dtype": "<U3", "compressor": null}`, 24, []int{2}, nil, false},
		{"datetime", `{` + base + `, "shape": [4], "chunks": [4], "dtype": "<M8[ns]", "compressor": null}`, 32, []int{1}, nil, false},
		{"structured", `{` + base + `, "shape": [3], "chunks": [3], "dtype": [["x", "<f4"], ["y", ">i2"], ["w", "<f8", [2, 2]]], "compressor": null}`, 3 * (4 + 2 + 32), []int{1}, nil, false},
		{"bare NaN fill", `{"zarr_format": 2, "order": "F", "fill_value": NaN, "filters": [], "shape": [5], "chunks": [5], "dtype": "<f8", "compressor": null}`, 40, []int{1}, nil, false},
		{"object", `{` + base + `, "shape": [4], "chunks": [2], "dtype": "|O", "compressor": null, "filters": [{"id": "vlen-utf8"}]}`, 16, []int{2}, codec.ErrNotRaw, false},
		{"unknown codec", `{` + base + `, "shape": [4], "chunks": [2], "dtype": "<i2", "compressor": {"id": "nonesuch"}}`, 4, []int{2}, codec.ErrUnknownCodec, false},
		{"negative shape", `{` + base + `, "shape": [-1], "chunks": [2], "dtype": "<i2", "compressor": null}`, 0, nil, nil, true},
		{"zero chunk", `{` + base + `, "shape": [4], "chunks": [0], "dtype": "<i2", "compressor": null}`, 0, nil, nil, true},
		{"huge chunk", `{` + base + `, "shape": [4, 4], "chunks": [1000000, 1000000], "dtype": "<i2", "compressor": null}`, 0, nil, nil, true},
		{"rank mismatch", `{` + base + `, "shape": [4, 4], "chunks": [2], "dtype": "<i2", "compressor": null}`, 0, nil, nil, true},
		{"unknown dtype", `{` + base + `, "shape": [4], "chunks": [2], "dtype": "<q7", "compressor": null}`, 0, nil, nil, true},
		{"bad int size", `{` + base + `, "shape": [4], "chunks": [2], "dtype": "<i3", "compressor": null}`, 0, nil, nil, true},
		{"datetime zero multiplier", `{` + base + `, "shape": [4], "chunks": [2], "dtype": "<M8[0s]", "compressor": null}`, 0, nil, nil, true},
		{"dtype name", `{` + base + `, "shape": [4], "chunks": [2], "dtype": "int16", "compressor": null}`, 0, nil, nil, true},
		{"format 3", `{"zarr_format": 3, "order": "C", "shape": [4], "chunks": [2], "dtype": "<i2"}`, 0, nil, nil, true},
		{"bad order", `{"zarr_format": 2, "order": "X", "shape": [4], "chunks": [2], "dtype": "<i2", "compressor": null}`, 0, nil, nil, true},
		{"not json", `{"zarr_format": 2,`, 0, nil, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseV2([]byte(tt.doc))
			if tt.invalid {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("ParseV2 = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.ChunkLen() != tt.chunkLen || !slices.Equal(a.Grid(), tt.grid) {
				t.Errorf("ChunkLen, Grid = %d, %v; want %d, %v", a.ChunkLen(), a.Grid(), tt.chunkLen, tt.grid)
			}
			switch {
			case tt.pass == nil && a.PassThrough != nil:
				t.Errorf("PassThrough = %v, want nil", a.PassThrough)
			case tt.pass != nil && !errors.Is(a.PassThrough, tt.pass):
				t.Errorf("PassThrough = %v, want %v", a.PassThrough, tt.pass)
			case tt.pass == nil && a.Decoder() == nil:
				t.Errorf("no decoder")
			}
		})
	}
}

func TestChunkKeys(t *testing.T) {
	doc := func(sep string) string {
		s := `{"zarr_format": 2, "order": "C", "shape": [10, 7, 3], "chunks": [4, 3, 3], "dtype": "<i2", "compressor": null, "filters": null, "fill_value": 0`
		if sep != "" {
			s += `, "dimension_separator": "` + sep + `"`
		}
		return s + "}"
	}
	tests := []struct {
		sep, key string
		want     []int // nil: not a chunk key
		beyond   bool  // a chunk key of a grown array (BeyondGrid)
	}{
		{".", "2.1.0", []int{2, 1, 0}, false},
		{".", "2/1/0", nil, false},
		{".", "3.0.0", nil, true}, // outside the grid
		{".", "2.3.0", nil, true},
		{".", "0.0", nil, false},
		{".", "01.0.0", nil, false},
		{".", "-0.0.0", nil, false},
		{".", "3.0.-1", nil, false},
		{".", ".zarray", nil, false},
		{"/", "2/1/0", []int{2, 1, 0}, false},
		{"/", "9/1/0", nil, true},
		{"/", "2.1.0", nil, false},
		{"", "2.1.0", []int{2, 1, 0}, false},
		{"", "2/1/0", nil, false}, // legacy: nested only once ResolveSeparator finds it so
	}
	for _, tt := range tests {
		a, err := ParseV2([]byte(doc(tt.sep)))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := a.ParseChunkKey(tt.key)
		if ok != (tt.want != nil) || !slices.Equal(got, tt.want) {
			t.Errorf("sep %q: ParseChunkKey(%q) = %v, %v; want %v", tt.sep, tt.key, got, ok, tt.want)
		}
		if b := a.BeyondGrid(tt.key); b != tt.beyond {
			t.Errorf("sep %q: BeyondGrid(%q) = %v, want %v", tt.sep, tt.key, b, tt.beyond)
		}
		if tt.want != nil {
			if k := a.ChunkKey(tt.want); k != tt.key {
				t.Errorf("ChunkKey(%v) = %q, want %q", tt.want, k, tt.key)
			}
			if c := a.Coords(a.Linear(tt.want)); !slices.Equal(c, tt.want) {
				t.Errorf("Coords(Linear(%v)) = %v", tt.want, c)
			}
		}
	}
	a, _ := ParseV2([]byte(doc("")))
	if !a.Legacy() || a.Linear([]int{1, 2, 0}) != 1*3*1+2*1+0 || a.NumChunks() != 9 {
		t.Errorf("Legacy %v, Linear %d, NumChunks %d", a.Legacy(), a.Linear([]int{1, 2, 0}), a.NumChunks())
	}
	testResolveSeparator(t, a)
	zero, _ := ParseV2([]byte(`{"zarr_format": 2, "order": "C", "shape": [], "chunks": [], "dtype": "<i2", "compressor": null, "filters": null, "fill_value": 0}`))
	if c, ok := zero.ParseChunkKey("0"); !ok || len(c) != 0 || zero.ChunkKey(nil) != "0" {
		t.Errorf("0-d key: %v %v %q", c, ok, zero.ChunkKey(nil))
	}
}

// testResolveSeparator checks that a legacy array of grid 3×3×1 is
// decided nested by a directory named for a first-axis chunk index, and
// only by one, and that the array it gives has "/" keys only.
func testResolveSeparator(t *testing.T, a *Array) {
	t.Helper()
	for _, tt := range []struct {
		dirs   []string
		nested bool
	}{
		{nil, false},
		{[]string{"x", "3", "01", "-1"}, false}, // no chunk index along the first axis (of 3)
		{[]string{"x", "2"}, true},
	} {
		n, err := a.ResolveSeparator(func() ([]string, error) { return tt.dirs, nil })
		switch {
		case err != nil:
			t.Fatal(err)
		case !tt.nested && n != a:
			t.Errorf("dirs %q: resolved to separator %q, want the array as it is", tt.dirs, n.Separator)
		case tt.nested && (n.Separator != "/" || n.Legacy() || !a.Legacy()):
			t.Errorf("dirs %q: separator %q, legacy %v (was %v); want \"/\", not legacy", tt.dirs, n.Separator, n.Legacy(), a.Legacy())
		case tt.nested:
			if c, ok := n.ParseChunkKey("2/1/0"); !ok || !slices.Equal(c, []int{2, 1, 0}) || n.ChunkKey(c) != "2/1/0" {
				t.Errorf("nested: ParseChunkKey(2/1/0) = %v, %v", c, ok)
			}
			if k, _, _ := n.StoredKey([]int{2, 1, 0}); k != "2/1/0" {
				t.Errorf("nested: StoredKey = %q", k)
			}
			if _, ok := n.ParseChunkKey("2.1.0"); ok {
				t.Errorf("nested: ParseChunkKey(2.1.0) accepted")
			}
		}
	}
	errList := errors.New("no listing")
	if _, err := a.ResolveSeparator(func() ([]string, error) { return nil, errList }); !errors.Is(err, errList) {
		t.Errorf("a failed listing: %v", err)
	}
	named, _ := ParseV2([]byte(`{"zarr_format": 2, "order": "C", "shape": [4, 4], "chunks": [2, 2], "dtype": "<i8", "compressor": null, "filters": null, "fill_value": 0, "dimension_separator": "."}`))
	flat, _ := ParseV2([]byte(`{"zarr_format": 2, "order": "C", "shape": [4], "chunks": [2], "dtype": "<i8", "compressor": null, "filters": null, "fill_value": 0}`))
	for _, b := range []*Array{named, flat} { // keys decided by the metadata, or alike either way
		if n, err := b.ResolveSeparator(func() ([]string, error) { t.Error("listed"); return []string{"0"}, nil }); n != b || err != nil {
			t.Errorf("ResolveSeparator of %q keys, rank %d: %v", b.Separator, len(b.Shape), err)
		}
	}
}

func TestRewriteV2(t *testing.T) {
	in := `{"chunks": [2], "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
		"dtype": "<f8", "fill_value": "NaN", "filters": [{"id": "delta", "dtype": "<f8"}],
		"order": "F", "shape": [5], "zarr_format": 2, "dimension_separator": "/", "extra": {"k": [1, 2]}}`
	out, err := RewriteV2Array([]byte(in), mustParseV2(t, in))
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	json.Unmarshal(out, &got)
	json.Unmarshal([]byte(in), &want)
	want["compressor"], want["filters"] = nil, nil
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("rewrite = %s\nwant %s", g, w)
	}
	if !strings.HasPrefix(string(out), "{\n    \"chunks\"") {
		t.Errorf("not zarr-python style (sorted, indent 4):\n%s", out)
	}
	a, err := ParseV2(out)
	if err != nil || a.Codecs != "none" {
		t.Errorf("rewritten array: %v, codecs %q", err, a.Codecs)
	}
	legacy := `{"zarr_format": 2, "order": "C", "shape": [4, 4], "chunks": [2, 2], "dtype": "<i8", "compressor": null, "filters": null, "fill_value": 0}`
	nested, err := mustParseV2(t, legacy).ResolveSeparator(func() ([]string, error) { return []string{"1"}, nil })
	if err != nil {
		t.Fatal(err)
	}
	sep, _ := RewriteV2Array([]byte(legacy), nested)
	if a, _ := ParseV2(sep); a == nil || a.Separator != "/" || a.Legacy() {
		t.Errorf("RewriteV2Array of a nested legacy array: %s", sep)
	}
	flat, _ := RewriteV2Array([]byte(legacy), mustParseV2(t, legacy))
	if a, _ := ParseV2(flat); a == nil || !a.Legacy() {
		t.Errorf("RewriteV2Array of a legacy array named a separator: %s", flat)
	}
}

func mustParseV2(t *testing.T, zarray string) *Array {
	t.Helper()
	a, err := ParseV2([]byte(zarray))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestRewriteV2Consolidated(t *testing.T) {
	in := `{"zarr_consolidated_format": 1, "metadata": {
		".zgroup": {"zarr_format": 2}, ".zattrs": {"a": 1},
		"x/.zarray": {"chunks": [2], "compressor": {"id": "zstd", "level": 1}, "dtype": "<i4", "fill_value": 0, "filters": null, "order": "C", "shape": [4], "zarr_format": 2},
		"g/y/.zarray": {"chunks": [2], "compressor": {"id": "zlib", "level": 1}, "dtype": "<i4", "fill_value": 0, "filters": [{"id": "delta", "dtype": "<i4"}], "order": "C", "shape": [4], "zarr_format": 2},
		"s/.zarray": {"chunks": [2], "compressor": {"id": "zlib", "level": 1}, "dtype": "|O", "fill_value": "", "filters": [{"id": "vlen-utf8"}], "order": "C", "shape": [4], "zarr_format": 2}}}`
	out, err := RewriteV2Consolidated([]byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Format   int                        `json:"zarr_consolidated_format"`
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || doc.Format != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	for key, wantCodecs := range map[string]string{"x/.zarray": "none", "g/y/.zarray": "none", "s/.zarray": "zlib(level=1) | vlen-utf8()"} {
		a, err := ParseV2(doc.Metadata[key])
		if err != nil || a.Codecs != wantCodecs {
			t.Errorf("%s: %v, codecs %q, want %q", key, err, a.Codecs, wantCodecs)
		}
	}
	var attrs map[string]any
	if json.Unmarshal(doc.Metadata[".zattrs"], &attrs); mustJSON(t, attrs) != `{"a":1}` {
		t.Errorf(".zattrs changed: %s", doc.Metadata[".zattrs"])
	}
}

// TestConformanceV2Metadata parses every .zarray written by zarr-python
// 2.18.7 and zarrita.js's generator: each parses, and exactly the object
// arrays pass through.
func TestConformanceV2Metadata(t *testing.T) {
	root := testutil.Shared(t)
	var n int
	for _, dir := range []string{"conformance/zarr-python-2.18.7/fixture", "conformance/zarrita.js/fixtures/v2/data.zarr"} {
		filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != ArrayFile {
				return err
			}
			n++
			b, _ := os.ReadFile(path)
			a, err := ParseV2(b)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				return nil
			}
			object := strings.Contains(a.DType, "O")
			if object != (a.PassThrough != nil) && !errors.Is(a.PassThrough, codec.ErrUnknownCodec) {
				t.Errorf("%s: dtype %s, PassThrough %v", path, a.DType, a.PassThrough)
			}
			if _, err := RewriteV2Array(b, a); err != nil {
				t.Errorf("%s: rewrite: %v", path, err)
			}
			return nil
		})
	}
	if n < 150 {
		t.Errorf("parsed %d .zarray files, want the whole fixture set", n)
	}
	b, err := os.ReadFile(filepath.Join(root, "conformance/zarrita.js/fixtures/v2/data.zarr/.zmetadata"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RewriteV2Consolidated(b, nil); err != nil {
		t.Error(err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRewriteKeepsAngleBrackets(t *testing.T) {
	in := `{"zarr_format": 2, "order": "C", "shape": [4], "chunks": [2], "dtype": "<f4", "compressor": {"id": "zlib"}, "filters": null, "fill_value": 0}`
	out, err := RewriteV2Array([]byte(in), mustParseV2(t, in))
	if err != nil || !strings.Contains(string(out), `"dtype": "<f4"`) {
		t.Errorf("rewrite = %s, %v; want a plain \"<f4\"", out, err)
	}
}
