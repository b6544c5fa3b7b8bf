package readahead

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// TestLoaderSharded reads every presented chunk of zarrita.js's sharded v3
// arrays through the Loader (index read once per shard, inner chunks by
// range) and compares it with zarr's whole-shard reference decode. The
// --as-v2 view of each array must read the same.
func TestLoaderSharded(t *testing.T) {
	root := testutil.Conformance(t, "zarrita.js/fixtures/v3/data.zarr")
	names, _ := filepath.Glob(filepath.Join(root, "*sharded*"))
	if len(names) < 5 {
		t.Fatalf("found %d sharded arrays in %s", len(names), root)
	}
	s, err := store.Dir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, dir := range names {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			meta, err := os.ReadFile(filepath.Join(dir, "zarr.json"))
			if err != nil {
				t.Fatal(err)
			}
			a, _, err := zarr.ParseV3(meta)
			if err != nil || a.PassThrough != nil {
				t.Fatalf("ParseV3: %v, %v", err, a.PassThrough)
			}
			if a.Shard() == nil {
				t.Fatal("not presented unsharded")
			}
			v2, err := a.AsV2()
			if err != nil {
				t.Fatal(err)
			}
			l := newLoader(t, s, nil)
			missing := 0
			for i := range a.NumChunks() {
				coords := a.Coords(i)
				rel, _, _ := a.StoredKey(coords)
				var want []byte
				var wantErr error
				if shard, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
					wantErr = err
				} else {
					want, wantErr = a.DecodeFromShard(make([]byte, 0, a.ChunkLen()), shard, coords)
				}
				for _, view := range []*zarr.Array{a, v2} {
					got, err := l.Chunk(context.Background(), Ref{Array: view, Path: name, Coords: coords, PID: 1})
					switch {
					case errors.Is(wantErr, fs.ErrNotExist):
						if !errors.Is(err, fs.ErrNotExist) {
							t.Errorf("chunk %v (format %d): %v, want missing", coords, view.Format, err)
						}
					case wantErr != nil:
						t.Fatalf("reference decode of %v: %v", coords, wantErr)
					case err != nil || !bytes.Equal(got, want):
						t.Errorf("chunk %v (format %d) = %v, %v; want %v", coords, view.Format, got, err, want)
					}
				}
				if wantErr != nil {
					missing++
				}
			}
			st := l.Stats()
			if shards := int64(len(mustGlob(t, filepath.Join(dir, "c")))); st.StoreReads > shards+a.NumChunks() {
				t.Errorf("%d store reads for %d shards and %d chunks: indexes read more than once", st.StoreReads, shards, a.NumChunks())
			}
			switch name { // known values (MANIFEST.md)
			case "3d.chunked.compressed.sharded.i2": // arange(64).reshape(4,4,4), inner chunks 1×1×1
				for i := range a.NumChunks() {
					v, err := l.Chunk(context.Background(), Ref{Array: a, Path: name, Coords: a.Coords(i), PID: 1})
					if errors.Is(err, fs.ErrNotExist) {
						v, err = []byte{0, 0}, nil // not written: the fill value, 0
					}
					if err != nil || int64(int16(binary.LittleEndian.Uint16(v))) != i {
						t.Errorf("chunk %v = %v, %v; want %d", a.Coords(i), v, err, i)
					}
				}
			case "1d.chunked.filled.compressed.sharded.i2", "2d.chunked.compressed.sharded.filled.i2":
				if missing == 0 {
					t.Error("no missing chunk: the absent shard or empty index entry was not seen")
				}
			}
		})
	}
}

// mustGlob returns the files under dir.
func mustGlob(t *testing.T, dir string) []string {
	var files []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	return files
}

