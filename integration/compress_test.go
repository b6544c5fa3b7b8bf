package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

// zfuse compress, checked by other implementations: zarr-python 2.13 and
// xarray read the v2 stores it writes, zarrita the v3 ones (sharded and
// not), and a zfuse mount both, equal to the source element by element;
// stores from ../shared/conformance round-trip; a SIGKILLed run resumes to
// a complete store; a DEST that would lose data is refused before anything
// is written.

// compressStore runs zfuse compress ARGS... SOURCE DEST and returns its
// summary (stdout); it fails the test when the command fails.
func compressStore(t testing.TB, src, dest string, args ...string) string {
	t.Helper()
	needMount(t) // builds the binary; compress itself needs no FUSE
	out, errOut, err := run(append(append([]string{"compress", "--progress", "none"}, args...), src, dest)...)
	if err != nil {
		t.Fatalf("zfuse compress %v %s %s: %v\n%s", args, src, dest, err, errOut)
	}
	if bytes.Contains(errOut, []byte("DATA RACE")) {
		t.Fatalf("the race detector fired:\n%s", errOut)
	}
	return string(out)
}

// TestCompressZarrPython compresses the zarr-python fixture store (every
// compressor, filter and dtype zfuse decodes, groups, F order, both
// separators, missing chunks, NaN fill, an object array, consolidated
// metadata) with several codecs and chunk shapes, and checks with
// zarr-python 2.13 that every array reads the same from the result, with
// the new codec; xarray reads the compressed xarray store identically; and
// a zfuse mount of the result serves what zarr-python reads from the
// original.
func TestCompressZarrPython(t *testing.T) {
	dir := fixtures(t)
	orig := filepath.Join(dir, "comp.zarr")
	tests := []struct {
		name  string
		args  []string
		codec string
	}{
		{"default", nil, "blosc"},
		{"rechunked lz4", []string{"--chunks", "7x5", "--codec", "lz4"}, "lz4"},
		{"bitshuffle zlib verify", []string{"--codec", "blosc:zlib:3:bitshuffle", "--verify", "--workers", "3"}, "blosc"},
		{"shuffle gzip whole axes", []string{"--codec", "shuffle,gzip:1", "--chunks", "-1x4"}, "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "out.zarr")
			sum := compressStore(t, orig, dest, tt.args...)
			if !strings.Contains(sum, "copied as stored") || !strings.Contains(sum, "total") {
				t.Errorf("summary:\n%s", sum)
			}
			pyChecks(t, "compress_check.py", "same", orig, dest, tt.codec)
			if tt.name == "default" {
				m := mount(t, dest)
				checkPy(t, "read", orig, m.Dir, filepath.Join(dir, "manifest.json"))
			}
		})
	}
	t.Run("xarray", func(t *testing.T) {
		src := filepath.Join(dir, "xr_consolidated.zarr")
		dest := filepath.Join(t.TempDir(), "xr.zarr")
		compressStore(t, src, dest, "--codec", "blosc:lz4:9:shuffle")
		pyChecks(t, "compress_check.py", "xarray", src, dest)
	})
}

// v3Numeric are the arrays of the fixture store whose dtype zarrita 0.7.5
// reads (no float16, complex, datetimes, strings, structured).
var v3Numeric = []string{
	"blosc/lz4.shuffle", "blosc/lz4.shuffle.f8", "blosc/zstd.bitshuffle.u1", "compressors/zstd",
	"filters/delta", "layout/1d", "layout/f_order", "layout/f_order.3d", "layout/missing", "layout/nan_fill",
	"layout/slash.3d.F", "dtypes/u1", "deep/a/b/c/nested",
}

