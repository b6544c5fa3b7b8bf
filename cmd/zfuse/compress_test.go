package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/fs"
	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/zarr"
)

func TestCompressOptions(t *testing.T) {
	tests := []struct {
		name  string
		flags compressFlags
		comp  string // the compressor for an <i4 array, as JSON
		nfilt int
		err   string
	}{
		{"default", compressFlags{codec: "blosc:lz4:5:shuffle", format: "keep", chunks: "keep", shard: "keep"},
			`{"blocksize":0,"clevel":5,"cname":"lz4","id":"blosc","shuffle":1}`, 0, ""},
		{"blosc defaults", compressFlags{codec: "blosc", format: "v3", chunks: "keep", shard: "none"},
			`{"blocksize":0,"clevel":5,"cname":"lz4","id":"blosc","shuffle":1}`, 0, ""},
		{"bitshuffle zstd", compressFlags{codec: "blosc:zstd:9:bitshuffle:65536", format: "v2", chunks: "keep", shard: "keep"},
			`{"blocksize":65536,"clevel":9,"cname":"zstd","id":"blosc","shuffle":2}`, 0, ""},
		{"filters", compressFlags{codec: "delta,shuffle,zstd:3", format: "keep", chunks: "1x-1", shard: "64MiB"},
			`{"id":"zstd","level":3}`, 2, ""},
		{"none", compressFlags{codec: "none", format: "keep", chunks: "keep", shard: "2x2"}, `null`, 0, ""},
		{"gzip default level", compressFlags{codec: "gzip", format: "keep", chunks: "keep", shard: "keep"}, `{"id":"gzip","level":6}`, 0, ""},
		{"bad format", compressFlags{codec: "lz4", format: "v4", chunks: "keep", shard: "keep"}, "", 0, "--format"},
		{"v2 shards", compressFlags{codec: "lz4", format: "v2", chunks: "keep", shard: "2x2"}, "", 0, "no sharding"},
		{"bad chunks", compressFlags{codec: "lz4", format: "keep", chunks: "2x0", shard: "keep"}, "", 0, "--chunks"},
		{"bad shard", compressFlags{codec: "lz4", format: "keep", chunks: "keep", shard: "-1x2"}, "", 0, "--shard"},
		{"bad level", compressFlags{codec: "zstd:high", format: "keep", chunks: "keep", shard: "keep"}, "", 0, "not a number"},
		{"bad cname", compressFlags{codec: "blosc:snappy", format: "keep", chunks: "keep", shard: "keep"}, "", 0, "snappy"},
		{"none with more", compressFlags{codec: "delta,none", format: "keep", chunks: "keep", shard: "keep"}, "", 0, "stands alone"},
		{"filter settings", compressFlags{codec: "delta:4,zstd", format: "keep", chunks: "keep", shard: "keep"}, "", 0, "takes no settings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := tt.flags.options()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("options() = %v, want an error about %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			comp, filters, err := o.codecs("<i4", 4)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(comp)
			if string(got) != tt.comp || len(filters) != tt.nfilt {
				t.Errorf("compressor %s, %d filters; want %s, %d", got, len(filters), tt.comp, tt.nfilt)
			}
		})
	}
}

