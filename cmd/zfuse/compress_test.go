package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
			comp, filters, _, err := o.Codecs("<i4", 4)
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

func TestCheckDestScheme(t *testing.T) {
	src := t.TempDir()
	for _, tt := range []struct{ dest, err string }{
		{"http://host/out.zarr", "want a local directory or s3://"},
		{"http://user:secret@host/out.zarr", "REDACTED@host"},
		{"s3://", "not an s3://"},
	} {
		err := checkDest(src, tt.dest)
		if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "secret") {
			t.Errorf("checkDest(%s, %s) = %v, want %q", src, tt.dest, err, tt.err)
		}
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
	// --verify says what it did: 3 new chunks, one of them left out (all fill).
	if !strings.Contains(out.String(), "verified: 3 chunks read back from DEST, decoded and compared with the source") {
		t.Errorf("the summary does not say what --verify checked:\n%s", out.String())
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

// smallStore writes a v2 store under dir and returns it: a uint16 array
// in many chunks (some all fill), a small int32 one in a group, and two
// object arrays (copied as stored).
func smallStore(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "src.zarr")
	os.MkdirAll(filepath.Join(src, "a"), 0o755)
	os.MkdirAll(filepath.Join(src, "g", "b"), 0o755)
	os.WriteFile(filepath.Join(src, ".zgroup"), []byte(`{"zarr_format":2}`), 0o644)
	os.WriteFile(filepath.Join(src, "g", ".zgroup"), []byte(`{"zarr_format":2}`), 0o644)
	os.WriteFile(filepath.Join(src, "a", ".zarray"), []byte(`{"zarr_format":2,"shape":[40,30],"chunks":[3,5],"dtype":"<u2","compressor":null,"filters":null,"fill_value":7,"order":"C"}`), 0o644)
	os.WriteFile(filepath.Join(src, "g", "b", ".zarray"), []byte(`{"zarr_format":2,"shape":[9],"chunks":[4],"dtype":"<i4","compressor":null,"filters":null,"fill_value":0,"order":"C"}`), 0o644)
	for i := range 14 {
		for j := range 6 {
			b := make([]byte, 30)
			for k := range 15 {
				b[2*k] = byte(i*7 + j*3 + k)
			}
			if (i+j)%5 == 0 {
				b = bytes.Repeat([]byte{7, 0}, 15) // all fill: left out
			}
			os.WriteFile(filepath.Join(src, "a", fmt.Sprintf("%d.%d", i, j)), b, 0o644)
		}
	}
	os.WriteFile(filepath.Join(src, "g", "b", "1"), bytes.Repeat([]byte{1, 2, 3, 4}, 4), 0o644)
	// Object arrays, copied as stored.
	for _, name := range []string{"s", "t"} {
		os.MkdirAll(filepath.Join(src, "g", name), 0o755)
		os.WriteFile(filepath.Join(src, "g", name, ".zarray"), []byte(`{"zarr_format":2,"shape":[3],"chunks":[2],"dtype":"|O","compressor":null,"filters":[{"id":"vlen-utf8"}],"fill_value":0,"order":"C"}`), 0o644)
		os.WriteFile(filepath.Join(src, "g", name, "0"), []byte("\x02\x00\x00\x00\x01\x00\x00\x00a\x01\x00\x00\x00b"), 0o644)
		os.WriteFile(filepath.Join(src, "g", name, "1"), []byte("\x01\x00\x00\x00\x01\x00\x00\x00c"), 0o644)
	}
	return src
}

// files reads every file under dir, by path relative to it.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(testutil.Must(os.ReadFile(p)))
		}
		return err
	})
	return out
}

