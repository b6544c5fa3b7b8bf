package zarr

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/internal/testutil"
)

// This file holds a small Zarr v3 sharding encoder, written from the
// specification (zarr-formats.md §4.4) independently of the decoder, and
// the tests that decode its stores. Its stores are also read by zarrita
// (zarrita_test.go) before they are trusted.

// A shardLevel is one sharding_indexed codec of a test store.
type shardLevel struct {
	inner    []int       // inner chunk shape, in the codec's axes
	start    bool        // index_location "start"
	indexCRC bool        // index_codecs end with crc32c
	indexBig bool        // the index's bytes codec is big-endian
	gzip     bool        // inner codecs: gzip after bytes (or after the nested shard)
	crc      bool        // inner codecs: crc32c last
	nested   *shardLevel // inner codecs: sharding_indexed instead of bytes
}

// A shardStore is a sharded test array.
type shardStore struct {
	name      string
	dtype     string // int16, int32, uint8, float32, float64
	big       bool   // bytes codec endian
	shape     []int
	shard     []int // chunk_grid chunk shape (array axes)
	transpose []int // transpose before sharding_indexed; nil: none
	outerCRC  bool  // crc32c after sharding_indexed
	unsharded bool  // no sharding: chunks are [transpose,] bytes[, gzip][, crc32c] by level
	fill      float64
	level     shardLevel
	hole      func(c []int) bool // elements that hold the fill value
}

var crc32cTable = crc32.MakeTable(crc32.Castagnoli)

func appendCRC(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32cTable))
}

func (s shardStore) itemType() codec.DType {
	t := map[string]codec.DType{"int16": {Kind: 'i', Size: 2}, "int32": {Kind: 'i', Size: 4}, "uint8": {Kind: 'u', Size: 1},
		"float32": {Kind: 'f', Size: 4}, "float64": {Kind: 'f', Size: 8}}[s.dtype]
	t.Big = s.big && t.Size > 1
	return t
}

func (s shardStore) put(b []byte, v float64) {
	t := s.itemType()
	if t.Kind == 'f' {
		t.PutFloat(b, v)
	} else {
		t.PutInt(b, int64(v))
	}
}

// values returns the whole array, C order, stored byte order.
func (s shardStore) values() []byte {
	is := s.itemType().Size
	out := make([]byte, prod(s.shape)*is)
	for i := range prod(s.shape) {
		c := Unravel(int64(i), s.shape)
		v := float64(i%251) + 1
		if s.hole != nil && s.hole(c) {
			v = s.fill
		}
		s.put(out[i*is:], v)
	}
	return out
}

// region copies the block at origin of the given shape out of src (of
// srcShape), padding outside src with elem.
func region(src []byte, srcShape, origin, shape []int, is int, elem []byte) []byte {
	out := make([]byte, prod(shape)*is)
	for i := range prod(shape) {
		c := Unravel(int64(i), shape)
		off, in := 0, true
		for d := range shape {
			g := origin[d] + c[d]
			if g >= srcShape[d] {
				in = false
				break
			}
			off = off*srcShape[d] + g
		}
		if in {
			copy(out[i*is:], src[off*is:(off+1)*is])
		} else {
			copy(out[i*is:], elem)
		}
	}
	return out
}

// transposeTo is the transpose codec's encode: B[b] = A[a], b[i] = a[order[i]].
func transposeTo(a []byte, shape, order []int, is int) ([]byte, []int) {
	bshape := make([]int, len(order))
	for i, o := range order {
		bshape[i] = shape[o]
	}
	return testutil.Transpose(a, shape, order, is), bshape
}