// TestCompressV3 converts the zarr-python fixture store to Zarr v3,
// unsharded and sharded (rechunked into shards of 2x2 inner chunks), and
// reads it back with zarrita (the numeric arrays) and with zarr-python
// 2.13 through a zfuse mount's --as-v2 view (every array): both equal the
// original.
func TestCompressV3(t *testing.T) {
	dir := fixtures(t)
	orig := filepath.Join(dir, "comp.zarr")
	wantFile := filepath.Join(t.TempDir(), "want.json")
	pyChecks(t, "compress_check.py", append([]string{"values", orig, wantFile}, v3Numeric...)...)
	var want map[string]testutil.Values
	if err := json.Unmarshal(testutil.Must(os.ReadFile(wantFile)), &want); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
	}{
		{"sharded zstd", []string{"--format", "v3", "--chunks", "5x4", "--shard", "2x2", "--codec", "zstd:1"}},
		{"sharded by size blosc", []string{"--format", "v3", "--shard", "2KiB", "--codec", "blosc:lz4:5:bitshuffle"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "v3.zarr")
			compressStore(t, orig, dest, tt.args...)
			var doc struct {
				Format int `json:"zarr_format"`
				Cons   any `json:"consolidated_metadata"`
			}
			if err := json.Unmarshal(testutil.Must(os.ReadFile(filepath.Join(dest, "zarr.json"))), &doc); err != nil || doc.Format != 3 || doc.Cons == nil {
				t.Fatalf("root zarr.json: format %d, consolidated %v, %v", doc.Format, doc.Cons, err)
			}
			sameValues(t, "zarrita", zarritaRead(t, dest, v3Numeric), want)
			m := mount(t, dest, "--as-v2")
			pyChecks(t, "compress_check.py", "same", orig, m.Dir, "", "nullfill")
		})
	}
}

// TestCompressConformance: stores nobody here wrote round-trip.
// zarr-python 2.18.7's format fixtures (every dtype, C and F order, the
// legacy nested layout) and zarrita.js's v2 store are compressed and read
// by zarr-python 2.13; zarrita.js's v3 store (zarr-python 3, sharded
// arrays among them) is compressed as v3 keeping its shards, and as v2,
// and both read to the values its MANIFEST lists, by zarrita and by
// zarr-python.
func TestCompressConformance(t *testing.T) {
	t.Run("zarr-python-2.18.7", func(t *testing.T) {
		src := conformance(t, "zarr-python-2.18.7/fixture")
		dest := filepath.Join(t.TempDir(), "zp.zarr")
		compressStore(t, src, dest, "--codec", "zstd:1")
		pyChecks(t, "compress_check.py", "same", src, dest, "zstd")
	})
	t.Run("zarrita.js v2", func(t *testing.T) {
		// Written by zarr-python 2.18: its zstd configurations carry
		// "checksum", which numcodecs 0.11 refuses, so the expected values
		// are read through a zfuse mount of the source.
		src := conformance(t, "zarrita.js/fixtures/v2/data.zarr")
		dest := filepath.Join(t.TempDir(), "zv2.zarr")
		compressStore(t, src, dest, "--codec", "blosc:blosclz:5:shuffle")
		m := mount(t, src)
		pyChecks(t, "compress_check.py", "same", m.Dir, dest, "blosc")
	})
	t.Run("zarrita.js v3", func(t *testing.T) {
		src := conformance(t, "zarrita.js/fixtures/v3/data.zarr")
		known := maps.Clone(testutil.ZarritaV3)
		delete(known, "1d.contiguous.f2.le") // zarrita 0.7.5 has no float16
		dest := filepath.Join(t.TempDir(), "zv3.zarr")
		compressStore(t, src, dest, "--codec", "lz4") // numcodecs.lz4 in v3
		sharded := 0
		for p := range known {
			b := testutil.Must(os.ReadFile(filepath.Join(dest, p, "zarr.json")))
			if bytes.Contains(b, []byte("sharding_indexed")) {
				sharded++
			}
		}
		if sharded < 10 {
			t.Errorf("%d of the arrays kept their sharding", sharded)
		}
		sameValues(t, "zarrita", zarritaRead(t, dest, slices.Collect(maps.Keys(known))), known)

		v2 := filepath.Join(t.TempDir(), "zv2.zarr")
		compressStore(t, src, v2, "--format", "v2", "--codec", "zstd:1")
		got := filepath.Join(t.TempDir(), "got.json")
		pyChecks(t, "compress_check.py", append([]string{"values", v2, got}, slices.Collect(maps.Keys(known))...)...)
		var vals map[string]testutil.Values
		if err := json.Unmarshal(testutil.Must(os.ReadFile(got)), &vals); err != nil {
			t.Fatal(err)
		}
		sameValues(t, "zarr-python on the v2 copy", vals, known)
	})
}

