package testutil

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The Zarr v2 test store: arrays written at test time, zlib-compressed,
// with what every path of a presented tree must serve of them. The tests
// of the tree and of the mount read the same stores.

// A V2Array describes one array of a V2Store: its metadata and the value
// of every element, from which its chunks are built.
type V2Array struct {
	Path      string
	Shape     []int
	Chunks    []int
	DType     string // "<i4", "<f8", "<i2", "|u1", "<i8"
	Order     string
	Sep       string // "" leaves dimension_separator out (legacy)
	Missing   []string
	Value     func(idx []int) float64
	LayoutSep string // how chunk keys are stored; defaults to Sep or "."
}

// A V2Store is a store written at test time, with what each path must
// serve.
type V2Store struct {
	Root   string
	Stored map[string][]byte   // every file as written
	Raw    map[string][]byte   // chunk key -> decoded chunk bytes (raw arrays)
	Arrays map[string]*V2Array // the arrays Add wrote, by path
}

// EmptyV2Store returns a store with nothing in it yet, in a directory
// removed when the test ends.
func EmptyV2Store(t testing.TB) *V2Store {
	return &V2Store{Root: t.TempDir(), Stored: map[string][]byte{}, Raw: map[string][]byte{}}
}

// Write writes b at key, and records it as stored.
func (s *V2Store) Write(t testing.TB, key string, b []byte) {
	t.Helper()
	WriteFile(t, s.Root, key, b)
	s.Stored[key] = b
}

// ZlibBytes is b compressed with zlib at level 1, as the test stores'
// chunks are.
func ZlibBytes(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w, _ := zlib.NewWriterLevel(&buf, 1)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return buf.Bytes()
}

func itemSize(dtype string) int {
	switch dtype[1:] {
	case "u1":
		return 1
	case "i2":
		return 2
	case "i4":
		return 4
	}
	return 8
}

// encode writes v as one element of dtype, little-endian.
func encode(dst []byte, dtype string, v float64) {
	switch dtype[1:] {
	case "u1":
		dst[0] = uint8(v)
	case "i2":
		binary.LittleEndian.PutUint16(dst, uint16(int16(v)))
	case "i4":
		binary.LittleEndian.PutUint32(dst, uint32(int32(v)))
	case "i8":
		binary.LittleEndian.PutUint64(dst, uint64(int64(v)))
	case "f8":
		binary.LittleEndian.PutUint64(dst, math.Float64bits(v))
	}
}

// Chunk returns the decoded bytes of the chunk at coords: the full chunk
// shape in the array's order, edge padding filled with 0 (the fill value).
func (a *V2Array) Chunk(coords []int) []byte {
	n, is := 1, itemSize(a.DType)
	for _, c := range a.Chunks {
		n *= c
	}
	out := make([]byte, n*is)
	local := make([]int, len(a.Chunks))
	idx := make([]int, len(a.Chunks))
	for lin := range n {
		// local index of element lin in the chunk's memory order
		r := lin
		if a.Order == "F" {
			for d := range a.Chunks {
				local[d] = r % a.Chunks[d]
				r /= a.Chunks[d]
			}
		} else {
			for d := len(a.Chunks) - 1; d >= 0; d-- {
				local[d] = r % a.Chunks[d]
				r /= a.Chunks[d]
			}
		}
		inside := true
		for d := range local {
			idx[d] = coords[d]*a.Chunks[d] + local[d]
			inside = inside && idx[d] < a.Shape[d]
		}
		if inside {
			encode(out[lin*is:], a.DType, a.Value(idx))
		}
	}
	return out
}

// Zarray is the array's .zarray with the compressor given (JSON).
func (a *V2Array) Zarray(compressor string) []byte {
	m := map[string]any{
		"zarr_format": 2, "shape": a.Shape, "chunks": a.Chunks, "dtype": a.DType,
		"compressor": json.RawMessage(compressor), "fill_value": 0, "order": a.Order, "filters": nil,
	}
	if a.Sep != "" {
		m["dimension_separator"] = a.Sep
	}
	b, _ := json.MarshalIndent(m, "", "    ")
	return b
}

// Flat returns a's elements in one buffer in its order, as its .npy file
// holds them: the values, and 0 (the fill value) in missing chunks.
func (a *V2Array) Flat() []byte {
	is, n := itemSize(a.DType), prod(a.Shape)
	out := make([]byte, n*is)
	idx := make([]int, len(a.Shape))
	for lin := range n {
		r := lin
		for k := range a.Shape {
			d := len(a.Shape) - 1 - k
			if a.Order == "F" {
				d = k
			}
			idx[d] = r % a.Shape[d]
			r /= a.Shape[d]
		}
		parts := make([]string, len(idx))
		for d, i := range idx {
			parts[d] = strconv.Itoa(i / a.Chunks[d])
		}
		if slices.Contains(a.Missing, strings.Join(parts, ".")) || slices.Contains(a.Missing, strings.Join(parts, "/")) {
			continue
		}
		encode(out[lin*is:], a.DType, a.Value(idx))
	}
	return out
}