// encodeShard encodes one shard array (C order of shape, the codec's axes).
// Inner chunks that are all fill are left out (the empty marker); chunks are
// laid out in reverse index order with a gap of 3 bytes between them, to
// show the decoder follows the index. It reports false when every inner
// chunk is empty.
func encodeShard(t testing.TB, arr []byte, shape []int, is int, fill []byte, l shardLevel) ([]byte, bool) {
	cps := make([]int, len(shape))
	for d := range shape {
		cps[d] = shape[d] / l.inner[d]
	}
	n := prod(cps)
	index := make([]uint64, 2*n)
	var data []byte
	indexLen := 16 * n
	if l.indexCRC {
		indexLen += 4
	}
	base := 0
	if l.start {
		base = indexLen
	}
	any := false
	for i := n - 1; i >= 0; i-- {
		origin := Unravel(int64(i), cps)
		for d := range origin {
			origin[d] *= l.inner[d]
		}
		block := region(arr, shape, origin, l.inner, is, fill)
		if bytes.Equal(block, bytes.Repeat(fill, len(block)/is)) {
			index[2*i], index[2*i+1] = math.MaxUint64, math.MaxUint64
			continue
		}
		enc := block
		if l.nested != nil {
			var ok bool
			enc, ok = encodeShard(t, block, l.inner, is, fill, *l.nested)
			if !ok {
				t.Fatal("nested shard all empty but its block is not")
			}
		}
		enc = encodeInner(enc, l)
		data = append(data, 0xAA, 0xBB, 0xCC) // a gap
		index[2*i], index[2*i+1] = uint64(base+len(data)), uint64(len(enc))
		data = append(data, enc...)
		any = true
	}
	var ib []byte
	for _, v := range index {
		if l.indexBig {
			ib = binary.BigEndian.AppendUint64(ib, v)
		} else {
			ib = binary.LittleEndian.AppendUint64(ib, v)
		}
	}
	if l.indexCRC {
		ib = appendCRC(ib)
	}
	if l.start {
		return append(ib, data...), any
	}
	return append(data, ib...), any
}

// encodeInner applies a level's inner bytes→bytes codecs.
func encodeInner(enc []byte, l shardLevel) []byte {
	if l.gzip {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(enc)
		w.Close()
		enc = b.Bytes()
	}
	if l.crc {
		enc = appendCRC(enc)
	}
	return enc
}

// levelJSON is the sharding_indexed codec object of a level.
func levelJSON(l shardLevel, endian string) map[string]any {
	var codecs []any
	if l.nested != nil {
		codecs = append(codecs, levelJSON(*l.nested, endian))
	} else {
		codecs = append(codecs, map[string]any{"name": "bytes", "configuration": map[string]any{"endian": endian}})
	}
	if l.gzip {
		codecs = append(codecs, map[string]any{"name": "gzip", "configuration": map[string]any{"level": 5}})
	}
	if l.crc {
		codecs = append(codecs, map[string]any{"name": "crc32c"})
	}
	ie := "little"
	if l.indexBig {
		ie = "big"
	}
	index := []any{map[string]any{"name": "bytes", "configuration": map[string]any{"endian": ie}}}
	if l.indexCRC {
		index = append(index, map[string]any{"name": "crc32c"})
	}
	loc := "end"
	if l.start {
		loc = "start"
	}
	return map[string]any{"name": "sharding_indexed", "configuration": map[string]any{
		"chunk_shape": l.inner, "codecs": codecs, "index_codecs": index, "index_location": loc}}
}

