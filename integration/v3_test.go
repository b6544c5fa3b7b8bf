package integration

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

// Zarr v3 through the mount: the zarrita.js v3 conformance store (written by
// zarr-python 3, sharded arrays included) and stores that zarrita (npm,
// an independent v3 implementation) writes at test time, read through the
// mount by numpy (np.fromfile on the presented chunk files), by zarrita,
// and through --as-v2 by zarr-python 2.13, which knows only v2.

// conformanceV3Strings are the fixture's string arrays: passed through as
// v3, not shown under --as-v2.
var conformanceV3Strings = []string{"1d.chunked.string.vlen", "1d.contiguous.string.compressed", "1d.contiguous.string.vlen",
	"1d.string.empty", "1d.string.unicode", "2d.chunked.string.vlen"}

// writeWant writes known values as v3check.py's WANT file.
func writeWant(t testing.TB, want map[string]testutil.Values) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "want.json")
	if err := os.WriteFile(p, testutil.Must(json.Marshal(want)), 0o644); err != nil {
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

// node runs testdata/zarrita/SCRIPT with args and returns its stdout. The
// script runs from a directory whose node_modules is zarrita's (ES modules
// resolve packages from the script's own directory).
func node(t testing.TB, script string, args ...string) []byte {
	t.Helper()
	src := testutil.Must(os.ReadFile(filepath.Join(repo, "integration", "testdata", "zarrita", script)))
	return testutil.Node(t, script, src, args...)
}

// zarritaRead reads the arrays at paths under root with zarrita.
func zarritaRead(t testing.TB, root string, paths []string) map[string]testutil.Values {
	t.Helper()
	got := map[string]testutil.Values{}
	sc := bufio.NewScanner(bytes.NewReader(node(t, "read.mjs", append([]string{root}, paths...)...)))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var r struct {
			Path  string
			Error string
			testutil.Values
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("read.mjs printed %q: %v", sc.Text(), err)
		}
		if r.Error != "" {
			t.Errorf("zarrita reading %s in %s: %s", r.Path, root, r.Error)
			continue
		}
		got[r.Path] = r.Values
	}
	return got
}

// sameValues compares what two readers got, array by array.
func sameValues(t *testing.T, what string, got, want map[string]testutil.Values) {
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
	want := writeWant(t, testutil.ZarritaV3)
	t.Run("v3", func(t *testing.T) {
		m := mount(t, src)
		v3Py(t, "fromfile", m.Dir, want)
		for _, p := range conformanceV3Strings {
			got, err := os.ReadFile(filepath.Join(m.Dir, p, "zarr.json"))
			if err != nil || !bytes.Equal(got, testutil.Must(os.ReadFile(filepath.Join(src, p, "zarr.json")))) {
				t.Errorf("%s/zarr.json: %v: not passed through as stored", p, err)
			}
		}
		t.Run("zarrita", func(t *testing.T) {
			known := maps.Clone(testutil.ZarritaV3)
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
		if err := json.Unmarshal(testutil.Must(os.ReadFile(p)), &doc); err != nil {
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
		return os.WriteFile(p, testutil.Must(json.MarshalIndent(doc, "", "  ")), 0o644)
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
	b := testutil.Must(os.ReadFile(shard))
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
		for p := range testutil.ZarritaV3 {
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
