package codec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// TestGenerated writes a wide variety of Zarr v2 arrays with zarr-python
// 2.13 (testdata/generate.py: every compressor, Blosc cname x shuffle,
// every filter, every fixed-size dtype, C and F order, small and 1 MiB
// chunks, partial edge chunks) and checks that codec.V2 decodes every chunk
// to exactly numcodecs' own decode of it. Arrays that cannot be presented
// raw must be refused as the manifest says.
func TestGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: does not run Python to generate stores")
	}
	testutil.NeedPython(t, "zarr", "numcodecs")
	dir := t.TempDir()
	if out, err := exec.Command(testutil.Python, "testdata/generate.py", dir).CombinedOutput(); err != nil {
		t.Fatalf("generate.py: %v\n%s", err, out)
	}
	var manifest map[string]string
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(manifest))
	for name := range manifest {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) < 100 {
		t.Fatalf("generate.py wrote %d arrays; expected over 100", len(names))
	}
	p := NewPool(0)
	defer p.Close()
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			store := filepath.Join(dir, "store", name)
			a, dtype := z2Load(t, store)
			d, err := V2(a.Compressor, a.Filters)
			switch want := manifest[name]; want {
			case "notraw", "config":
				sentinel := map[string]error{"notraw": ErrNotRaw, "config": ErrConfig}[want]
				if !errors.Is(err, sentinel) {
					t.Fatalf("V2(%s, %s) = %v, want %v", a.Compressor, a.Filters, err, sentinel)
				}
				return
			}
			if err != nil {
				if errors.Is(err, ErrUnknownCodec) {
					t.Errorf("codec not registered (yet): %v", err)
					return
				}
				t.Fatalf("V2(%s, %s): %v", a.Compressor, a.Filters, err)
			}
			keys := z2Chunks(t, store)
			if exp := z2Chunks(t, filepath.Join(dir, "expected", name)); len(keys) == 0 || !slices.Equal(keys, exp) {
				t.Fatalf("chunk keys %v, expected %v", keys, exp)
			}
			size := z2ChunkLen(t, a, dtype)
			jobs := make([]Job, len(keys))
			wants := make([][]byte, len(keys))
			for i, key := range keys {
				src, _ := os.ReadFile(filepath.Join(store, key))
				want, _ := os.ReadFile(filepath.Join(dir, "expected", name, key))
				if len(want) != size {
					t.Fatalf("chunk %s: numcodecs decoded %d bytes, but chunks %v of %s are %d", key, len(want), a.Chunks, dtype, size)
				}
				got, err := DecodeFull(d, make([]byte, 0, size), src)
				if err != nil {
					t.Fatalf("chunk %s (%s, chunks %v, %s, filters %s): %v", key, dtype, a.Chunks, a.Compressor, a.Filters, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("chunk %s differs from numcodecs' decode at byte %d of %d", key, confFirstDiff(got, want), size)
				}
				jobs[i], wants[i] = Job{Src: src, Dst: make([]byte, 0, size)}, want
			}
			// The same chunks as one batch on the pool.
			if err := p.Batch(d).DecodeBatch(context.Background(), jobs); err != nil {
				t.Fatal(err)
			}
			for i, j := range jobs {
				if j.Err != nil || !bytes.Equal(j.Dst, wants[i]) {
					t.Fatalf("pool, chunk %s: %v", keys[i], j.Err)
				}
			}
		})
	}
}