// write writes the store into dir/s.name and returns the array's values.
func (s shardStore) write(t testing.TB, dir string) []byte {
	t.Helper()
	root := filepath.Join(dir, s.name)
	is := s.itemType().Size
	fill := make([]byte, is)
	s.put(fill, s.fill)
	vals := s.values()
	endian := "little"
	if s.big {
		endian = "big"
	}
	var codecs []any
	if s.transpose != nil {
		codecs = append(codecs, map[string]any{"name": "transpose", "configuration": map[string]any{"order": s.transpose}})
	}
	if s.unsharded {
		l := levelJSON(s.level, endian)["configuration"].(map[string]any)
		codecs = append(codecs, l["codecs"].([]any)...)
	} else {
		codecs = append(codecs, levelJSON(s.level, endian))
	}
	if s.outerCRC {
		codecs = append(codecs, "crc32c")
	}
	meta, _ := json.MarshalIndent(map[string]any{
		"zarr_format": 3, "node_type": "array", "shape": s.shape, "data_type": s.dtype,
		"chunk_grid":         map[string]any{"name": "regular", "configuration": map[string]any{"chunk_shape": s.shard}},
		"chunk_key_encoding": map[string]any{"name": "default", "configuration": map[string]any{"separator": "/"}},
		"fill_value":         s.fill, "codecs": codecs, "attributes": map[string]any{}, "storage_transformers": []any{},
	}, "", "  ")
	os.MkdirAll(root, 0o755)
	if err := os.WriteFile(filepath.Join(root, MetadataFile), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	grid := make([]int, len(s.shape))
	for d := range grid {
		grid[d] = (s.shape[d] + s.shard[d] - 1) / s.shard[d]
	}
	for i := range prod(grid) {
		sc := Unravel(int64(i), grid)
		origin := make([]int, len(sc))
		for d := range sc {
			origin[d] = sc[d] * s.shard[d]
		}
		arr, shape := region(vals, s.shape, origin, s.shard, is, fill), s.shard
		if s.transpose != nil {
			arr, shape = transposeTo(arr, s.shard, s.transpose, is)
		}
		var enc []byte
		var ok bool
		if s.unsharded {
			enc, ok = encodeInner(arr, s.level), !bytes.Equal(arr, bytes.Repeat(fill, len(arr)/is))
		} else {
			enc, ok = encodeShard(t, arr, shape, is, fill, s.level)
		}
		if !ok {
			continue // all-fill shards are not written
		}
		if s.outerCRC {
			enc = appendCRC(enc)
		}
		p := filepath.Join(root, filepath.FromSlash(formatKey("c", "/", sc)))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, enc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return vals
}

// shardStores are the encoder's test arrays.
var shardStores = []shardStore{
	{name: "end.crc.gzip.edge", dtype: "int16", shape: []int{7, 5}, shard: []int{4, 4},
		level: shardLevel{inner: []int{2, 2}, indexCRC: true, gzip: true},
		hole:  func(c []int) bool { return c[0] < 2 && c[1] < 2 || c[0] >= 4 && c[1] >= 4 }},
	{name: "start.plain.big", dtype: "int32", big: true, shape: []int{9}, shard: []int{4}, fill: -1,
		level: shardLevel{inner: []int{2}, start: true, indexBig: true},
		hole:  func(c []int) bool { return c[0] == 2 || c[0] == 3 }},
	{name: "start.crc.inner.crc", dtype: "float32", shape: []int{5, 6}, shard: []int{2, 6}, fill: 0.5,
		level: shardLevel{inner: []int{1, 3}, start: true, indexCRC: true, crc: true}},
	{name: "nested", dtype: "uint8", shape: []int{8, 6}, shard: []int{8, 6},
		level: shardLevel{inner: []int{4, 6}, start: true, indexCRC: true, gzip: true,
			nested: &shardLevel{inner: []int{2, 3}, indexCRC: true, crc: true}},
		hole: func(c []int) bool { return c[0] < 2 && c[1] < 3 }},
	{name: "outer.crc", dtype: "float64", shape: []int{6, 3}, shard: []int{4, 3}, outerCRC: true,
		level: shardLevel{inner: []int{2, 3}, indexCRC: true, gzip: true}},
	{name: "transpose.2d", dtype: "int16", shape: []int{6, 4}, shard: []int{6, 4}, transpose: []int{1, 0},
		level: shardLevel{inner: []int{2, 3}, indexCRC: true, gzip: true}},
	{name: "transpose.3d.edge", dtype: "int16", big: true, shape: []int{5, 3, 4}, shard: []int{4, 2, 4}, transpose: []int{2, 0, 1},
		level: shardLevel{inner: []int{2, 2, 1}, indexCRC: true}},
	{name: "scalar", dtype: "float64", shape: []int{}, shard: []int{}, fill: 7,
		level: shardLevel{inner: []int{}, indexCRC: true, gzip: true}},
	{name: "transpose.unsharded", dtype: "int16", shape: []int{5, 3, 4}, shard: []int{4, 2, 4}, transpose: []int{2, 0, 1}, unsharded: true,
		level: shardLevel{gzip: true, crc: true}},
}

func openStore(t testing.TB, dir, name string) *Array {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(dir, name, MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := ParseV3(doc)
	if err != nil {
		t.Fatal(err)
	}
	if a.PassThrough != nil {
		t.Fatalf("%s: PassThrough %v", name, a.PassThrough)
	}
	return a
}

func TestShardStores(t *testing.T) {
	dir := t.TempDir()
	for _, s := range shardStores {
		t.Run(s.name, func(t *testing.T) {
			want := s.write(t, dir)
			a := openStore(t, dir, s.name)
			if s.unsharded {
				if got := readV3(t, filepath.Join(dir, s.name), a); !bytes.Equal(got, want) {
					t.Errorf("decoded\n%v\nwant\n%v", got, want)
				}
				return
			}
			if a.Shard() == nil {
				t.Fatalf("not presented unsharded: %s", a.Codecs)
			}
			if a.WholeShard() != s.outerCRC {
				t.Errorf("WholeShard = %v", a.WholeShard())
			}
			// The presented chunk shape is the inner shape in array axes.
			wantChunks := slices.Clone(s.level.inner)
			if s.transpose != nil {
				for i, o := range s.transpose {
					wantChunks[o] = s.level.inner[i]
				}
			}
			if !slices.Equal(a.Chunks, wantChunks) {
				t.Errorf("Chunks %v, want %v", a.Chunks, wantChunks)
			}
			if got := readV3(t, filepath.Join(dir, s.name), a); !bytes.Equal(got, want) {
				t.Errorf("decoded\n%v\nwant\n%v", got, want)
			}
			// Every presented chunk maps to a stored shard and back.
			for lin := range a.NumChunks() {
				c := a.Coords(lin)
				key, inner, sharded := a.StoredKey(c)
				sc, ok := a.ParseStoredKey(key)
				back, ok2 := a.InnerCoords(sc, inner)
				if !sharded || !ok || !ok2 || !slices.Equal(back, c) {
					t.Errorf("%v → %q %d → %v %v", c, key, inner, back, ok2)
				}
			}
			// The presented metadata decodes nothing and keeps the endian.
			doc, _ := os.ReadFile(filepath.Join(dir, s.name, MetadataFile))
			out, err := RewriteV3(doc, nil)
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := ParseV3(out)
			if err != nil || !slices.Equal(p.Chunks, a.Chunks) || p.Endian != a.Endian {
				t.Errorf("presented zarr.json: %v %s", err, out)
			}
		})
	}
}

// TestShardStoresDecodedWhole checks the whole-shard decoder (used for
// nested shards) on the encoder's stores: with an array→array codec other
// than transpose before the sharding codec, the shard is the presented
// chunk.
func TestShardStoresDecodedWhole(t *testing.T) {
	dir := t.TempDir()
	s := shardStores[0]
	want := s.write(t, dir)
	p := filepath.Join(dir, s.name, MetadataFile)
	doc, _ := os.ReadFile(p)
	var m map[string]any
	json.Unmarshal(doc, &m)
	// bitround decodes as the identity, so the stored bytes stay valid.
	m["codecs"] = append([]any{map[string]any{"name": "numcodecs.bitround", "configuration": map[string]any{"keepbits": 3}}}, m["codecs"].([]any)...)
	doc, _ = json.Marshal(m)
	os.WriteFile(p, doc, 0o644)
	a, _, err := ParseV3(doc)
	if err != nil {
		t.Fatal(err)
	}
	if a.PassThrough != nil || a.Shard() != nil || !slices.Equal(a.Chunks, s.shard) {
		t.Fatalf("PassThrough %v, sharded %v, chunks %v", a.PassThrough, a.Shard() != nil, a.Chunks)
	}
	if got := readV3(t, filepath.Join(dir, s.name), a); !bytes.Equal(got, want) {
		t.Errorf("decoded\n%v\nwant\n%v", got, want)
	}
}

// corrupt rewrites one stored shard of the first test store.
func corruptStore(t *testing.T, name string, key string, edit func(a *Array, b []byte) []byte) (*Array, string) {
	dir := t.TempDir()
	var s shardStore
	for _, x := range shardStores {
		if x.name == name {
			s = x
		}
	}
	s.write(t, dir)
	a := openStore(t, dir, name)
	p := filepath.Join(dir, name, filepath.FromSlash(key))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, edit(a, b), 0o644); err != nil {
		t.Fatal(err)
	}
	return a, filepath.Join(dir, name)
}

// chunkErrors reads every presented chunk and returns the error of each
// one that failed (absent chunks are not failures).
func chunkErrors(a *Array, dir string) map[string]error {
	errs := map[string]error{}
	for lin := range a.NumChunks() {
		c := a.Coords(lin)
		if _, err := readChunkV3(dir, a, c); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs[a.ChunkKey(c)] = err
		}
	}
	return errs
}

func TestShardCorruption(t *testing.T) {
	// end.crc.gzip.edge: shape 7×5, shards 4×4 (grid 2×2), inner 2×2; shard
	// c/0/0 has inner chunk 0 empty, so its entries 1..3 hold data.
	setEntry := func(a *Array, b []byte, i int, off, n uint64) []byte {
		ix := b[int64(len(b))-a.Shard().IndexLen() : len(b)-4]
		binary.LittleEndian.PutUint64(ix[16*i:], off)
		binary.LittleEndian.PutUint64(ix[16*i+8:], n)
		copy(b[len(b)-4:], appendCRC(slices.Clone(ix))[len(ix):])
		return b
	}
	tests := []struct {
		name, store, key string
		edit             func(a *Array, b []byte) []byte
		bad              []string // presented chunks that must fail
		want             error
	}{
		{"index crc", "end.crc.gzip.edge", "c/0/0", func(a *Array, b []byte) []byte { b[len(b)-1] ^= 1; return b },
			[]string{"c/0/0", "c/0/1", "c/1/0", "c/1/1"}, codec.ErrChecksum}, // the empty (0,0) too: its index is unreadable
		{"entry past the end", "end.crc.gzip.edge", "c/0/0", func(a *Array, b []byte) []byte { return setEntry(a, b, 3, 3, 1<<40) },
			[]string{"c/1/1"}, codec.ErrCorrupt},
		{"entry inside the index", "end.crc.gzip.edge", "c/0/0", func(a *Array, b []byte) []byte {
			return setEntry(a, b, 1, uint64(int64(len(b))-a.Shard().IndexLen()), 8)
		}, []string{"c/0/1"}, codec.ErrCorrupt},
		{"half an empty marker", "end.crc.gzip.edge", "c/0/0", func(a *Array, b []byte) []byte { return setEntry(a, b, 2, math.MaxUint64, 5) },
			[]string{"c/1/0"}, codec.ErrCorrupt},
		{"inner data", "end.crc.gzip.edge", "c/1/0", func(a *Array, b []byte) []byte {
			sh := a.Shard()
			ix, _ := sh.ParseIndex(b[int64(len(b))-sh.IndexLen():], int64(len(b)))
			o, n, _ := ix.Entry(0)
			for i := o + 10; i < o+n; i++ {
				b[i] ^= 0x55
			}
			return b
		}, []string{"c/2/0"}, codec.ErrCorrupt},
		{"truncated", "end.crc.gzip.edge", "c/1/0", func(a *Array, b []byte) []byte { return b[:40] },
			[]string{"c/2/0", "c/2/1", "c/3/0", "c/3/1"}, codec.ErrCorrupt},
		{"index at start", "start.crc.inner.crc", "c/1/0", func(a *Array, b []byte) []byte { b[3] ^= 1; return b },
			[]string{"c/2/0", "c/2/1", "c/3/0", "c/3/1"}, codec.ErrChecksum},
		{"inner crc", "start.crc.inner.crc", "c/0/0", func(a *Array, b []byte) []byte { b[len(b)-1] ^= 1; return b },
			[]string{"c/0/0"}, codec.ErrChecksum},
		{"whole-shard crc", "outer.crc", "c/1/0", func(a *Array, b []byte) []byte { b[0] ^= 1; return b },
			[]string{"c/2/0"}, codec.ErrChecksum}, // c/3/0 lies outside the array
		{"nested index", "nested", "c/0/0", func(a *Array, b []byte) []byte {
			sh := a.Shard()
			ix, _ := sh.ParseIndex(b[:sh.IndexLen()], int64(len(b)))
			o, n, _ := ix.Entry(1)
			// gunzip, break the nested shard's index crc, gzip again
			r, _ := gzip.NewReader(bytes.NewReader(b[o : o+n]))
			var plain bytes.Buffer
			plain.ReadFrom(r)
			nb := plain.Bytes()
			nb[len(nb)-2] ^= 1
			var z bytes.Buffer
			w := gzip.NewWriter(&z)
			w.Write(nb)
			w.Close()
			enc := z.Bytes()
			out := append(slices.Clone(b), enc...)
			ixb := out[:sh.IndexLen()-4]
			binary.LittleEndian.PutUint64(ixb[16:], uint64(len(b)))
			binary.LittleEndian.PutUint64(ixb[24:], uint64(len(enc)))
			copy(out, appendCRC(slices.Clone(ixb)))
			return out
		}, []string{"c/1/0"}, codec.ErrChecksum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, dir := corruptStore(t, tt.store, tt.key, tt.edit)
			errs := chunkErrors(a, dir)
			var keys []string
			for k, err := range errs {
				keys = append(keys, k)
				if !errors.Is(err, tt.want) {
					t.Errorf("%s: %v, want %v", k, err, tt.want)
				}
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tt.bad) {
				t.Errorf("failing chunks %v, want %v", keys, tt.bad)
			}
		})
	}
}

