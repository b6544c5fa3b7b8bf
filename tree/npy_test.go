package tree

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/readahead"
)

// TestNpyTree: under AsNpy every raw array is one .npy file holding its
// elements (fill values for a missing chunk, order F, 0-d), with its
// attributes beside it; groups are directories without their Zarr
// metadata; arrays that cannot be presented raw are not shown, and say
// why; stat never decodes; byte ranges at any offset read the same bytes;
// a corrupt chunk fails the reads of its range only, naming its key.
func TestNpyTree(t *testing.T) {
	ctx := context.Background()
	s := testutil.NewV2Store(t)
	tr, logs := newTestTree(t, s, func(c *Config) { c.AsNpy = true })
	loader := tr.chunks.(*readahead.Loader)
	for dir, want := range map[string][]string{
		".":     {"README.txt", "corrupt.json", "corrupt.npy", "group", "legacy.json", "legacy.npy", "scalar.json", "scalar.npy", "temp.json", "temp.npy"},
		"group": {"nested.json", "nested.npy"},
	} {
		if got := childNames(t, tr, dir); !slices.Equal(got, want) {
			t.Errorf("%s lists %v, want %v", dir, got, want)
		}
	}
	sizes := map[string]int64{}
	for p, arr := range testutil.NpyFiles {
		n, err := tr.Lookup(ctx, p)
		if err != nil {
			t.Fatalf("lookup %s: %v", p, err)
		}
		sizes[p] = n.size
		if want := int64(128 + len(s.Arrays[arr].Flat())); n.size != want {
			t.Errorf("%s: size %d, want %d", p, n.size, want)
		}
	}
	if st := loader.Stats(); st.Reads != 0 {
		t.Errorf("listing and stat read %d chunks, want none", st.Reads)
	}
	for p, arr := range testutil.NpyFiles {
		b, err := tr.ReadFile(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		s.Arrays[arr].CheckNpy(t, p, b)
		r, n := rand.New(rand.NewPCG(1, uint64(len(p)))), mustLookup(t, tr, p)
		for range 50 {
			off, k := r.Int64N(int64(len(b))+1), r.Int64N(40)+1
			got, err := tr.ReadAt(ctx, n, make([]byte, k), off, 0)
			if want := b[min(off, int64(len(b))):min(off+k, int64(len(b)))]; err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s [%d, +%d): %x, %v; want %x", p, off, k, got, err, want)
			}
		}
	}
	if b, err := tr.ReadFile(ctx, "temp.json"); err != nil || string(b) != `{"units": "K"}` {
		t.Errorf("temp.json: %q, %v; want the .zattrs as stored", b, err)
	}
	if b, err := tr.ReadFile(ctx, "scalar.json"); err != nil || string(b) != "{}" {
		t.Errorf("scalar.json: %q, %v; want {}", b, err)
	}
	for _, p := range []string{"temp", "temp/0.0", "odd.npy", "odd", "bad.npy", ".zgroup", ".zattrs", ".zmetadata", "group/.zgroup", "nosuch.npy"} {
		if _, err := tr.ReadFile(ctx, p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want it not shown", p, err)
		}
	}
	for _, key := range []string{"odd", "bad"} {
		if !strings.Contains(logs.String(), `msg="array not shown under --as-npy" key=`+key) {
			t.Errorf("no Warn line says %s is not shown:\n%s", key, logs)
		}
	}
	// corrupt: 4 |u1 in chunks of 2, chunk 1 garbage; the data starts at 128.
	c := mustLookup(t, tr, "corrupt.npy")
	if got, err := tr.ReadAt(ctx, c, make([]byte, 130), 0, 0); err != nil || !bytes.Equal(got[128:], []byte{7, 8}) {
		t.Errorf("corrupt.npy, header and chunk 0: %x, %v", got, err)
	}
	if _, err := tr.ReadAt(ctx, c, make([]byte, 1), 129, 0); err != nil {
		t.Errorf("corrupt.npy, chunk 0 alone: %v", err)
	}
	if _, err := tr.ReadAt(ctx, c, make([]byte, 1), 131, 0); err == nil || !strings.Contains(err.Error(), "corrupt/1") {
		t.Errorf("corrupt.npy, chunk 1: %v, want an error naming corrupt/1", err)
	}
	arrays, err := tr.Arrays(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range arrays {
		want := map[string]string{"temp": "temp.npy", "group/nested": "group/nested.npy", "legacy": "legacy.npy", "scalar": "scalar.npy", "corrupt": "corrupt.npy"}[in.Path]
		if in.Npy != want || (want == "") != (in.Hidden != nil) {
			t.Errorf("Arrays: %s as %q, hidden %v; want %q", in.Path, in.Npy, in.Hidden, want)
		}
		if in.Path == "temp" && in.Chunks != 8 {
			t.Errorf("Arrays: temp has %d chunks, want 8 (the chunk files of the Zarr view)", in.Chunks)
		}
	}
}

func mustLookup(t *testing.T, tr *Tree, p string) *Node {
	t.Helper()
	n, err := tr.Lookup(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNpyRoot: a store whose root is an array is one file, named by
// RootName.
func TestNpyRoot(t *testing.T) {
	s := testutil.EmptyV2Store(t)
	s.Add(t, testutil.V2Array{Path: "", Shape: []int{3, 4}, Chunks: []int{2, 3}, DType: "<f8", Order: "C", Sep: ".",
		Value: func(i []int) float64 { return float64(i[0]) - float64(i[1])/4 }})
	tr, _ := newTestTree(t, s, func(c *Config) { c.AsNpy, c.RootName = true, "t2m" })
	if got := childNames(t, tr, "."); !slices.Equal(got, []string{"t2m.json", "t2m.npy"}) {
		t.Errorf("root lists %v, want t2m.json t2m.npy", got)
	}
	b, err := tr.ReadFile(context.Background(), "t2m.npy")
	if err != nil {
		t.Fatal(err)
	}
	s.Arrays[""].CheckNpy(t, "t2m.npy", b)
	if _, err := tr.ReadFile(context.Background(), "0.0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a chunk of the root array: %v, want it not shown", err)
	}
	arrays, err := tr.Arrays(context.Background())
	if err != nil || len(arrays) != 1 || arrays[0].Npy != "t2m.npy" {
		t.Errorf("Arrays: %+v, %v", arrays, err)
	}
}

func TestRootNameOf(t *testing.T) {
	for in, want := range map[string]string{
		"/data/t2m.zarr":                        "t2m",
		"/data/t2m.zarr/":                       "t2m",
		"era5":                                  "era5",
		"https://example.org/data/t2m.zarr?x=1": "t2m",
		"https://example.org/":                  "example.org",
		"s3://bucket/prefix/sst.zarr":           "sst",
		"s3://bucket":                           "bucket",
		"/":                                     "array",
		".":                                     "array",
	} {
		if got := RootNameOf(in); got != want {
			t.Errorf("RootNameOf(%q) = %q, want %q", in, got, want)
		}
	}
}