func TestShardShape(t *testing.T) {
	a, err := zarr.ParseV2([]byte(`{"zarr_format":2,"shape":[100,1000,1000],"chunks":[10,100,100],"dtype":"<f4","compressor":null,"filters":null,"fill_value":0,"order":"C"}`))
	if err != nil {
		t.Fatal(err)
	}
	in := fs.ArrayInfo{Path: "a", Array: a}
	sharded := in
	sharded.Shards = []int{20, 500, 1000}
	tests := []struct {
		name   string
		in     fs.ArrayInfo
		chunks []int
		o      compressOptions
		want   []int
	}{
		{"keep a sharded source", sharded, []int{10, 100, 100}, compressOptions{shardKeep: true}, []int{2, 5, 10}},
		{"keep an unsharded source", in, []int{10, 100, 100}, compressOptions{shardKeep: true}, nil},
		{"keep, rechunked: no shards", sharded, []int{5, 100, 100}, compressOptions{shardKeep: true}, nil},
		{"per axis", in, []int{10, 100, 100}, compressOptions{shardPer: []int{1, 2, 3}}, []int{1, 2, 3}},
		{"per axis of another rank", in, []int{10, 100, 100}, compressOptions{shardPer: []int{2, 2}}, nil},
		// 400 KB chunks: 64 MiB holds 167; the last axis takes its 10,
		// the middle 10 (16 left), the first 1.
		{"by size", in, []int{10, 100, 100}, compressOptions{shardSize: 64 << 20}, []int{1, 10, 10}},
		{"by size, larger than the array", in, []int{10, 100, 100}, compressOptions{shardSize: 1 << 40}, []int{10, 10, 10}},
		{"by size, smaller than a chunk", in, []int{10, 100, 100}, compressOptions{shardSize: 1000}, []int{1, 1, 1}},
		{"none", sharded, []int{10, 100, 100}, compressOptions{}, nil},
	}
	for _, tt := range tests {
		if got := shardShape(tt.in, tt.chunks, tt.o, discardLog()); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestUnits: every chunk is in exactly one unit, in C order; a sharded
// array's units are its shards, with the inner chunks outside the array
// left out.
func TestUnits(t *testing.T) {
	for _, tg := range []zarr.Target{
		{Format: 2, Chunks: []int{3, 4}},
		{Format: 3, Chunks: []int{3, 4}, Shard: []int{2, 2}},
	} {
		src := map[string][]byte{zarr.ArrayFile: []byte(`{"zarr_format":2,"shape":[10,9],"chunks":[3,4],"dtype":"<i2","compressor":null,"filters":null,"fill_value":0,"order":"C"}`)}
		a, _ := zarr.ParseV2(src[zarr.ArrayFile])
		files, err := zarr.StoreArray(src, a, tg)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := zarr.NewEncoding(files)
		if err != nil {
			t.Fatal(err)
		}
		d := enc.Array()
		n, at := units(d)
		seen := map[int64]int{}
		for i := range n {
			for _, c := range at(i).coords {
				if c != nil {
					seen[d.Linear(c)]++
				}
			}
		}
		if int64(len(seen)) != d.NumChunks() {
			t.Errorf("format %d: %d chunks in units, want %d", tg.Format, len(seen), d.NumChunks())
		}
		for k, v := range seen {
			if v != 1 {
				t.Errorf("format %d: chunk %d in %d units", tg.Format, k, v)
			}
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
	os.WriteFile(filepath.Join(run, runFile), []byte(`{}`), 0o644)
	link := filepath.Join(tmp, "link")
	os.Symlink(src, link)
	tests := []struct {
		dest   string
		resume bool
		err    string
	}{
		{filepath.Join(tmp, "new"), false, ""},
		{filepath.Join(tmp, "a", "b", "c"), false, ""},
		{filepath.Join(src, "sub"), false, "inside SOURCE"},
		{filepath.Join(link, "sub"), false, "inside SOURCE"}, // through a symlink
		{src, true, "inside SOURCE"},
		{run, false, "not empty"},
		{run, true, ""},
		{filepath.Join(src, ".zgroup"), false, "inside SOURCE"},
		{filepath.Join(tmp, "run", runFile, "x"), false, "is a file"},
	}
	for _, tt := range tests {
		err := checkDest(src, tt.dest, tt.resume)
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("checkDest(%s, resume %v) = %v, want %q", tt.dest, tt.resume, err, tt.err)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Error("checkDest created DEST")
	}
}

// TestCompressSmall runs the command on a store written here: a sharded
// v3 copy of a v2 array read back through the array's own decoder.
func TestCompressSmall(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src.zarr")
	os.MkdirAll(filepath.Join(src, "a"), 0o755)
	os.WriteFile(filepath.Join(src, ".zgroup"), []byte(`{"zarr_format":2}`), 0o644)
	os.WriteFile(filepath.Join(src, ".zattrs"), []byte(`{"title":"small"}`), 0o644)
	za := `{"zarr_format":2,"shape":[6,5],"chunks":[3,5],"dtype":"<u2","compressor":null,"filters":null,"fill_value":7,"order":"C"}`
	os.WriteFile(filepath.Join(src, "a", ".zarray"), []byte(za), 0o644)
	chunk := func(base int) []byte {
		b := make([]byte, 30)
		for i := range 15 {
			b[2*i] = byte(base + i)
		}
		return b
	}
	os.WriteFile(filepath.Join(src, "a", "0.0"), chunk(0), 0o644)
	os.WriteFile(filepath.Join(src, "a", "1.0"), bytes.Repeat([]byte{7, 0}, 15), 0o644) // all fill: left out
	dest := filepath.Join(tmp, "out.zarr")
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"compress", "--progress", "plain", "--format", "v3", "--chunks", "2x5", "--shard", "2x1", "--codec", "zstd:1", "--verify", src, dest}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "total") || !strings.Contains(errOut.String(), "compress:") {
		t.Errorf("summary:\n%s\nprogress:\n%s", out.String(), errOut.String())
	}
	enc, err := zarr.NewEncoding(map[string][]byte{zarr.MetadataFile: testutil.Must(os.ReadFile(filepath.Join(dest, "a", "zarr.json")))})
	if err != nil {
		t.Fatal(err)
	}
	d := enc.Array()
	if !slices.Equal(d.Chunks, []int{2, 5}) || d.Shard() == nil || !bytes.Equal(d.Fill, []byte{7, 0}) {
		t.Fatalf("written array: chunks %v, sharded %v, fill %v", d.Chunks, d.Shard() != nil, d.Fill)
	}
	shard := testutil.Must(os.ReadFile(filepath.Join(dest, "a", "c", "0", "0")))
	// The first shard holds rows 0-3: rows 0-2 of the source's first
	// chunk and row 3, the fill value, from its second.
	rows := append(chunk(0), bytes.Repeat([]byte{7, 0}, 5)...)
	for r := range 2 {
		got, err := d.DecodeFromShard(make([]byte, 0, d.ChunkLen()), shard, []int{r, 0})
		if err != nil || !bytes.Equal(got, rows[r*20:(r+1)*20]) {
			t.Fatalf("rows %d-%d: %v %v", 2*r, 2*r+1, got, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dest, "a", "c", "1", "0")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the all-fill shard was written: %v", err)
	}
	if b := testutil.Must(os.ReadFile(filepath.Join(dest, "zarr.json"))); !bytes.Contains(b, []byte(`"small"`)) {
		t.Errorf("group zarr.json %s", b)
	}
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