func TestIndexRange(t *testing.T) {
	a := openFixtureLike(t, `{"name":"sharding_indexed","configuration":{"chunk_shape":[2],"codecs":["bytes"],"index_codecs":["bytes","crc32c"],"index_location":"start"}}`)
	sh := a.Shard()
	if sh.IndexLen() != 16*2+4 || sh.InnerChunks() != 2 {
		t.Fatalf("IndexLen %d InnerChunks %d", sh.IndexLen(), sh.InnerChunks())
	}
	for _, tt := range []struct{ size, off, n int64 }{{100, 0, 36}, {36, 0, 36}, {10, 0, 10}} {
		if off, n := sh.IndexRange(tt.size); off != tt.off || n != tt.n {
			t.Errorf("start: IndexRange(%d) = %d, %d", tt.size, off, n)
		}
	}
	a = openFixtureLike(t, `{"name":"sharding_indexed","configuration":{"chunk_shape":[2],"codecs":["bytes"],"index_codecs":["bytes"]}}`)
	sh = a.Shard()
	if off, n := sh.IndexRange(100); off != 68 || n != 32 {
		t.Errorf("end: IndexRange(100) = %d, %d", off, n)
	}
	if _, err := sh.ParseIndex(make([]byte, 10), 10); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("short shard: %v", err)
	}
	ix, err := sh.ParseIndex(make([]byte, 32), 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ix.Entry(2); !errors.Is(err, ErrInvalid) {
		t.Errorf("Entry(2) of 2: %v", err)
	}
	if o, n, err := ix.Entry(0); err != nil || o != 0 || n != 0 {
		t.Errorf("Entry(0) = %d %d %v", o, n, err)
	}
}

