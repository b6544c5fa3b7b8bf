package zarr

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/internal/testutil"
)

func TestV2Files(t *testing.T) {
	type set = map[string]string
	tests := []struct {
		name  string
		set   set
		want  string // fields the .zarray must hold
		attrs string // the .zattrs
		err   error
	}{
		{"int16", set{}, `{"dtype":"<i2","fill_value":0,"chunks":[4],"shape":[10],"dimension_separator":"/","order":"C","compressor":null,"filters":null,"zarr_format":2}`, `{}`, nil},
		{"big float", set{"data_type": `"float32"`, "fill_value": `"0x7fc00001"`, "codecs": `[{"name":"bytes","configuration":{"endian":"big"}}]`}, `{"dtype":">f4","fill_value":"NaN"}`, `{}`, nil},
		{"bool", set{"data_type": `"bool"`, "fill_value": `true`, "codecs": `["bytes"]`}, `{"dtype":"|b1","fill_value":true}`, `{}`, nil},
		{"complex", set{"data_type": `"complex64"`, "fill_value": `[1, "Infinity"]`}, `{"dtype":"<c8","fill_value":[1,"Infinity"]}`, `{}`, nil},
		{"raw bits", set{"data_type": `"r16"`, "fill_value": `[0, 1]`}, `{"dtype":"|V2","fill_value":"AAE="}`, `{}`, nil},
		{"datetime", set{"data_type": `{"name":"numpy.datetime64","configuration":{"unit":"ms","scale_factor":1}}`, "fill_value": `-9223372036854775808`}, `{"dtype":"<M8[ms]","fill_value":-9223372036854775808}`, `{}`, nil},
		{"v2 keys", set{"chunk_key_encoding": `{"name":"v2","configuration":{"separator":"."}}`}, `{"dimension_separator":"."}`, `{}`, nil},
		{"dimension names", set{"dimension_names": `["time"]`, "attributes": `{"units":"m"}`}, `{}`, `{"units":"m","_ARRAY_DIMENSIONS":["time"]}`, nil},
		{"partial dimension names", set{"dimension_names": `[null]`}, `{}`, `{}`, nil},
		{"sharded", set{"codecs": `[{"name":"sharding_indexed","configuration":{"chunk_shape":[2],"codecs":["bytes","gzip"],"index_codecs":["bytes","crc32c"]}}]`}, `{"chunks":[2],"shape":[10]}`, `{}`, nil},
		{"string", set{"data_type": `"string"`, "fill_value": `""`, "codecs": `["vlen-utf8"]`}, ``, ``, codec.ErrNotRaw},
		{"unknown codec", set{"codecs": `["bytes","nonesuch"]`}, ``, ``, codec.ErrUnknownCodec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := V2Files(v3Doc(tt.set), nil)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("V2Files = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 2 {
				t.Errorf("files %v", slices.Collect(func(yield func(string) bool) {
					for k := range files {
						yield(k)
					}
				}))
			}
			var got, want map[string]json.RawMessage
			if err := json.Unmarshal(files[ArrayFile], &got); err != nil {
				t.Fatal(err)
			}
			json.Unmarshal([]byte(tt.want), &want)
			for k, v := range want {
				if !jsonEqual(got[k], v) {
					t.Errorf(".zarray %s = %s, want %s", k, got[k], v)
				}
			}
			if !jsonEqual(files[AttrsFile], json.RawMessage(tt.attrs)) {
				t.Errorf(".zattrs = %s, want %s", files[AttrsFile], tt.attrs)
			}
			// The presented .zarray is one the v2 parser accepts as raw.
			a, err := ParseV2(files[ArrayFile])
			if err != nil || a.PassThrough != nil {
				t.Errorf("ParseV2(.zarray) = %v, %v", err, a.PassThrough)
			}
		})
	}
}

