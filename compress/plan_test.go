package compress

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/tree"
	"github.com/zfuse/zfuse/zarr"
)

// TestPlanSrcDir: each array's SrcDir is its key prefix in the store: ""
// for an array at the root, and the whole directory key under a directory
// whose name starts with "." (a legal key, not the root's ".").
func TestPlanSrcDir(t *testing.T) {
	zarray := []byte(`{"zarr_format":2,"shape":[4],"chunks":[2],"dtype":"<i2","compressor":null,"filters":null,"fill_value":0,"order":"C"}`)
	root, nested := t.TempDir(), t.TempDir()
	testutil.WriteFile(t, root, ".zarray", zarray)
	testutil.WriteFile(t, nested, ".zgroup", []byte(`{"zarr_format":2}`))
	for _, dir := range []string{".x", "g/.y", "z"} {
		testutil.WriteFile(t, nested, dir+"/.zarray", zarray)
	}
	for _, tc := range []struct {
		name     string
		root     string
		paths    []string
		wantDirs []string
	}{
		{"root array", root, []string{"."}, []string{""}},
		{"dot dirs", nested, []string{".x", "g/.y", "z"}, []string{".x", "g/.y", "z"}},
	} {
		ds, err := store.Dir(tc.root)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ds.Close() })
		p, err := NewPlan(context.Background(), tree.New(tree.Config{Store: ds}), ds, Options{}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var paths, dirs []string
		for _, pa := range p.Arrays {
			paths, dirs = append(paths, pa.Path), append(dirs, pa.SrcDir)
		}
		if !slices.Equal(paths, tc.paths) || !slices.Equal(dirs, tc.wantDirs) {
			t.Errorf("%s: arrays %q in %q, want %q in %q", tc.name, paths, dirs, tc.paths, tc.wantDirs)
		}
	}
}

func TestShardShape(t *testing.T) {
	a, err := zarr.ParseV2([]byte(`{"zarr_format":2,"shape":[100,1000,1000],"chunks":[10,100,100],"dtype":"<f4","compressor":null,"filters":null,"fill_value":0,"order":"C"}`))
	if err != nil {
		t.Fatal(err)
	}
	in := tree.ArrayInfo{Path: "a", Array: a}
	sharded := in
	sharded.Shards = []int{20, 500, 1000}
	tests := []struct {
		name   string
		in     tree.ArrayInfo
		chunks []int
		o      Options
		want   []int
	}{
		{"keep a sharded source", sharded, []int{10, 100, 100}, Options{ShardKeep: true}, []int{2, 5, 10}},
		{"keep an unsharded source", in, []int{10, 100, 100}, Options{ShardKeep: true}, nil},
		{"keep, rechunked: no shards", sharded, []int{5, 100, 100}, Options{ShardKeep: true}, nil},
		{"per axis", in, []int{10, 100, 100}, Options{ShardPer: []int{1, 2, 3}}, []int{1, 2, 3}},
		{"per axis of another rank", in, []int{10, 100, 100}, Options{ShardPer: []int{2, 2}}, nil},
		// 400 KB chunks: 64 MiB holds 167; the last axis takes its 10,
		// the middle 10 (16 left), the first 1.
		{"by size", in, []int{10, 100, 100}, Options{ShardSize: 64 << 20}, []int{1, 10, 10}},
		{"by size, larger than the array", in, []int{10, 100, 100}, Options{ShardSize: 1 << 40}, []int{10, 10, 10}},
		{"by size, smaller than a chunk", in, []int{10, 100, 100}, Options{ShardSize: 1000}, []int{1, 1, 1}},
		{"none", sharded, []int{10, 100, 100}, Options{}, nil},
	}
	for _, tt := range tests {
		if got := shardShape(tt.in, tt.chunks, tt.o, slog.New(slog.DiscardHandler)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCheckDest(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src.zarr")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, ".zgroup"), []byte(`{"zarr_format":2}`), 0o644)
	run := filepath.Join(tmp, "run")
	os.MkdirAll(run, 0o755)
	os.WriteFile(filepath.Join(run, ".zfuse-compress.json"), []byte(`{}`), 0o644)
	link := filepath.Join(tmp, "link")
	os.Symlink(src, link)
	tests := []struct {
		src, dest string
		err       string
	}{
		{src, filepath.Join(tmp, "new"), ""},
		{src, filepath.Join(tmp, "a", "b", "c"), ""},
		{src, filepath.Join(src, "sub"), "inside SOURCE"},
		{src, filepath.Join(link, "sub"), "inside SOURCE"}, // through a symlink
		{src, src, "inside SOURCE"},
		{src, run, ""},
		{src, filepath.Join(src, ".zgroup"), "inside SOURCE"},
		{src, filepath.Join(tmp, "run", ".zfuse-compress.json", "x"), "is a file"},
		{src, "s3://bucket/out.zarr", ""},
		{"s3://bucket/raw", "s3://bucket/raw/out.zarr", "inside SOURCE"},
		{"s3://bucket/raw", "s3://bucket/raw", "inside SOURCE"},
		{"s3://bucket", "s3://bucket/out.zarr", "inside SOURCE"},
		{"s3://bucket/raw", "s3://bucket/raw2", ""},
		{"s3://bucket/raw", "s3://other/raw/out.zarr", ""},
		{src, "s3://", "not an s3://"},
	}
	for _, tt := range tests {
		err := CheckDest(tt.src, tt.dest)
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("CheckDest(%s, %s) = %v, want %q", tt.src, tt.dest, err, tt.err)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Error("checkDest created DEST")
	}
}