// TestLoaderLegacyNested reads a v2 array whose metadata names no
// dimension_separator from a store that nests its chunk keys (0/1), as
// zarr-python's NestedDirectoryStore wrote them before the field existed:
// zarr decides from the array directory's listing that the keys are
// nested, and the Loader reads the keys of the array it returns.
func TestLoaderLegacyNested(t *testing.T) {
	a, err := zarr.ParseV2([]byte(`{"zarr_format": 2, "shape": [40, 40], "chunks": [8, 8], "dtype": "<f8",
		"compressor": {"id": "zlib", "level": 1}, "filters": null, "fill_value": 0, "order": "C"}`))
	if err != nil || !a.Legacy() {
		t.Fatalf("ParseV2: %v, legacy %v", err, a.Legacy())
	}
	m := fstest.MapFS{}
	for i := range a.NumChunks() {
		key := "temp/" + strings.ReplaceAll(a.ChunkKey(a.Coords(i)), ".", "/")
		m[key] = &fstest.MapFile{Data: deflate(t, chunkData(a, i))}
	}
	s := store.FS(m)
	a, err = a.ResolveSeparator(func() ([]string, error) {
		es, err := s.List(t.Context(), "temp")
		var dirs []string
		for _, e := range es {
			if e.Dir {
				dirs = append(dirs, e.Name)
			}
		}
		return dirs, err
	})
	if err != nil || a.Legacy() || a.Separator != "/" {
		t.Fatalf("ResolveSeparator: %v, separator %q", err, a.Separator)
	}
	l := newLoader(t, s, nil)
	for i := range a.NumChunks() {
		if err := readChunk(t, l, a, "temp", i, 1); err != nil {
			t.Fatalf("chunk %v: %v", a.Coords(i), err)
		}
	}
	if st := l.Stats(); st.PrefetchUsed < a.NumChunks()*8/10 {
		t.Errorf("prefetch did not find the nested keys: %v", st)
	}
}

// TestShardReplaced: with Config.Changing, an inner chunk read after its
// shard was replaced in the store (another layout of the inner chunks, the
// same size) is read with the new shard's index, not cut from the new
// shard at the old index's offsets.
func TestShardReplaced(t *testing.T) {
	a, _, err := zarr.ParseV3([]byte(`{"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "uint8",
		"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8]}},
		"chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": 0,
		"codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2], "codecs": [{"name": "bytes"}],
			"index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}], "index_location": "end"}}]}`))
	if err != nil || a.PassThrough != nil {
		t.Fatalf("ParseV3: %v, %v", err, a.PassThrough)
	}
	// shard stores inner chunk i as {base+2i, base+2i+1}, in the given order.
	shard := func(base byte, order []int) []byte {
		var body, index []byte
		offs := make([][2]uint64, len(order))
		for _, i := range order {
			offs[i] = [2]uint64{uint64(len(body)), 2}
			body = append(body, base+byte(2*i), base+byte(2*i+1))
		}
		for _, o := range offs {
			index = binary.LittleEndian.AppendUint64(index, o[0])
			index = binary.LittleEndian.AppendUint64(index, o[1])
		}
		index = binary.LittleEndian.AppendUint32(index, crc32.Checksum(index, crc32.MakeTable(crc32.Castagnoli)))
		return append(body, index...)
	}
	root := t.TempDir()
	path := filepath.Join(root, "c", "0")
	testutil.WriteFile(t, root, "c/0", shard(0, []int{0, 1, 2, 3}))
	s, err := store.Dir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := newLoader(t, s, func(c *Config) { c.Changing, c.ReadaheadBudget = true, 0 })
	if got, err := l.Chunk(t.Context(), Ref{Array: a, Path: "", Coords: []int{0}, PID: 1}); err != nil || !bytes.Equal(got, []byte{0, 1}) {
		t.Fatalf("chunk 0 = %v, %v; want [0 1]", got, err)
	}
	// Replace the shard as a writer does (a new file renamed into place),
	// with a later modification time; nobody tells the Loader.
	tmp := path + ".partial"
	testutil.WriteFile(t, root, "c/0.partial", shard(100, []int{3, 2, 1, 0}))
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(tmp, later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if got, err := l.Chunk(t.Context(), Ref{Array: a, Path: "", Coords: []int{1}, PID: 1}); err != nil || !bytes.Equal(got, []byte{102, 103}) {
		t.Errorf("chunk 1 after the shard was replaced = %v, %v; want the new shard's [102 103]", got, err)
	}
}
