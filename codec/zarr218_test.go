package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// z2Array is the part of a v2 .zarray the codec tests need.
type z2Array struct {
	Chunks     []int             `json:"chunks"`
	Compressor json.RawMessage   `json:"compressor"`
	Filters    []json.RawMessage `json:"filters"`
	Dtype      json.RawMessage   `json:"dtype"`
}

// z2Load reads dir/.zarray and returns it with its typestr.
func z2Load(t testing.TB, dir string) (z2Array, string) {
	t.Helper()
	var a z2Array
	b, err := os.ReadFile(filepath.Join(dir, ".zarray"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("%s/.zarray: %v", dir, err)
	}
	var dtype string
	if err := json.Unmarshal(a.Dtype, &dtype); err != nil {
		t.Fatalf("%s: structured dtype %s: not handled by this test", dir, a.Dtype)
	}
	return a, dtype
}

// z2ChunkLen is the decoded size of every chunk: prod(chunks) * itemsize.
func z2ChunkLen(t testing.TB, a z2Array, dtype string) int {
	t.Helper()
	n, err := testutil.ItemSize(dtype)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range a.Chunks {
		n *= c
	}
	return n
}

// z2Chunks lists the chunk keys under dir: every file not starting with "."
// (nested "0/1" keys included), sorted.
func z2Chunks(t testing.TB, dir string) []string {
	t.Helper()
	var keys []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		keys = append(keys, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// TestZarr218 decodes every chunk of zarr-python 2.18.7's format
// compatibility stores (fixture/<i>/<j>: array i under compressor j) and
// compares it with the same chunk of the uncompressed store <i>/0.
func TestZarr218(t *testing.T) {
	root := testutil.Conformance(t, "zarr-python-2.18.7/fixture")
	for i := 0; i <= 23; i++ {
		raw := filepath.Join(root, fmt.Sprint(i), "0")
		for j := 0; j <= 6; j++ {
			dir := filepath.Join(root, fmt.Sprint(i), fmt.Sprint(j))
			t.Run(fmt.Sprintf("%d/%d", i, j), func(t *testing.T) {
				a, dtype := z2Load(t, dir)
				d, err := V2(a.Compressor, a.Filters)
				if dtype == "|O" {
					if !errors.Is(err, ErrNotRaw) {
						t.Fatalf("object dtype: V2 = %v, want ErrNotRaw", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("V2(%s, %s): %v", a.Compressor, a.Filters, err)
				}
				keys := z2Chunks(t, dir)
				if want := z2Chunks(t, raw); !slices.Equal(keys, want) {
					t.Fatalf("chunk keys %v, uncompressed store has %v", keys, want)
				}
				size := z2ChunkLen(t, a, dtype)
				for _, key := range keys {
					src, _ := os.ReadFile(filepath.Join(dir, key))
					want, _ := os.ReadFile(filepath.Join(raw, key))
					got, err := DecodeFull(d, make([]byte, 0, size), src)
					if err != nil {
						t.Fatalf("chunk %s (%s, chunks %v): %v", key, dtype, a.Chunks, err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("chunk %s differs from %d/0/%s at byte %d", key, i, key, confFirstDiff(got, want))
					}
				}
			})
		}
	}
	// The separator and metadata variants all hold [[1,2],[3,4]] as <i8 in
	// one 2x2 chunk (MANIFEST §3).
	want := binary.LittleEndian.AppendUint64(nil, 1)
	for _, v := range []uint64{2, 3, 4} {
		want = binary.LittleEndian.AppendUint64(want, v)
	}
	for _, name := range []string{"flat", "flat_legacy", "nested", "nested_legacy", "meta"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			a, dtype := z2Load(t, dir)
			d, err := V2(a.Compressor, a.Filters)
			if err != nil {
				t.Fatal(err)
			}
			keys := z2Chunks(t, dir)
			if len(keys) != 1 || (keys[0] != "0.0" && keys[0] != "0/0") {
				t.Fatalf("chunk keys %v", keys)
			}
			src, _ := os.ReadFile(filepath.Join(dir, keys[0]))
			got, err := DecodeFull(d, make([]byte, 0, z2ChunkLen(t, a, dtype)), src)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("chunk %s: %v, %v", keys[0], got, err)
			}
		})
	}
}
