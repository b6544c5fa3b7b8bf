package integration

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

// The .npy view (zfuse mount --as-npy): every array one NumPy file, read
// with numpy (np.load(mmap_mode='r'), np.memmap, np.fromfile), dd and a C
// reader, and compared with what zarr-python 2.13 (v2) and zarrita (v3)
// read from the original stores. Each serving path is covered where CI
// runs this package with ZFUSE_SERVING unset, =passthrough and =open.

// npyPy runs testdata/npycheck.py and turns each line it prints into a
// subtest of t.
func npyPy(t *testing.T, args ...string) {
	t.Helper()
	pyChecks(t, "npycheck.py", args...)
}

// TestNpyFixtures: every array of the fixture store (every codec and
// filter, F and C order, both separators, missing chunks, NaN fill, 0-d,
// every dtype, structured) through --as-npy is byte for byte the file
// np.save writes for what zarr-python reads from the original, and numpy
// reads it back through a memory map; the object array is not shown, and
// the log says so; dd at an offset and a C reader's pread get the same
// bytes; an array given as SOURCE is one file named after it.
func TestNpyFixtures(t *testing.T) {
	dir := fixtures(t)
	src := filepath.Join(dir, "comp.zarr")
	m := mount(t, src, "--as-npy")
	npyPy(t, "zarr", src, m.Dir, "comp")
	if _, err := os.Stat(filepath.Join(m.Dir, "objects/vlen.npy")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("objects/vlen.npy: %v, want it not shown", err)
	}
	if !m.Stderr.waitFor(10*time.Second, holding(`msg="array not shown under --as-npy" key=objects/vlen`)) {
		t.Errorf("no log line says objects/vlen is not shown:\n%s", m.Stderr)
	}
	for _, p := range []string{".zgroup", ".zattrs", ".zmetadata", "blosc/.zgroup", "blosc/lz4.shuffle"} {
		if _, err := os.Stat(filepath.Join(m.Dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it not shown under --as-npy", p, err)
		}
	}
	p := filepath.Join(m.Dir, "blosc/blosclz.big.npy") // 300×200 <f4: 240 KiB
	want := testutil.Must(os.ReadFile(p))
	t.Run("dd", func(t *testing.T) {
		for _, r := range [][2]int{{0, 128}, {1001, 333}, {128 + 4*200*77 + 3, 4096 * 3}, {len(want) - 5, 100}} {
			out, err := exec.Command("dd", "if="+p, "iflag=skip_bytes,count_bytes", "bs=64K", "status=none",
				"skip="+strconv.Itoa(r[0]), "count="+strconv.Itoa(r[1])).Output()
			if w := want[r[0]:min(r[0]+r[1], len(want))]; err != nil || !bytes.Equal(out, w) {
				t.Errorf("dd skip=%d count=%d: %d bytes, %v; want %d", r[0], r[1], len(out), err, len(w))
			}
		}
	})
	t.Run("pread from C", func(t *testing.T) {
		bin := buildNpyread(t)
		// Elements of the array: the first, one in the middle, the last.
		out, err := exec.Command(bin, p, "0", "4", "31417", "4", strconv.Itoa(4*(300*200-1)), "4").CombinedOutput()
		if err != nil {
			t.Fatalf("npyread: %v\n%s", err, out)
		}
		data := want[len(want)-4*300*200:]
		wantOut := fmt.Sprintf("%s\n%s\n%s\n", hex.EncodeToString(data[0:4]), hex.EncodeToString(data[31417:31421]), hex.EncodeToString(data[len(data)-4:]))
		if string(out) != wantOut {
			t.Errorf("npyread printed\n%s\nwant\n%s", out, wantOut)
		}
	})
	t.Run("root array", func(t *testing.T) {
		arr := filepath.Join(src, "layout/f_order.3d")
		m := mount(t, arr, "--as-npy")
		npyPy(t, "zarr", arr, m.Dir, "f_order.3d")
	})
}

// buildNpyread compiles testdata/npyread.c, the C example of
// docs/zarr-v3-and-views.md, and returns the binary.
func buildNpyread(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	testutil.Need(t, "a C compiler (cc)", err == nil)
	bin := filepath.Join(t.TempDir(), "npyread")
	if out, err := exec.Command(cc, "-O2", "-Wall", "-Werror", "-o", bin, filepath.Join(repo, "integration", "testdata", "npyread.c")).CombinedOutput(); err != nil {
		t.Fatalf("cc npyread.c: %v\n%s", err, out)
	}
	return bin
}

// TestNpyConformance: the shared conformance stores through --as-npy. The
// v2 stores (zarr-python 2.18's format fixture, zarrita.js's v2 data)
// equal what zarr-python 2.13 reads from them, file for file as np.save
// writes (zarrita.js's also the values its MANIFEST lists, for the arrays
// numcodecs 0.11 cannot read); the v3 store (zarrita.js, written by zarr-python 3: sharding,
// transpose, both byte orders) holds the values its MANIFEST lists and
// zarrita reads from it; its string arrays are not shown.
func TestNpyConformance(t *testing.T) {
	for _, rel := range []string{"zarr-python-2.18.7/fixture", "zarrita.js/fixtures/v2/data.zarr"} {
		t.Run(rel, func(t *testing.T) {
			src := conformance(t, rel)
			m := mount(t, src, "--as-npy")
			npyPy(t, "zarr", src, m.Dir, "-")
			if strings.HasPrefix(rel, "zarrita") {
				npyPy(t, "known", m.Dir)
			}
		})
	}
	t.Run("zarrita.js/fixtures/v3", func(t *testing.T) {
		src := conformance(t, "zarrita.js/fixtures/v3/data.zarr")
		m := mount(t, src, "--as-npy")
		npyPy(t, "values", m.Dir, writeWant(t, testutil.ZarritaV3))
		known := maps.Clone(testutil.ZarritaV3)
		delete(known, "1d.contiguous.f2.le") // zarrita 0.7.5 has no float16
		read := zarritaRead(t, src, slices.Collect(maps.Keys(known)))
		sameValues(t, "zarrita on the original", read, known)
		npyPy(t, "values", m.Dir, writeWant(t, read))
		for _, p := range conformanceV3Strings {
			if _, err := os.Stat(filepath.Join(m.Dir, p+".npy")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s.npy: %v; want it not shown", p, err)
			}
			if !m.Stderr.waitFor(10*time.Second, holding("key="+p+" ")) {
				t.Errorf("no log line says %s is not shown:\n%s", p, m.Stderr)
			}
		}
	})
}

// TestNpyZarrita: stores zarrita writes at test time (both byte orders,
// transpose, zstd, blosc with each shuffle, edge and missing chunks, a
// nested group) through --as-npy hold what zarrita reads from the
// originals.
func TestNpyZarrita(t *testing.T) {
	needMount(t)
	src := filepath.Join(t.TempDir(), "zarrita.zarr")
	paths := strings.Fields(string(node(t, "write.mjs", src)))
	if len(paths) < 10 {
		t.Fatalf("write.mjs wrote %v", paths)
	}
	patchBloscShuffle(t, src)
	orig := zarritaRead(t, src, paths)
	if len(orig) != len(paths) {
		t.Fatalf("zarrita read %d of the %d arrays it wrote", len(orig), len(paths))
	}
	m := mount(t, src, "--as-npy")
	npyPy(t, "values", m.Dir, writeWant(t, orig))
}

// TestNpyRemote: the .npy view of remote stores, the fixtures over HTTP
// (nginx, consolidated metadata) and zarrita.js's v3 store (sharded) from
// S3 (versitygw), serves every file as the local mount's view does; an
// array given as a URL is one file named after its last segment.
func TestNpyRemote(t *testing.T) {
	fx := fixtures(t)
	// files lists the files of the mount at dir.
	files := func(dir string) []string {
		var out []string
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, testutil.Must(filepath.Rel(dir, p)))
			}
			return err
		})
		if err != nil || len(out) < 10 {
			t.Fatalf("%d files in %s: %v", len(out), dir, err)
		}
		return out
	}
	t.Run("http", func(t *testing.T) {
		_, base := startNginx(t, fx)
		local := mount(t, filepath.Join(fx, "comp.zarr"), "--as-npy")
		m := mount(t, base+"/comp.zarr", "--as-npy")
		sameFiles(t, local.Dir, m.Dir, files(local.Dir))
		one := mount(t, base+"/comp.zarr/layout/f_order.3d", "--as-npy")
		if got, want := testutil.Must(os.ReadFile(filepath.Join(one.Dir, "f_order.3d.npy"))), testutil.Must(os.ReadFile(filepath.Join(local.Dir, "layout/f_order.3d.npy"))); !bytes.Equal(got, want) {
			t.Errorf("the array as a URL: f_order.3d.npy, %d bytes, differs from the store's layout/f_order.3d.npy, %d bytes", len(got), len(want))
		}
	})
	t.Run("s3", func(t *testing.T) {
		v3 := conformance(t, "zarrita.js/fixtures/v3/data.zarr")
		root := t.TempDir()
		copyTree(t, v3, filepath.Join(root, "conformance", "v3.zarr"))
		_, endpoint := startVersitygw(t, root)
		s3Setenv(t)
		local := mount(t, v3, "--as-npy")
		m := mount(t, "s3://conformance/v3.zarr", "--as-npy", "--s3-endpoint", endpoint, "--s3-path-style")
		sameFiles(t, local.Dir, m.Dir, files(local.Dir))
	})
}