// CheckNpy checks that b is the .npy file of a: a header numpy can read
// saying a's dtype, order and shape, the data 64-byte aligned, then a's
// elements.
func (a *V2Array) CheckNpy(t *testing.T, name string, b []byte) {
	t.Helper()
	f, err := ParseNPY(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	fortran := a.Order == "F" && len(a.Shape) > 1 && a.Shape[0] > 1 && a.Shape[1] > 1
	if f.Descr != a.DType || f.Fortran != fortran || !slices.Equal(f.Shape, a.Shape) {
		t.Errorf("%s: descr %q, fortran %v, shape %v; want %q, %v, %v", name, f.Descr, f.Fortran, f.Shape, a.DType, fortran, a.Shape)
	}
	if h := len(b) - len(f.Data); h%64 != 0 {
		t.Errorf("%s: data at %d, not 64-byte aligned", name, h)
	}
	if want := a.Flat(); !bytes.Equal(f.Data, want) {
		i := 0
		for i < min(len(f.Data), len(want)) && f.Data[i] == want[i] {
			i++
		}
		t.Errorf("%s: %d bytes of data, want %d; they differ from byte %d on", name, len(f.Data), len(want), i)
	}
}

// Add writes a zlib-compressed array with all its chunks but the missing
// (at the store root for path "").
func (s *V2Store) Add(t testing.TB, a V2Array) {
	if s.Arrays == nil {
		s.Arrays = map[string]*V2Array{}
	}
	s.Arrays[a.Path] = &a
	s.Write(t, join(a.Path, ".zarray"), a.Zarray(`{"id": "zlib", "level": 1}`))
	grid := make([]int, len(a.Shape))
	total := 1
	for d := range grid {
		grid[d] = (a.Shape[d] + a.Chunks[d] - 1) / a.Chunks[d]
		total *= grid[d]
	}
	sep := a.LayoutSep
	if sep == "" {
		sep = a.Sep
	}
	if sep == "" {
		sep = "."
	}
	coords := make([]int, len(grid))
	for lin := range total {
		r := lin
		parts := make([]string, len(grid))
		for d := len(grid) - 1; d >= 0; d-- {
			coords[d] = r % grid[d]
			r /= grid[d]
			parts[d] = strconv.Itoa(coords[d])
		}
		key := strings.Join(parts, sep)
		if len(grid) == 0 {
			key = "0"
		}
		if slices.Contains(a.Missing, key) {
			continue
		}
		raw := a.Chunk(coords)
		s.Write(t, join(a.Path, key), ZlibBytes(t, raw))
		s.Raw[join(a.Path, key)] = raw
	}
}

// join joins a directory key and a name; the root is "" (or ".").
func join(dir, name string) string {
	if dir == "" || dir == "." {
		return name
	}
	return dir + "/" + name
}

// NewV2Store writes the store most tests of the tree and the mount use:
//
//	.zgroup .zattrs .zmetadata README.txt
//	temp/       5×7 <i4 C, chunks 2×3, "." keys, chunk 1.1 missing
//	group/nested/ 4×4 <f8 F, chunks 2×2, "/" keys
//	legacy/     4×4 <i2, chunks 2×2, "0/0" keys and no dimension_separator
//	scalar/     0-d <i8
//	corrupt/    4 |u1, chunks 2: chunk 1 is garbage
//	odd/        unknown codec: passed through
//	bad/        negative shape: passed through
func NewV2Store(t testing.TB) *V2Store {
	s := EmptyV2Store(t)
	s.Write(t, ".zgroup", []byte(`{"zarr_format": 2}`))
	s.Write(t, ".zattrs", []byte(`{"answer": 42}`))
	s.Write(t, "README.txt", []byte("not zarr\n"))
	s.Write(t, "group/.zgroup", []byte(`{"zarr_format": 2}`))
	s.Add(t, V2Array{Path: "temp", Shape: []int{5, 7}, Chunks: []int{2, 3}, DType: "<i4", Order: "C", Sep: ".",
		Missing: []string{"1.1"}, Value: func(i []int) float64 { return float64(i[0]*100 + i[1] + 1) }})
	s.Write(t, "temp/.zattrs", []byte(`{"units": "K"}`))
	s.Add(t, V2Array{Path: "group/nested", Shape: []int{4, 4}, Chunks: []int{2, 2}, DType: "<f8", Order: "F", Sep: "/",
		Value: func(i []int) float64 { return float64(i[0]*4+i[1]) + 0.5 }})
	s.Add(t, V2Array{Path: "legacy", Shape: []int{4, 4}, Chunks: []int{2, 2}, DType: "<i2", Order: "C", LayoutSep: "/",
		Value: func(i []int) float64 { return float64(-i[0]*10 - i[1]) }})
	s.Add(t, V2Array{Path: "scalar", Shape: []int{}, Chunks: []int{}, DType: "<i8", Order: "C", Sep: ".",
		Value: func([]int) float64 { return 1 << 40 }})
	s.Add(t, V2Array{Path: "corrupt", Shape: []int{4}, Chunks: []int{2}, DType: "|u1", Order: "C", Sep: ".",
		Value: func(i []int) float64 { return float64(i[0] + 7) }})
	s.Write(t, "corrupt/1", []byte("this is not zlib"))
	delete(s.Raw, "corrupt/1")
	s.Write(t, "odd/.zarray", []byte(`{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<i4",
		"compressor": {"id": "nosuch"}, "fill_value": 0, "order": "C", "filters": null}`))
	s.Write(t, "odd/0", []byte("opaque bytes"))
	s.Write(t, "bad/.zarray", []byte(`{"zarr_format": 2, "shape": [-1], "chunks": [4], "dtype": "<i4",
		"compressor": null, "fill_value": 0, "order": "C", "filters": null}`))
	s.Write(t, "bad/0", []byte("more opaque bytes"))
	// Consolidated metadata, as zarr.consolidate_metadata writes it.
	meta := map[string]json.RawMessage{}
	for k, v := range s.Stored {
		if b := filepath.Base(k); b == ".zarray" || b == ".zgroup" || b == ".zattrs" {
			meta[k] = v
		}
	}
	zm, _ := json.MarshalIndent(map[string]any{"zarr_consolidated_format": 1, "metadata": meta}, "", "    ")
	s.Write(t, ".zmetadata", zm)
	return s
}

// NpyFiles are the arrays of NewV2Store that the .npy view shows, by the
// path of their file.
var NpyFiles = map[string]string{"temp.npy": "temp", "group/nested.npy": "group/nested", "legacy.npy": "legacy", "scalar.npy": "scalar"}

// checkZarray checks that got is want rewritten: compressor and filters
// null, every other key kept, plus any extra keys given.
func checkZarray(t *testing.T, name string, got, want []byte, extra map[string]string) {
	t.Helper()
	var g, w map[string]json.RawMessage
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: presented metadata is not JSON: %v\n%s", name, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	w["compressor"], w["filters"] = json.RawMessage("null"), json.RawMessage("null")
	for k, v := range extra {
		w[k] = json.RawMessage(v)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(g)), slices.Sorted(maps.Keys(w))) {
		t.Fatalf("%s: keys %v, want %v", name, slices.Sorted(maps.Keys(g)), slices.Sorted(maps.Keys(w)))
	}
	for k := range w {
		var gv, wv any
		json.Unmarshal(g[k], &gv)
		json.Unmarshal(w[k], &wv)
		if gb, _ := json.Marshal(gv); !bytes.Equal(gb, Must(json.Marshal(wv))) {
			t.Errorf("%s: %q = %s, want %s", name, k, g[k], w[k])
		}
	}
}

