package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Zarr v3 through the mount: the zarrita.js v3 conformance store (written by
// zarr-python 3, sharded arrays included) and stores that zarrita (npm,
// an independent v3 implementation) writes at test time, read through the
// mount by numpy (np.fromfile on the presented chunk files), by zarrita,
// and through --as-v2 by zarr-python 2.13, which knows only v2.

const zarritaVersion = "0.7.5"

// v3Value is an array's known values: its shape and data in C order.
type v3Value struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

func arange(from, to int) []float64 {
	var v []float64
	for i := from; i < to; i++ {
		v = append(v, float64(i))
	}
	return v
}

// conformanceV3 is what MANIFEST §5 says the v3 fixture arrays hold, for
// every array that can be presented raw (the string arrays cannot).
var conformanceV3 = map[string]v3Value{
	"1d.contiguous.gzip.i2":                   {[]int{4}, []float64{1, 2, 3, 4}},
	"1d.contiguous.blosc.i2":                  {[]int{4}, []float64{1, 2, 3, 4}},
	"1d.contiguous.raw.i2":                    {[]int{4}, []float64{1, 2, 3, 4}},
	"1d.contiguous.i4":                        {[]int{4}, []float64{1, 2, 3, 4}},
	"1d.contiguous.u1":                        {[]int{4}, []float64{255, 0, 255, 0}},
	"1d.contiguous.f2.le":                     {[]int{4}, []float64{-1000.5, 0, 1000.5, 0}},
	"1d.contiguous.f4.le":                     {[]int{4}, []float64{-1000.5, 0, 1000.5, 0}},
	"1d.contiguous.f4.be":                     {[]int{4}, []float64{-1000.5, 0, 1000.5, 0}},
	"1d.contiguous.f8":                        {[]int{4}, []float64{1.5, 2.5, 3.5, 4.5}},
	"1d.contiguous.b1":                        {[]int{4}, []float64{1, 0, 1, 0}},
	"1d.chunked.i2":                           {[]int{4}, []float64{1, 2, 3, 4}},
	"1d.chunked.ragged.i2":                    {[]int{5}, []float64{1, 2, 3, 4, 5}},
	"2d.contiguous.i2":                        {[]int{2, 2}, []float64{1, 2, 3, 4}},
	"2d.chunked.i2":                           {[]int{2, 2}, []float64{1, 2, 3, 4}},
	"2d.chunked.ragged.i2":                    {[]int{3, 3}, arange(1, 10)},
	"3d.contiguous.i2":                        {[]int{3, 3, 3}, arange(0, 27)},
	"3d.chunked.i2":                           {[]int{3, 3, 3}, arange(0, 27)},
	"3d.chunked.mixed.i2.C":                   {[]int{3, 3, 3}, arange(0, 27)},
	"3d.chunked.mixed.i2.F":                   {[]int{3, 3, 3}, arange(0, 27)},
	"1d.contiguous.compressed.sharded.i2":     {[]int{4}, []float64{1, 2, 3, 4}},
	"1d.contiguous.compressed.sharded.i4":     {[]int{4}, []float64{1, 2, 3, 4}},
	"1d.contiguous.compressed.sharded.u1":     {[]int{4}, []float64{255, 0, 255, 0}},
	"1d.contiguous.compressed.sharded.f4":     {[]int{4}, []float64{-1000.5, 0, 1000.5, 0}},
	"1d.contiguous.compressed.sharded.f8":     {[]int{4}, []float64{1.5, 2.5, 3.5, 4.5}},
	"1d.contiguous.compressed.sharded.b1":     {[]int{4}, []float64{1, 0, 1, 0}},
	"1d.chunked.compressed.sharded.i2":        {[]int{4}, []float64{1, 2, 3, 4}},
	"1d.chunked.filled.compressed.sharded.i2": {[]int{4}, []float64{1, 2, 0, 0}},
	"2d.contiguous.compressed.sharded.i2":     {[]int{2, 2}, []float64{1, 2, 3, 4}},
	"2d.chunked.compressed.sharded.filled.i2": {[]int{4, 4}, arange(0, 16)},
	"2d.chunked.compressed.sharded.i2":        {[]int{4, 4}, arange(1, 17)},
	"2d.chunked.ragged.compressed.sharded.i2": {[]int{3, 3}, arange(1, 10)},
	"3d.contiguous.compressed.sharded.i2":     {[]int{3, 3, 3}, arange(0, 27)},
	"3d.chunked.compressed.sharded.i2":        {[]int{4, 4, 4}, arange(0, 64)},
	"3d.chunked.mixed.compressed.sharded.i2":  {[]int{3, 3, 3}, arange(0, 27)},
	"1d.contiguous.delta.i4":                  {[]int{4}, []float64{1, 2, 3, 4}},
	"3d.contiguous.delta.i4.mixed":            {[]int{3, 3, 3}, arange(0, 27)},
	"consolidated/1d.chunked.i2":              {[]int{4}, []float64{1, 2, 3, 4}},
	"consolidated/2d.contiguous.i2":           {[]int{2, 2}, []float64{1, 2, 3, 4}},
	"consolidated/nested/1d.i2":               {[]int{4}, []float64{10, 20, 30, 40}},
}

// conformanceV3Strings are the fixture's string arrays: passed through as
// v3, not shown under --as-v2.
var conformanceV3Strings = []string{"1d.chunked.string.vlen", "1d.contiguous.string.compressed", "1d.contiguous.string.vlen",
	"1d.string.empty", "1d.string.unicode", "2d.chunked.string.vlen"}

// writeWant writes known values as v3check.py's WANT file.
func writeWant(t testing.TB, want map[string]v3Value) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "want.json")
	if err := os.WriteFile(p, must(json.Marshal(want)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// v3Py runs testdata/v3check.py and turns each line it prints into a
// subtest of t that fails with the check's error.
func v3Py(t *testing.T, args ...string) {
	t.Helper()
	pyChecks(t, "v3check.py", args...)
}

// zarritaNeed skips a test that needs node or zarrita, and fails it in CI
// or where ZFUSE_REQUIRE_ZARRITA is set (as zarr's tests do).
func zarritaNeed(t testing.TB, what string, ok bool) {
	t.Helper()
	if !ok && os.Getenv("ZFUSE_REQUIRE_ZARRITA") != "" {
		t.Fatalf("%s required (ZFUSE_REQUIRE_ZARRITA is set)", what)
	}
	intNeed(t, what, ok)
}

var zarritaOnce struct {
	sync.Mutex
	dir string
}

// zarritaDir returns a directory whose node_modules holds zarrita@0.7.5:
// $ZFUSE_ZARRITA, or the user cache directory, where make deps installs
// it; it installs it there with npm when missing.
func zarritaDir(t testing.TB) string {
	t.Helper()
	zarritaOnce.Lock()
	defer zarritaOnce.Unlock()
	if zarritaOnce.dir != "" {
		return zarritaOnce.dir
	}
	_, errNode := exec.LookPath("node")
	_, errNpm := exec.LookPath("npm")
	zarritaNeed(t, "node and npm (Node.js 20)", errNode == nil && errNpm == nil)
	dir := os.Getenv("ZFUSE_ZARRITA")
	if dir == "" {
		cache, err := os.UserCacheDir()
		zarritaNeed(t, "a user cache directory", err == nil)
		dir = filepath.Join(cache, "zfuse", "zarrita-"+zarritaVersion)
	}
	var meta struct{ Version string }
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "zarrita", "package.json"))
	if err != nil || json.Unmarshal(b, &meta) != nil || meta.Version != zarritaVersion {
		os.MkdirAll(dir, 0o755)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "zarrita@"+zarritaVersion).CombinedOutput()
		zarritaNeed(t, "zarrita@"+zarritaVersion+" (npm install: "+string(bytes.TrimSpace(out))+")", err == nil)
	}
	zarritaOnce.dir = dir
	return dir
}

