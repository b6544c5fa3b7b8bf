package zarr

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
)

// TestRelayout: an order F, big-endian chunk decodes through the relaid
// array as the same elements in C order and either byte order; its fill
// value is swapped; the rewritten .zarray says so; an array already so
// laid out comes back as it is.
func TestRelayout(t *testing.T) {
	shape := []int{2, 3, 4}
	a := flatArray(t, shape, shape, ">i2", "F", 7)
	// Element (i, j, k) holds 100i + 10j + k; in order F, i varies fastest.
	stored := make([]byte, 2*24)
	want := map[bool][]byte{true: make([]byte, 2*24), false: make([]byte, 2*24)}
	for i := range 2 {
		for j := range 3 {
			for k := range 4 {
				v := uint16(100*i + 10*j + k)
				binary.BigEndian.PutUint16(stored[2*(i+2*(j+3*k)):], v)
				c := 2 * (k + 4*(j+3*i))
				binary.BigEndian.PutUint16(want[true][c:], v)
				binary.LittleEndian.PutUint16(want[false][c:], v)
			}
		}
	}
	for _, big := range []bool{true, false} {
		r, err := a.Relayout(big)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.DecodeChunk(make([]byte, 0, r.ChunkLen()), stored)
		if err != nil || !bytes.Equal(got, want[big]) {
			t.Errorf("Relayout(%v): decoded %x, %v; want %x", big, got, err, want[big])
		}
		wantType, wantFill := "<i2", []byte{7, 0}
		if big {
			wantType, wantFill = ">i2", []byte{0, 7}
		}
		if r.Order != "C" || r.DType != wantType || !bytes.Equal(r.Fill, wantFill) || !r.Relaid() {
			t.Errorf("Relayout(%v): order %s, dtype %s, fill %x, relaid %v", big, r.Order, r.DType, r.Fill, r.Relaid())
		}
		doc, _ := json.Marshal(map[string]any{"zarr_format": 2, "shape": shape, "chunks": shape, "dtype": ">i2",
			"compressor": map[string]any{"id": "zlib", "level": 1}, "filters": nil, "fill_value": 7, "order": "F"})
		m, err := RewriteV2Array(doc, r)
		var z map[string]any
		json.Unmarshal(m, &z)
		if err != nil || z["order"] != "C" || z["dtype"] != wantType || z["fill_value"] != 7.0 || z["compressor"] != nil {
			t.Errorf("Relayout(%v): .zarray rewritten as %s, %v", big, m, err)
		}
	}
	if r, err := flatArray(t, shape, shape, "<f4", "C", 0).Relayout(false); err != nil || r.Relaid() {
		t.Errorf("Relayout of a little-endian C array: relaid %v, %v", r.Relaid(), err)
	}
	// A 1-D order F array is laid out as in C: only its Order changes.
	if r, err := flatArray(t, []int{5}, []int{5}, "<f4", "F", 0).Relayout(false); err != nil || r.Order != "C" || !r.Relaid() {
		t.Errorf("Relayout of a 1-D order F array: %v, %v", r, err)
	}
}

// TestRelayoutUnits: complex numbers swap each half, UTF-32 text each
// character; bytes, bools and structured records are not swapped.
func TestRelayoutUnits(t *testing.T) {
	for _, tc := range []struct {
		dtype       string
		stored, out []byte
		relaid      bool
	}{
		{">c8", []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{4, 3, 2, 1, 8, 7, 6, 5}, true},
		{">U2", []byte{0, 0, 0, 'a', 0, 0, 0, 'b'}, []byte{'a', 0, 0, 0, 'b', 0, 0, 0}, true},
		{">M8[s]", []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{8, 7, 6, 5, 4, 3, 2, 1}, true},
		{"|S8", []byte("abcdefgh"), []byte("abcdefgh"), false},
		{"|b1", []byte{1}, []byte{1}, false},
	} {
		a := flatArray(t, []int{1}, []int{1}, tc.dtype, "C", nil)
		r, err := a.Relayout(false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.DecodeChunk(make([]byte, 0, r.ChunkLen()), tc.stored)
		if err != nil || !bytes.Equal(got, tc.out) || r.Relaid() != tc.relaid {
			t.Errorf("%s: %x (relaid %v), %v; want %x (%v)", tc.dtype, got, r.Relaid(), err, tc.out, tc.relaid)
		}
	}
	doc := `{"zarr_format": 2, "shape": [2, 2], "chunks": [2, 2], "dtype": [["x", ">i2"], ["y", "<f4"]], "compressor": null,
		"filters": null, "fill_value": null, "order": "F"}`
	a, err := ParseV2([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Relayout(false)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := RewriteV2Array([]byte(doc), r)
	if !strings.Contains(string(m), `">i2"`) || !strings.Contains(string(m), `"order": "C"`) {
		t.Errorf("a structured dtype keeps its fields' byte orders, and changes order: %s", m)
	}
}

// TestRelayoutV3: a big-endian v3 array's zarr.json, rewritten with the
// relaid array as its presenter, says little-endian, and so does its
// --as-v2 .zarray.
func TestRelayoutV3(t *testing.T) {
	doc := []byte(`{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "int32",
		"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
		"chunk_key_encoding": {"name": "default"}, "fill_value": 0,
		"codecs": [{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "gzip", "configuration": {"level": 1}}],
		"attributes": {"units": "m"}, "dimension_names": ["x"]}`)
	a, _, err := ParseV3(doc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Relayout(false)
	if err != nil {
		t.Fatal(err)
	}
	self := func(dir string) *Array {
		if dir == "." {
			return r
		}
		return nil
	}
	m, err := RewriteV3(doc, self)
	if err != nil || !strings.Contains(string(m), `"endian": "little"`) {
		t.Errorf("zarr.json of the relaid array: %s, %v", m, err)
	}
	v2, err := a.AsV2()
	if err != nil {
		t.Fatal(err)
	}
	rv2, err := v2.Relayout(false)
	if err != nil {
		t.Fatal(err)
	}
	files, err := V2Files(doc, func(string) *Array { return rv2 })
	if err != nil || !strings.Contains(string(files[ArrayFile]), `"<i4"`) {
		t.Errorf(".zarray of the relaid --as-v2 view: %s, %v", files[ArrayFile], err)
	}
	if got := r.DimensionNames(); len(got) != 1 || got[0] != "x" {
		t.Errorf("DimensionNames = %q", got)
	}
	if got := string(r.Attributes()); got != `{"units": "m"}` {
		t.Errorf("Attributes = %s", got)
	}
}