// TestCompressParts: a job split in three parts, then --finish, writes
// the same files as one process, sharded or not; --finish refuses, naming
// the part, while one has not run, and writes nothing; a part with other
// settings is refused before it writes; --finish of a finished job has
// nothing to do.
func TestCompressParts(t *testing.T) {
	for _, flags := range [][]string{
		{"--codec", "zstd:1"},
		{"--codec", "lz4", "--format", "v3", "--chunks", "2x5", "--shard", "2x2"},
	} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			tmp := t.TempDir()
			src := smallStore(t, tmp)
			compress := func(args ...string) (string, error) {
				var out, errOut bytes.Buffer
				err := run(context.Background(), append(append([]string{"compress", "--progress", "none"}, args...), src, filepath.Join(tmp, "parts.zarr")), &out, &errOut)
				if err != nil {
					err = fmt.Errorf("%w\n%s", err, errOut.String())
				}
				return out.String(), err
			}
			one := filepath.Join(tmp, "one.zarr")
			if err := run(context.Background(), append(append([]string{"compress", "--progress", "none"}, flags...), src, one), io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"0/3", "2/3"} {
				if _, err := compress(append([]string{"--part", k}, flags...)...); err != nil {
					t.Fatal(err)
				}
			}
			before := files(t, filepath.Join(tmp, "parts.zarr"))
			if _, err := compress("--finish"); err == nil || !strings.Contains(err.Error(), "part 1/3 has not run") {
				t.Errorf("--finish with part 1/3 missing: %v", err)
			}
			if _, err := compress(append([]string{"--part", "1/3", "--codec", "gzip"}, flags[2:]...)...); err == nil || !strings.Contains(err.Error(), "--codec") {
				t.Errorf("a part with another codec: %v", err)
			}
			if after := files(t, filepath.Join(tmp, "parts.zarr")); !maps.Equal(before, after) {
				t.Errorf("a refused run changed DEST: %d files, then %d", len(before), len(after))
			}
			if _, err := compress(append([]string{"--part", "1/3"}, flags...)...); err != nil {
				t.Fatal(err)
			}
			sum, err := compress("--finish")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(sum, "job: 3 parts") {
				t.Errorf("the job's summary:\n%s", sum)
			}
			got, want := files(t, filepath.Join(tmp, "parts.zarr")), files(t, one)
			for name, w := range want {
				if got[name] != w {
					t.Errorf("%s differs from one process's (%d bytes, want %d)", name, len(got[name]), len(w))
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("%s: not written by one process", name)
				}
			}
			if _, err := compress("--finish"); err != nil {
				t.Errorf("--finish of a finished job: %v", err)
			}
		})
	}
}

// TestCompressShardWritesV3: --shard with --format keep writes a v2 source
// as sharded v3 (it had been written as plain v2, the flag ignored), and
// says so; with --format v2 it is bad usage.
func TestCompressShardWritesV3(t *testing.T) {
	src := oneArrayStore(t)
	dest := filepath.Join(t.TempDir(), "out.zarr")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"compress", "--progress", "none", "--shard", "2x1", src, dest}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	b, err := os.ReadFile(filepath.Join(dest, "a", "zarr.json"))
	if err != nil {
		t.Fatalf("no v3 array written: %v", err)
	}
	enc, err := zarr.NewEncoding(map[string][]byte{zarr.MetadataFile: b})
	if err != nil || enc.Array().Shard() == nil {
		t.Fatalf("a: %v, sharded %v", err, err == nil && enc.Array().Shard() != nil)
	}
	if !strings.Contains(errOut.String(), "--shard writes Zarr v3") || !strings.Contains(out.String(), "v3 sharded") {
		t.Errorf("the run does not say the v2 array became v3:\n%s\n%s", errOut.String(), out.String())
	}
	err = run(context.Background(), []string{"compress", "--format", "v2", "--shard", "2x1", src, filepath.Join(t.TempDir(), "x")}, &out, &errOut)
	if u := (*usageError)(nil); !errors.As(err, &u) {
		t.Errorf("--format v2 --shard: %v, want bad usage", err)
	}
}

// TestCompressFlagsFitSource: --chunks and --shard shapes for a rank no
// array has, and a filter that suits no array, are bad usage, not a
// warning and a copy that ignores them.
func TestCompressFlagsFitSource(t *testing.T) {
	src := oneArrayStore(t) // one 2-d <u2 array
	for _, args := range [][]string{
		{"--chunks", "10x10x10"},
		{"--shard", "2x2x2"},
		{"--codec", "delta,zstd"}, // suits <u2: not refused
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append(append([]string{"compress", "--progress", "none"}, args...), src, filepath.Join(t.TempDir(), "out")), &out, &errOut)
		u := (*usageError)(nil)
		if refused := errors.As(err, &u); refused != (args[0] != "--codec") {
			t.Errorf("compress %v: %v, refused as bad usage: %v\n%s", args, err, refused, errOut.String())
		}
	}
	floats := t.TempDir()
	storeWriter(t, floats)("f/.zarray", `{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f4", "compressor": null, "fill_value": 0, "order": "C", "filters": null}`)
	err := run(context.Background(), []string{"compress", "--codec", "delta,zstd", floats, filepath.Join(t.TempDir(), "out")}, io.Discard, io.Discard)
	if u := (*usageError)(nil); !errors.As(err, &u) || !strings.Contains(err.Error(), "no array of SOURCE is one") {
		t.Errorf("delta on a store of floats only: %v, want bad usage", err)
	}
}