// CheckServed checks what path p of NewV2Store serves (got) against the
// presented-tree rules.
func (s *V2Store) CheckServed(t *testing.T, p string, got []byte) {
	t.Helper()
	raw, isChunk := s.Raw[p]
	switch {
	case isChunk:
		if !bytes.Equal(got, raw) {
			t.Errorf("%s: served %d bytes %x, want the decoded chunk %x", p, len(got), got, raw)
		}
	case p == "legacy/.zarray":
		checkZarray(t, p, got, s.Stored[p], map[string]string{"dimension_separator": `"/"`})
	case strings.HasSuffix(p, "/.zarray") && !strings.HasPrefix(p, "odd/") && !strings.HasPrefix(p, "bad/"):
		checkZarray(t, p, got, s.Stored[p], nil)
	case p == ".zmetadata":
		var doc struct {
			Metadata map[string]json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal(got, &doc); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(doc.Metadata) != 11 { // every .zarray, .zgroup and .zattrs
			t.Errorf(".zmetadata has %d entries, want 11", len(doc.Metadata))
		}
		for k, v := range doc.Metadata {
			switch {
			case k == "odd/.zarray" || k == "bad/.zarray":
				var a, b any
				json.Unmarshal(v, &a)
				json.Unmarshal(s.Stored[k], &b)
				if !bytes.Equal(Must(json.Marshal(a)), Must(json.Marshal(b))) {
					t.Errorf(".zmetadata[%s] = %s, want it as stored", k, v)
				}
			case k == "legacy/.zarray": // as the array's own .zarray says, with the separator found
				checkZarray(t, ".zmetadata["+k+"]", v, s.Stored[k], map[string]string{"dimension_separator": `"/"`})
			case strings.HasSuffix(k, ".zarray"):
				checkZarray(t, ".zmetadata["+k+"]", v, s.Stored[k], nil)
			default:
				var a, b any
				json.Unmarshal(v, &a)
				json.Unmarshal(s.Stored[k], &b)
				if !bytes.Equal(Must(json.Marshal(a)), Must(json.Marshal(b))) {
					t.Errorf(".zmetadata[%s] = %s, want %s", k, v, s.Stored[k])
				}
			}
		}
	default:
		if !bytes.Equal(got, s.Stored[p]) {
			t.Errorf("%s: served %q, want it as stored %q", p, got, s.Stored[p])
		}
	}
}