// openFixtureLike parses a 1-d int16 array of shape 4 in one shard of 4
// with the given sharding codec.
func openFixtureLike(t testing.TB, sharding string) *Array {
	t.Helper()
	a, _, err := ParseV3(v3Doc(map[string]string{"shape": "[4]", "codecs": "[" + sharding + "]"}))
	if err != nil || a.PassThrough != nil || a.Shard() == nil {
		t.Fatalf("%v %v", err, a)
	}
	return a
}

// FuzzShardIndex feeds arbitrary shard bytes through the index and the
// whole-shard decoder: no panics, and every entry Entry accepts lies in
// the shard's data bytes.
func FuzzShardIndex(f *testing.F) {
	dir := f.TempDir()
	for _, s := range shardStores[:4] {
		s.write(f, dir)
		filepath.WalkDir(filepath.Join(dir, s.name), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() != MetadataFile {
				b, _ := os.ReadFile(p)
				f.Add(b, uint8(len(f.Name())%4))
			}
			return nil
		})
	}
	var arrays []*Array
	for _, s := range shardStores[:4] {
		arrays = append(arrays, openStore(f, dir, s.name))
	}
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		a := arrays[int(which)%len(arrays)]
		sh := a.Shard()
		size := int64(len(b))
		off, n := sh.IndexRange(size)
		if off < 0 || n < 0 || off+n > size {
			t.Fatalf("IndexRange(%d) = %d, %d", size, off, n)
		}
		if ix, err := sh.ParseIndex(b[off:off+n], size); err == nil {
			for i := range ix.Len() {
				o, l, err := ix.Entry(i)
				if err != nil {
					continue
				}
				if o < 0 || l < 0 || o+l > size || (o < off+n && o+l > off && l > 0) {
					t.Fatalf("entry %d = [%d, +%d) in a %d-byte shard with the index at [%d, +%d)", i, o, l, size, off, n)
				}
				a.DecodeChunk(make([]byte, 0, a.ChunkLen()), b[o:o+l])
			}
		}
		for lin := range min(a.NumChunks(), 8) {
			got, err := a.DecodeFromShard(make([]byte, 0, a.ChunkLen()), b, a.Coords(lin))
			if err == nil && int64(len(got)) != a.ChunkLen() {
				t.Fatalf("decoded %d bytes, want %d", len(got), a.ChunkLen())
			}
		}
		if full, err := sh.Decode(make([]byte, 0, prod(sh.shape)*sh.itemSize), b); err == nil && len(full) != prod(sh.shape)*sh.itemSize {
			t.Fatalf("whole shard decoded to %d bytes", len(full))
		}
	})
}