// node runs testdata/zarrita/SCRIPT with args and returns its stdout. The
// script runs from a directory whose node_modules is zarrita's (ES modules
// resolve packages from the script's own directory).
func node(t testing.TB, script string, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(zarritaDir(t), "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src := must(os.ReadFile(filepath.Join(repo, "integration", "testdata", "zarrita", script)))
	if err := os.WriteFile(filepath.Join(dir, script), src, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(dir, script)}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.Bytes())
	}
	return out
}

// zarritaRead reads the arrays at paths under root with zarrita.
func zarritaRead(t testing.TB, root string, paths []string) map[string]v3Value {
	t.Helper()
	got := map[string]v3Value{}
	sc := bufio.NewScanner(bytes.NewReader(node(t, "read.mjs", append([]string{root}, paths...)...)))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var r struct {
			Path  string
			Error string
			v3Value
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("read.mjs printed %q: %v", sc.Text(), err)
		}
		if r.Error != "" {
			t.Errorf("zarrita reading %s in %s: %s", r.Path, root, r.Error)
			continue
		}
		got[r.Path] = r.v3Value
	}
	return got
}

// sameValues compares what two readers got, array by array.
func sameValues(t *testing.T, what string, got, want map[string]v3Value) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[p]
		switch {
		case !ok:
			t.Errorf("%s: %s not read", what, p)
		case !slices.Equal(g.Shape, want[p].Shape) || !slices.Equal(g.Data, want[p].Data):
			t.Errorf("%s: %s = %v %v\nwant %v %v", what, p, g.Shape, head(g.Data), want[p].Shape, head(want[p].Data))
		}
	}
}