// bigStore writes a v2 store of one float32 array in many small chunks,
// for runs that must last long enough to be interrupted.
func bigStore(t testing.TB) string {
	t.Helper()
	needPython(t)
	src := filepath.Join(t.TempDir(), "big.zarr")
	script := `import sys, numpy as np, zarr, numcodecs
a = zarr.open(sys.argv[1], mode="w", shape=(256, 512, 64), chunks=(8, 64, 64), dtype="<f4", compressor=numcodecs.Zstd(1))
a[:] = (np.arange(256*512*64, dtype="f4").reshape(256, 512, 64) % 977) + np.random.default_rng(0).random((256, 512, 64), dtype="f4")
a.attrs["units"] = "K"`
	if out, err := exec.Command(testutil.Python, "-c", script, src).CombinedOutput(); err != nil {
		t.Fatalf("writing the store: %v\n%s", err, out)
	}
	return src
}

// TestCompressResume kills zfuse compress with SIGKILL while it writes,
// checks that DEST holds only whole chunk files and no metadata for the
// unfinished array, then runs the same command with --resume: it keeps the
// chunks written and completes a store equal to the source.
func TestCompressResume(t *testing.T) {
	needMount(t)
	src := bigStore(t)
	dest := filepath.Join(t.TempDir(), "out.zarr")
	killCompress(t, src, dest, 40, "--codec", "blosc:zstd:3:shuffle")
	if _, err := os.Stat(filepath.Join(dest, ".zarray")); err == nil {
		t.Fatal("the killed run wrote the array's metadata before its chunks")
	}
	pyChecks(t, "compress_check.py", "whole", dest)

	// The same command again, without --resume, is refused; with it, it
	// completes.
	if _, errOut, err := run("compress", "--progress", "none", "--codec", "blosc:zstd:3:shuffle", src, dest); err == nil || !strings.Contains(string(errOut), "--resume") {
		t.Fatalf("a rerun without --resume: %v\n%s", err, errOut)
	}
	sum := compressStore(t, src, dest, "--resume", "--verify", "--codec", "blosc:zstd:3:shuffle")
	if !keptSome(sum) {
		t.Errorf("the resumed run kept no chunk:\n%s", sum)
	}
	pyChecks(t, "compress_check.py", "same", src, dest, "blosc")
	var leftovers []string
	filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(p, ".zfuse-tmp") || d.Name() == ".zfuse-compress.json") {
			leftovers = append(leftovers, p)
		}
		return err
	})
	if len(leftovers) > 0 {
		t.Errorf("left behind: %v", leftovers)
	}
	// A resumed run with another codec is refused, naming the difference,
	// and writes nothing.
	before := testutil.Must(os.ReadFile(filepath.Join(dest, ".zarray")))
	if _, errOut, err := run("compress", "--progress", "none", "--resume", "--codec", "lz4", src, dest); err == nil || !strings.Contains(string(errOut), "compressor") {
		t.Errorf("resuming a finished store with another codec: %v\n%s", err, errOut)
	}
	if after := testutil.Must(os.ReadFile(filepath.Join(dest, ".zarray"))); !bytes.Equal(before, after) {
		t.Errorf("the refused run rewrote .zarray: %s", after)
	}
	pyChecks(t, "compress_check.py", "same", src, dest, "blosc")
}

