package tree

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/zarr"
)

// mixedStore is newTestStore plus directories holding both .zarray and
// zarr.json, as arrays converted in place are: the documents agree
// (same, with C and F order), disagree (fill), or the array is passed
// through (odd). It returns each directory's zarr.json as stored.
func mixedStore(t *testing.T) (*testutil.V2Store, map[string][]byte) {
	s := testutil.NewV2Store(t)
	docs := map[string][]byte{
		"temp": []byte(`{"zarr_format": 3, "node_type": "array", "shape": [5, 7], "data_type": "int32",
			"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
			"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}}, "fill_value": 0,
			"codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "numcodecs.zlib", "configuration": {"level": 1}}],
			"dimension_names": ["y", "x"], "attributes": {"units": "K"}}`),
		"group/nested": []byte(`{"zarr_format": 3, "node_type": "array", "shape": [4, 4], "data_type": "float64",
			"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
			"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}}, "fill_value": 0,
			"codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "little"}},
				{"name": "numcodecs.zlib", "configuration": {"level": 1}}]}`),
		"corrupt": []byte(`{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
			"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
			"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}}, "fill_value": 7,
			"codecs": [{"name": "bytes"}, {"name": "numcodecs.zlib", "configuration": {"level": 1}}]}`),
		"odd": []byte(`{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "int32",
			"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
			"chunk_key_encoding": {"name": "v2"}, "fill_value": 0, "codecs": ["bytes", "nosuch"]}`),
	}
	for dir, b := range docs {
		s.Write(t, dir+"/"+zarr.MetadataFile, b)
	}
	return s, docs
}

// TestBesideDirs: a directory holding both .zarray and zarr.json presents
// its v2 view and serves zarr.json rewritten to describe the same decoded
// chunks when the two agree (C and F order), hides it with one Warn line
// naming the directory when they do not, serves it as stored when the
// array is passed through, and hides it under AsV2. zfuse info's
// ArrayInfo says which.
func TestBesideDirs(t *testing.T) {
	ctx := context.Background()
	s, docs := mixedStore(t)
	for _, asV2 := range []bool{false, true} {
		tr, logs := newTestTree(t, s, func(c *Config) { c.AsV2 = asV2 })
		for _, r := range []struct {
			dir      string
			served   string // "rewritten", "stored" or "hidden"
			zarrJSON string // ArrayInfo.ZarrJSON, a prefix
		}{
			{"temp", "rewritten", "rewritten too"},
			{"group/nested", "rewritten", "rewritten too"},
			{"corrupt", "hidden", "hidden: zarr: zarr.json does not describe the chunks .zarray does: fill_value 7, .zarray 0"},
			{"odd", "stored", "as stored"},
		} {
			if asV2 {
				r.served, r.zarrJSON = "hidden", "hidden (--as-v2)"
			}
			key := r.dir + "/" + zarr.MetadataFile
			got, err := tr.ReadFile(ctx, key)
			names := childNames(t, tr, r.dir)
			switch r.served {
			case "rewritten":
				v2 := testutil.Must(zarr.ParseV2(s.Stored[r.dir+"/"+zarr.ArrayFile]))
				want := testutil.Must(zarr.PresentBeside(docs[r.dir], v2))
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("AsV2 %v: %s: %v\n%s\nwant\n%s", asV2, key, err, got, want)
				}
			case "stored":
				if err != nil || !bytes.Equal(got, docs[r.dir]) {
					t.Errorf("AsV2 %v: %s: %v %s, want it as stored", asV2, key, err, got)
				}
			case "hidden":
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("AsV2 %v: %s: %v %s, want it hidden", asV2, key, err, got)
				}
			}
			if listed := slices.Contains(names, zarr.MetadataFile); listed != (r.served != "hidden") {
				t.Errorf("AsV2 %v: %s lists %v", asV2, r.dir, names)
			}
			// The v2 view is what the directory presents, either way.
			if v2, err := tr.ReadFile(ctx, r.dir+"/"+zarr.ArrayFile); err != nil || !slices.Contains(names, zarr.ArrayFile) {
				t.Errorf("AsV2 %v: %s/.zarray: %v %s; listed %v", asV2, r.dir, err, v2, names)
			}
		}
		for p, raw := range s.Raw {
			if got, err := tr.ReadFile(ctx, p); err != nil || !bytes.Equal(got, raw) {
				t.Errorf("AsV2 %v: chunk %s: %v %x, want %x", asV2, p, err, got, raw)
			}
		}
		infos := testutil.Must(tr.Arrays(ctx))
		for _, in := range infos {
			var want string
			switch in.Path {
			case "temp", "group/nested":
				want = "rewritten too"
			case "corrupt":
				want = "hidden: "
			case "odd":
				want = "as stored"
			}
			if asV2 && want != "" {
				want = "hidden (--as-v2)"
			}
			if !strings.HasPrefix(in.ZarrJSON, want) || (want == "") != (in.ZarrJSON == "") || in.Format != 2 {
				t.Errorf("AsV2 %v: ArrayInfo %s: format %d, ZarrJSON %q, want %q", asV2, in.Path, in.Format, in.ZarrJSON, want)
			}
		}
		warn := `msg="zarr.json hidden: it does not describe the chunks .zarray does" key=corrupt `
		if n := strings.Count(logs.String(), warn); n != 1 && !asV2 || n != 0 && asV2 {
			t.Errorf("AsV2 %v: %d Warn lines naming corrupt:\n%s", asV2, n, logs)
		}
	}
}

// childNames lists the directory p of tr.
func childNames(t *testing.T, tr *Tree, p string) []string {
	t.Helper()
	dir, err := tr.Lookup(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := tr.Children(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range ns {
		names = append(names, n.Name())
	}
	return names
}