func head(v []float64) []float64 { return v[:min(len(v), 12)] }

// TestV3Conformance: the zarrita.js v3 conformance store (zarr-python 3,
// sharded arrays, inline consolidated metadata) through the mount holds
// the values MANIFEST §5 lists: assembled from the chunk files with
// np.fromfile, read by zarrita, and through --as-v2 by zarr-python 2.13
// (every raw-presentable array and the consolidated group). String arrays
// are passed through as v3 and not shown under --as-v2.
func TestV3Conformance(t *testing.T) {
	src := conformance(t, "zarrita.js/fixtures/v3/data.zarr")
	want := writeWant(t, conformanceV3)
	t.Run("v3", func(t *testing.T) {
		m := mount(t, src)
		v3Py(t, "fromfile", m.Dir, want)
		for _, p := range conformanceV3Strings {
			got, err := os.ReadFile(filepath.Join(m.Dir, p, "zarr.json"))
			if err != nil || !bytes.Equal(got, must(os.ReadFile(filepath.Join(src, p, "zarr.json")))) {
				t.Errorf("%s/zarr.json: %v: not passed through as stored", p, err)
			}
		}
		t.Run("zarrita", func(t *testing.T) {
			known := maps.Clone(conformanceV3)
			delete(known, "1d.contiguous.f2.le") // zarrita 0.7.5 has no float16
			sameValues(t, "zarrita through the mount", zarritaRead(t, m.Dir, slices.Collect(maps.Keys(known))), known)
		})
	})
	t.Run("as-v2", func(t *testing.T) {
		m := mount(t, src, "--as-v2")
		v3Py(t, "zarr2", m.Dir, want, "consolidated")
		for _, p := range conformanceV3Strings {
			if _, err := os.Stat(filepath.Join(m.Dir, p)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: %v; want it not shown under --as-v2", p, err)
			}
			if !m.Stderr.waitFor(10*time.Second, holding("key="+p+" ")) {
				t.Errorf("no log line says %s is not shown:\n%s", p, m.Stderr)
			}
		}
	})
}

// TestV3Zarrita: stores zarrita writes at test time (bytes in both byte
// orders, transpose, zstd, blosc with each shuffle, numcodecs.lz4, edge and
// missing chunks, a nested group) read through the mount equal to what
// zarrita reads from the originals: by zarrita through the mount, by
// np.fromfile on the presented chunk files, and by zarr-python 2.13 through
// --as-v2.
func TestV3Zarrita(t *testing.T) {
	needMount(t)
	src := filepath.Join(t.TempDir(), "zarrita.zarr")
	paths := strings.Fields(string(node(t, "write.mjs", src)))
	if len(paths) < 10 {
		t.Fatalf("write.mjs wrote %v", paths)
	}
	blosc := patchBloscShuffle(t, src)
	if blosc < 4 {
		t.Fatalf("%d blosc arrays patched, want 4 or more", blosc)
	}
	orig := zarritaRead(t, src, paths)
	if len(orig) != len(paths) {
		t.Fatalf("zarrita read %d of the %d arrays it wrote", len(orig), len(paths))
	}
	want := writeWant(t, orig)
	t.Run("v3", func(t *testing.T) {
		m := mount(t, src)
		sameValues(t, "zarrita through the mount", zarritaRead(t, m.Dir, paths), orig)
		v3Py(t, "fromfile", m.Dir, want)
	})
	t.Run("as-v2", func(t *testing.T) {
		m := mount(t, src, "--as-v2")
		v3Py(t, "zarr2", m.Dir, want)
	})
}