// TestCompressResumeSettings: --resume without the flags takes the
// interrupted run's settings from its record (it once rewrote every chunk
// with the defaults), and a flag given with another value is refused with
// both values named.
func TestCompressResumeSettings(t *testing.T) {
	needMount(t)
	src := bigStore(t)
	dest := filepath.Join(t.TempDir(), "out.zarr")
	killCompress(t, src, dest, 36, "--codec", "gzip:9")
	_, errOut, err := run("compress", "--progress", "none", "--resume", "--codec", "zstd", src, dest)
	if err == nil || !strings.Contains(string(errOut), "--codec gzip:9") || !strings.Contains(string(errOut), "--codec zstd") {
		t.Errorf("resuming with another --codec: %v\n%s", err, errOut)
	}
	out, errOut, err := run("compress", "--progress", "none", "--resume", src, dest)
	if err != nil {
		t.Fatalf("compress --resume SRC DEST: %v\n%s", err, errOut)
	}
	if !keptSome(string(out)) {
		t.Errorf("the resumed run kept no chunk:\n%s", out)
	}
	if !strings.Contains(string(errOut), "codec=gzip:9") {
		t.Errorf("the resumed run did not say which settings it took:\n%s", errOut)
	}
	var za struct {
		Compressor map[string]any `json:"compressor"`
	}
	if err := json.Unmarshal(testutil.Must(os.ReadFile(filepath.Join(dest, ".zarray"))), &za); err != nil {
		t.Fatal(err)
	}
	if za.Compressor["id"] != "gzip" || za.Compressor["level"] != 9.0 {
		t.Errorf("the resumed store's compressor: %v, want gzip level 9", za.Compressor)
	}
	pyChecks(t, "compress_check.py", "same", src, dest, "gzip")
}

// killCompress runs zfuse compress SRC DEST with args and SIGKILLs it once
// it has written n chunks; it fails the test if the run ended first.
func killCompress(t *testing.T, src, dest string, n int, args ...string) {
	t.Helper()
	cmd := exec.Command(zfuse, append(append([]string{"compress", "--log-level", "debug", "--progress", "none", "--workers", "1"}, args...), src, dest)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	wrote := 0
	for wrote < n && sc.Scan() {
		if strings.Contains(sc.Text(), "msg=wrote") {
			wrote++
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err == nil || wrote < n {
		t.Fatalf("compress finished (%v) before it was killed, after %d chunks", err, wrote)
	}
}

// keptSome reports whether the summary's total row kept chunks.
func keptSome(summary string) bool {
	for _, line := range strings.Split(summary, "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[0] == "total" {
			return f[3] != "0"
		}
	}
	return false
}

// TestCompressRefuses: a DEST that would lose data or cannot be written,
// and settings that cannot be written, are refused with a clear message,
// and nothing is written.
func TestCompressRefuses(t *testing.T) {
	needMount(t)
	src := conformance(t, "zarrita.js/fixtures/v2/data.zarr")
	tmp := t.TempDir()
	own := filepath.Join(tmp, "own.zarr")
	copyTree(t, src, own)
	full := filepath.Join(tmp, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "notes.txt"), []byte("mine"), 0o644)
	floats := filepath.Join(tmp, "floats.zarr") // one float64 array
	copyTree(t, filepath.Join(src, "1d.contiguous.f8"), floats)
	file := filepath.Join(tmp, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	ro := filepath.Join(tmp, "ro")
	os.MkdirAll(ro, 0o755)
	roOK := exec.Command("mount", "--bind", ro, ro).Run() == nil && exec.Command("mount", "-o", "remount,bind,ro", ro).Run() == nil
	if roOK {
		t.Cleanup(func() { exec.Command("umount", ro).Run() })
	}
	tests := []struct {
		name, src, dest string
		args            []string
		why             string
	}{
		{"dest inside source", own, filepath.Join(own, "copy"), nil, "inside SOURCE"},
		{"dest is source", own, own, nil, "inside SOURCE"},
		{"dest not empty", src, full, nil, "not empty"},
		{"resume into a dir that is no store", src, full, []string{"--resume"}, "neither"},
		{"dest is a file", src, file, nil, "is a file"},
		{"dest under a file", src, filepath.Join(file, "x"), nil, "is a file"},
		{"v2 cannot shard", src, filepath.Join(tmp, "new1"), []string{"--format", "v2", "--shard", "2x2"}, "no sharding"},
		{"unknown codec", src, filepath.Join(tmp, "new2"), []string{"--codec", "brotli"}, "unknown codec"},
		{"compressor not last", src, filepath.Join(tmp, "new3"), []string{"--codec", "zstd,delta"}, "must come last"},
		{"bad blosc shuffle", src, filepath.Join(tmp, "new4"), []string{"--codec", "blosc:lz4:5:twice"}, "shuffle"},
		{"no gpu encoder", src, filepath.Join(tmp, "new5"), []string{"--encoder", "gpu"}, "no GPU encoder"},
		// delta applies to the integer arrays of a store and leaves the
		// others without it; a store with none is refused.
		{"delta on a store of floats", floats, filepath.Join(tmp, "new6"), []string{"--codec", "delta,zstd"}, "delta encodes integers stored as themselves, and no array of SOURCE is one"},
		{"chunks for no array's rank", src, filepath.Join(tmp, "new7"), []string{"--chunks", "2x2x2x2"}, "SOURCE has no array of rank 4"},
	}
	if roOK {
		tests = append(tests, struct {
			name, src, dest string
			args            []string
			why             string
		}{"read-only dest", src, filepath.Join(ro, "out"), nil, "cannot create"})
	} else {
		testutil.Need(t, "root, to make a read-only bind mount", false)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := listing(t, tmp)
			_, errOut, err := run(append(append([]string{"compress", "--progress", "none"}, tt.args...), tt.src, tt.dest)...)
			if err == nil || !strings.Contains(string(errOut), tt.why) {
				t.Fatalf("compress %s: %v, want an error saying %q:\n%s", tt.dest, err, tt.why, errOut)
			}
			if after := listing(t, tmp); !slices.Equal(before, after) {
				t.Errorf("files changed: %v -> %v", before, after)
			}
		})
	}
}