// TestCompressREADMEDelta runs docs/compress.md's example (once the
// README's) as written, in a directory holding in.zarr, a store that
// mixes floats and integers: delta applies to the integer array, the
// float array is written without it, and both the log and the summary say
// so; every chunk reads back.
func TestCompressREADMEDelta(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	write := storeWriter(t, "in.zarr")
	write(".zgroup", `{"zarr_format": 2}`)
	write("temp/.zarray", `{"zarr_format": 2, "shape": [4, 8, 8], "chunks": [2, 4, 4], "dtype": "<f4", "compressor": null, "fill_value": 0, "order": "C", "filters": null}`)
	write("count/.zarray", `{"zarr_format": 2, "shape": [20], "chunks": [10], "dtype": "<i4", "compressor": null, "fill_value": 0, "order": "C", "filters": null}`)
	temp := make([]byte, 2*4*4*4)
	for i := range temp {
		temp[i] = byte(i*7 + 1)
	}
	for _, k := range []string{"0.0.0", "0.0.1", "0.1.0", "0.1.1", "1.0.0", "1.0.1", "1.1.0", "1.1.1"} {
		write("temp/"+k, string(temp))
	}
	count := make([]byte, 40)
	for i := range 10 {
		count[4*i] = byte(100 + 3*i)
	}
	write("count/0", string(count))
	write("count/1", string(count))
	var out, errOut bytes.Buffer
	// docs/compress.md: zfuse compress --chunks 24x256x256 --codec delta,blosc:zstd:5:bitshuffle in.zarr out.zarr
	args := strings.Fields("compress --chunks 24x256x256 --codec delta,blosc:zstd:5:bitshuffle in.zarr out.zarr")
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("zfuse %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	filters := func(array string) string {
		var m struct {
			Filters json.RawMessage `json:"filters"`
		}
		json.Unmarshal(testutil.Must(os.ReadFile(filepath.Join("out.zarr", array, ".zarray"))), &m)
		return string(m.Filters)
	}
	if f := filters("count"); !strings.Contains(f, `"delta"`) {
		t.Errorf("count (<i4) filters %s, want delta", f)
	}
	if f := filters("temp"); f != "null" {
		t.Errorf("temp (<f4) filters %s, want none", f)
	}
	if !strings.Contains(errOut.String(), "does not suit this array") || !strings.Contains(out.String(), "temp: written without delta") {
		t.Errorf("the run does not say temp was written without delta:\n%s\n%s", errOut.String(), out.String())
	}
	// Every chunk reads back through the arrays' own decoders.
	for _, array := range []string{"count", "temp"} {
		files := map[string][]byte{zarr.ArrayFile: testutil.Must(os.ReadFile(filepath.Join("out.zarr", array, ".zarray")))}
		enc, err := zarr.NewEncoding(files)
		if err != nil {
			t.Fatal(err)
		}
		d := enc.Array()
		key := d.ChunkKey(make([]int, len(d.Shape)))
		got, err := d.DecodeChunk(make([]byte, 0, d.ChunkLen()), testutil.Must(os.ReadFile(filepath.Join("out.zarr", array, key))))
		if err != nil {
			t.Fatalf("%s/%s: %v", array, key, err)
		}
		// --chunks is for rank 3: count keeps its chunks; temp's first
		// chunk begins with the first row of the first source chunk.
		want := count
		if array == "temp" {
			want = temp[:16]
		}
		if !bytes.Equal(got[:len(want)], want) {
			t.Errorf("%s/%s reads back %v, want %v", array, key, got[:len(want)], want)
		}
	}
}

// oneArrayStore writes a store holding a: 6x5 <u2 in chunks of 3x5.
func oneArrayStore(t *testing.T) string {
	src := t.TempDir()
	write := storeWriter(t, src)
	write(".zgroup", `{"zarr_format": 2}`)
	write("a/.zarray", `{"zarr_format": 2, "shape": [6, 5], "chunks": [3, 5], "dtype": "<u2", "compressor": null, "fill_value": 0, "order": "C", "filters": null}`)
	write("a/0.0", strings.Repeat("\x01\x00", 15))
	write("a/1.0", strings.Repeat("\x02\x00", 15))
	return src
}