// patchBloscShuffle rewrites the numeric blosc "shuffle" that zarrita
// needs to write into the spec's string form, in every zarr.json under
// root, and returns how many arrays it changed.
func patchBloscShuffle(t testing.TB, root string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "zarr.json" {
			return err
		}
		var doc map[string]any
		if err := json.Unmarshal(must(os.ReadFile(p)), &doc); err != nil {
			return err
		}
		codecs, _ := doc["codecs"].([]any)
		changed := false
		for _, c := range codecs {
			c, _ := c.(map[string]any)
			conf, _ := c["configuration"].(map[string]any)
			if s, ok := conf["shuffle"].(float64); ok && c["name"] == "blosc" {
				conf["shuffle"] = []string{"noshuffle", "shuffle", "bitshuffle"}[int(s)]
				changed = true
			}
		}
		if !changed {
			return nil
		}
		n++
		return os.WriteFile(p, must(json.MarshalIndent(doc, "", "  ")), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestV3CorruptShard: a shard whose index crc32c is wrong gives EIO for its
// inner chunks only, with a log line naming the shard and the reason; the
// other shards' chunks read their values, and the mount stays up.
func TestV3CorruptShard(t *testing.T) {
	fixture := conformance(t, "zarrita.js/fixtures/v3/data.zarr")
	const array = "3d.chunked.compressed.sharded.i2" // 4x4x4 arange(64): shards 2x2x2 of 1x1x1
	src := filepath.Join(t.TempDir(), "store")
	copyTree(t, filepath.Join(fixture, array), filepath.Join(src, array))
	shard := filepath.Join(src, array, "c", "0", "1", "0")
	b := must(os.ReadFile(shard))
	b[len(b)-1] ^= 0xff // the index is at the end, its crc32c last
	if err := os.WriteFile(shard, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m := mount(t, src)
	for i := range 64 {
		x, y, z := i/16, i/4%4, i%4
		key := fmt.Sprintf("%s/c/%d/%d/%d", array, x, y, z)
		got, err := os.ReadFile(filepath.Join(m.Dir, key))
		switch {
		case x/2 == 0 && y/2 == 1 && z/2 == 0:
			if !errors.Is(err, syscall.EIO) {
				t.Errorf("%s (in the corrupt shard): %d bytes, %v; want EIO", key, len(got), err)
			}
		case i == 0: // the fill value: an empty entry, no file
			if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: %v, want ENOENT", key, err)
			}
		case err != nil || len(got) != 2 || int(binary.LittleEndian.Uint16(got)) != i:
			t.Errorf("%s: %x, %v; want %d", key, got, err, i)
		}
	}
	logged := func(l string) bool {
		return strings.Contains(l, "c/0/1/0") && strings.Contains(l, "checksum")
	}
	if !m.Stderr.waitFor(10*time.Second, logged) {
		t.Errorf("no log line names the corrupt shard and why:\n%s", m.Stderr)
	}
	if !isMounted(t, m.Dir) {
		t.Errorf("mount gone after a corrupt shard")
	}
}

// TestV3CatInfo: zfuse cat serves what the mount serves for v3 paths, with
// and without --as-v2; zfuse info lists every v3 array with its format,
// inner and shard chunk shapes, and says which --as-v2 does not show.
func TestV3CatInfo(t *testing.T) {
	src := conformance(t, "zarrita.js/fixtures/v3/data.zarr")
	for _, flags := range [][]string{nil, {"--as-v2"}} {
		m := mount(t, src, flags...)
		paths := []string{"zarr.json", "3d.chunked.compressed.sharded.i2/zarr.json", "3d.chunked.compressed.sharded.i2/c/1/2/3",
			"consolidated/zarr.json", "3d.chunked.mixed.i2.F/c/0/0/2"}
		if flags != nil {
			paths = []string{".zgroup", ".zattrs", "consolidated/.zmetadata", "3d.chunked.compressed.sharded.i2/.zarray",
				"3d.chunked.compressed.sharded.i2/1/2/3", "3d.chunked.mixed.i2.F/0/0/2"}
		}
		for _, p := range paths {
			want, err := os.ReadFile(filepath.Join(m.Dir, p))
			if err != nil {
				t.Errorf("%v %s through the mount: %v", flags, p, err)
				continue
			}
			got, stderr, err := run(append(append([]string{"cat"}, flags...), src, p)...)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("zfuse cat %v %s: %v %s: %q, the mount serves %q", flags, p, err, stderr, got, want)
			}
		}
		lines := infoLines(t, append(slices.Clone(flags), src)...)
		format := "v3"
		if flags != nil {
			format = "v3->v2"
		}
		for p := range conformanceV3 {
			if l := lines[p]; !strings.HasPrefix(l, p+" "+format+" ") || !strings.HasSuffix(l, " raw") {
				t.Errorf("zfuse info %v: %s: %q", flags, p, l)
			}
		}
		if l := lines["3d.chunked.compressed.sharded.i2"]; !strings.Contains(l, " 4x4x4 1x1x1 2x2x2 ") || !strings.Contains(l, "63 chunks") {
			t.Errorf("zfuse info %v: %q: want shape 4x4x4, inner chunks 1x1x1, shards 2x2x2, 63 chunks", flags, l)
		}
		for _, p := range conformanceV3Strings {
			how := "passed through"
			if flags != nil {
				how = "not shown (--as-v2)"
			}
			if l := lines[p]; !strings.Contains(l, how) {
				t.Errorf("zfuse info %v: %s: %q does not say %s", flags, p, l, how)
			}
		}
	}
}