func TestV2FilesGroup(t *testing.T) {
	doc := `{"zarr_format":3,"node_type":"group","attributes":{"answer":42},"consolidated_metadata":{"kind":"inline","must_understand":false,"metadata":{
		"a": ` + string(v3Doc(nil)) + `,
		"s": ` + string(v3Doc(map[string]string{"data_type": `"string"`, "fill_value": `""`, "codecs": `["vlen-utf8"]`})) + `,
		"sub": {"zarr_format":3,"node_type":"group","attributes":{"x":1},"consolidated_metadata":{"kind":"inline","metadata":{}}},
		"sub/b": ` + string(v3Doc(map[string]string{"attributes": `{"y":2}`})) + `}}}`
	files, err := V2Files([]byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(files[GroupFile], json.RawMessage(`{"zarr_format":2}`)) || !jsonEqual(files[AttrsFile], json.RawMessage(`{"answer":42}`)) {
		t.Errorf(".zgroup %s .zattrs %s", files[GroupFile], files[AttrsFile])
	}
	var zm struct {
		Format   int                        `json:"zarr_consolidated_format"`
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(files[ConsolidatedFile], &zm); err != nil || zm.Format != 1 {
		t.Fatalf(".zmetadata: %v %s", err, files[ConsolidatedFile])
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range zm.Metadata {
			yield(k)
		}
	})
	want := []string{".zattrs", ".zgroup", "a/.zarray", "a/.zattrs", "sub/.zattrs", "sub/.zgroup", "sub/b/.zarray", "sub/b/.zattrs"}
	if !slices.Equal(keys, want) {
		t.Errorf(".zmetadata keys %v, want %v (the string array left out)", keys, want)
	}
	if !jsonEqual(zm.Metadata["sub/b/.zattrs"], json.RawMessage(`{"y":2}`)) {
		t.Errorf("sub/b/.zattrs = %s", zm.Metadata["sub/b/.zattrs"])
	}
	if a, err := ParseV2(zm.Metadata["a/.zarray"]); err != nil || a.DType != "<i2" {
		t.Errorf("a/.zarray: %v", err)
	}
	plain, err := V2Files([]byte(`{"zarr_format":3,"node_type":"group"}`), nil)
	if err != nil || len(plain) != 2 || plain[ConsolidatedFile] != nil {
		t.Errorf("plain group: %v %v", plain, err)
	}
}

// writeV2View writes the --as-v2 view of the v3 store at root into dir, as
// the mount would present it: metadata from V2Files, chunks decoded under
// v2 keys, absent chunks absent, arrays with no v2 view skipped.
func writeV2View(t *testing.T, root, dir string) int {
	arrays := 0
	for rel, doc := range zarritaV3Nodes(t, root) {
		files, err := V2Files(doc, nil)
		if errors.Is(err, codec.ErrNotRaw) {
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		out := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(out, 0o755)
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		a, _, _ := ParseV3(doc)
		if a == nil {
			continue
		}
		v, err := a.AsV2()
		if err != nil {
			t.Fatal(err)
		}
		arrays++
		for lin := range v.NumChunks() {
			coords := v.Coords(lin)
			chunk, err := readChunkV3(filepath.Join(root, filepath.FromSlash(rel)), v, coords)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				t.Fatalf("%s %v: %v", rel, coords, err)
			}
			p := filepath.Join(out, filepath.FromSlash(v.ChunkKey(coords)))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, chunk, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return arrays
}

// TestAsV2ZarrPython2 reads the --as-v2 view of the zarrita.js v3 fixtures
// with zarr-python 2.13, an independent v2-only reader, and compares every
// array with its known values; the consolidated group is opened through its
// .zmetadata.
func TestAsV2ZarrPython2(t *testing.T) {
	root := zarritaV3(t)
	testutil.NeedPython(t, "zarr", "numpy")
	dir := t.TempDir()
	if n := writeV2View(t, root, dir); n != len(testutil.ZarritaV3) {
		t.Errorf("%d arrays in the v2 view, want %d", n, len(testutil.ZarritaV3))
	}
	want := map[string][]float64{}
	for k, v := range testutil.ZarritaV3 {
		want[k] = v.Data
	}
	wj, _ := json.Marshal(want)
	script := `
import json, sys, numpy as np, zarr
root, want = sys.argv[1], json.loads(sys.argv[2])
bad = []
for path, values in sorted(want.items()):
    z = zarr.open_array(root + "/" + path, mode="r")
    got = z[...]
    exp = np.array(values).astype(z.dtype).reshape(z.shape)
    if got.dtype != z.dtype or not np.array_equal(got, exp):
        bad.append("%s: %r != %r" % (path, got.tolist(), exp.tolist()))
g = zarr.open_consolidated(root + "/consolidated", mode="r")
for path in ["1d.chunked.i2", "2d.contiguous.i2", "nested/1d.i2"]:
    exp = np.array(want["consolidated/" + path]).reshape(g[path].shape)
    if not np.array_equal(g[path][...], exp):
        bad.append("consolidated " + path)
if dict(g.attrs) != {"answer": 42}:
    bad.append("consolidated attrs %r" % dict(g.attrs))
print("\n".join(bad) if bad else "ok %d" % len(want))
`
	out, err := exec.Command(testutil.Python, "-c", script, dir, string(wj)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok "+itoa(len(want)) {
		t.Errorf("zarr-python 2 on the v2 view: %v\n%s", err, out)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