// listing lists every path under dir.
func listing(t testing.TB, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestCompressCorruptSource: a source chunk that does not decode stops the
// run with an error naming it, and the array gets no metadata in DEST.
func TestCompressCorruptSource(t *testing.T) {
	dir := fixtures(t)
	src := filepath.Join(t.TempDir(), "comp.zarr")
	copyTree(t, filepath.Join(dir, "comp.zarr"), src)
	chunk := filepath.Join(src, "compressors", "zstd", "1.1")
	b := testutil.Must(os.ReadFile(chunk))
	b[len(b)/2] ^= 0xFF
	b = b[:len(b)-3]
	if err := os.WriteFile(chunk, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "out.zarr")
	start := time.Now()
	_, errOut, err := run("compress", "--progress", "none", src, dest)
	if err == nil || !strings.Contains(string(errOut), "compressors/zstd/1.1") {
		t.Fatalf("compress of a corrupt chunk: %v\n%s", err, errOut)
	}
	if _, err := os.Stat(filepath.Join(dest, "compressors", "zstd", ".zarray")); err == nil {
		t.Error("the array with the corrupt chunk got metadata")
	}
	t.Logf("failed in %v: %s", time.Since(start).Round(time.Millisecond), bytes.TrimSpace(errOut))
}

// TestCompressRemote: SOURCE over HTTP (nginx; the tree comes from the
// consolidated metadata) and S3 (versitygw) compresses to the same store
// as the local directory; the object array, copied as stored, is found by
// its chunk grid where the store cannot list.
func TestCompressRemote(t *testing.T) {
	fx := fixtures(t)
	orig := filepath.Join(fx, "comp.zarr")
	t.Run("http", func(t *testing.T) {
		_, base := startNginx(t, fx)
		dest := filepath.Join(t.TempDir(), "http.zarr")
		compressStore(t, base+"/comp.zarr", dest, "--codec", "zstd:1")
		pyChecks(t, "compress_check.py", "same", orig, dest, "zstd")
	})
	t.Run("s3", func(t *testing.T) {
		root := t.TempDir()
		copyTree(t, orig, filepath.Join(root, "fixtures", "comp.zarr"))
		_, endpoint := startVersitygw(t, root)
		s3Setenv(t)
		dest := filepath.Join(t.TempDir(), "s3.zarr")
		compressStore(t, "s3://fixtures/comp.zarr", dest, "--s3-endpoint", endpoint, "--s3-path-style", "--codec", "gzip:1")
		pyChecks(t, "compress_check.py", "same", orig, dest, "gzip")
	})
}