func ExampleArray_StoredKey() {
	doc := `{"zarr_format":3,"node_type":"array","shape":[4,4],"data_type":"int16",
		"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2,2]}},
		"chunk_key_encoding":{"name":"default"},"fill_value":0,
		"codecs":[{"name":"sharding_indexed","configuration":{"chunk_shape":[1,1],
			"codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"gzip","configuration":{"level":5}}],
			"index_codecs":[{"name":"bytes","configuration":{"endian":"little"}},"crc32c"]}}]}`
	a, _, _ := ParseV3([]byte(doc))
	key, inner, sharded := a.StoredKey([]int{3, 2})
	fmt.Println(a.Chunks, a.ChunkKey([]int{3, 2}), key, inner, sharded)
	// Output: [1 1] c/3/2 c/1/1 2 true
}

// BenchmarkShardInnerChunk measures what a reader does per presented chunk
// of a sharded array once the shard is in memory: parse the index, find the
// entry, decode the inner chunk (gzip, and a transpose before sharding).
func BenchmarkShardInnerChunk(b *testing.B) {
	for _, s := range []shardStore{
		{name: "gzip", dtype: "int32", shape: []int{128, 128}, shard: []int{128, 128},
			level: shardLevel{inner: []int{32, 32}, indexCRC: true, gzip: true}},
		{name: "raw.transpose", dtype: "int32", shape: []int{128, 128}, shard: []int{128, 128}, transpose: []int{1, 0},
			level: shardLevel{inner: []int{32, 32}, indexCRC: true}},
	} {
		b.Run(s.name, func(b *testing.B) {
			dir := b.TempDir()
			s.write(b, dir)
			a := openStore(b, dir, s.name)
			key, _, _ := a.StoredKey([]int{0, 0})
			shard, err := os.ReadFile(filepath.Join(dir, s.name, key))
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, a.ChunkLen())
			b.SetBytes(a.ChunkLen())
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c := a.Coords(int64(i % int(a.NumChunks())))
				i++
				if dst, err = a.DecodeFromShard(dst[:0], shard, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
