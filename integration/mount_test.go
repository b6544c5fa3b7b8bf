package integration

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

// TestZarrPython: zarr-python reading each array through the mount equals
// zarr-python reading the compressed original, and the mount's .zarray
// says no compression.
func TestZarrPython(t *testing.T) {
	fx := fixtures(t)
	m := mount(t, filepath.Join(fx, "comp.zarr"))
	checkPy(t, "read", filepath.Join(fx, "comp.zarr"), m.Dir, filepath.Join(fx, "manifest.json"))
}

// TestXarray: xarray.open_zarr through the mount, with and without
// consolidated metadata.
func TestXarray(t *testing.T) {
	fx := fixtures(t)
	for _, how := range []string{"consolidated", "plain"} {
		t.Run(how, func(t *testing.T) {
			src := filepath.Join(fx, "xr_"+how+".zarr")
			m := mount(t, src)
			checkPy(t, "xarray", src, m.Dir, how)
		})
	}
}

// TestChunkFiles: every chunk file in the mount is byte-identical to the
// chunk file zarr-python wrote for the same array uncompressed (edge chunks
// and missing chunks included), and stat gives its size before any read.
func TestChunkFiles(t *testing.T) {
	fx := fixtures(t)
	raw := filepath.Join(fx, "raw.zarr")
	m := mount(t, filepath.Join(fx, "comp.zarr"))
	man := readManifest(t, fx)
	for _, array := range slices.Sorted(maps.Keys(man.Arrays)) {
		if man.Arrays[array].Object {
			continue // passed through: no uncompressed twin
		}
		t.Run(array, func(t *testing.T) {
			want, got := chunkFiles(t, raw, array), chunkFiles(t, m.Dir, array)
			if !slices.Equal(got, want) {
				t.Fatalf("mount has chunk files %v, the uncompressed store %v", got, want)
			}
			for _, key := range want {
				w, err := os.ReadFile(filepath.Join(raw, key))
				if err != nil {
					t.Fatal(err)
				}
				fi, err := os.Stat(filepath.Join(m.Dir, key))
				if err != nil || fi.Size() != int64(len(w)) {
					t.Errorf("%s: stat %v, %v; want %d bytes", key, fi, err, len(w))
				}
				g, err := os.ReadFile(filepath.Join(m.Dir, key))
				if err != nil {
					t.Errorf("%s: %v", key, err)
					continue
				}
				if !bytes.Equal(g, w) {
					t.Errorf("%s: %d bytes differ from the uncompressed store's %d", key, len(g), len(w))
				}
			}
		})
	}
}

// TestConformanceZarrPython218: zarr-python 2.18.7's format fixtures read
// through the mount to their known values, and each compressed chunk file
// equals the same chunk of the uncompressed copy (<i>/0).
func TestConformanceZarrPython218(t *testing.T) {
	fixture := conformance(t, "zarr-python-2.18.7/fixture")
	m := mount(t, fixture)
	checkPy(t, "zp218", m.Dir, fixture)
	for i := range 24 {
		i := strconv.Itoa(i)
		want := chunkFiles(t, fixture, i+"/0")
		for j := 1; j < 7; j++ {
			for _, key := range want {
				rel := strings.TrimPrefix(key, i+"/0/")
				w := testutil.Must(os.ReadFile(filepath.Join(fixture, key)))
				g, err := os.ReadFile(filepath.Join(m.Dir, i, strconv.Itoa(j), rel))
				if err != nil || !bytes.Equal(g, w) {
					t.Errorf("%s/%d/%s: %v: differs from %s", i, j, rel, err, key)
				}
			}
		}
	}
}

// TestConformanceZarrita: zarrita.js's v2 store (consolidated, with object
// arrays that are passed through) reads through the mount to the values
// its MANIFEST lists.
func TestConformanceZarrita(t *testing.T) {
	store := conformance(t, "zarrita.js/fixtures/v2/data.zarr")
	m := mount(t, store)
	checkPy(t, "zarrita", m.Dir)
}

// TestCorruptChunk: a corrupt chunk is EIO for that file only, with a log
// line naming it; the other chunks and the process are fine.
func TestCorruptChunk(t *testing.T) {
	fx := fixtures(t)
	src := filepath.Join(t.TempDir(), "store")
	copyTree(t, filepath.Join(fx, "comp.zarr"), src)
	flip := func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b }
	bad := map[string]func([]byte) []byte{
		"blosc/lz4.shuffle/1.1":       func(b []byte) []byte { return b[:len(b)/2] }, // truncated
		"blosc/blosclz.noshuffle/2.2": func(b []byte) []byte { return []byte("not blosc at all") },
		"compressors/zlib/0.0":        flip, // deflate error or Adler-32 mismatch
		"checksums/crc32/1.1":         flip, // CRC-32 mismatch
	}
	for key, corrupt := range bad {
		p := filepath.Join(src, key)
		if err := os.WriteFile(p, corrupt(testutil.Must(os.ReadFile(p))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := mount(t, src)
	raw := filepath.Join(fx, "raw.zarr")
	for key := range bad {
		_, err := os.ReadFile(filepath.Join(m.Dir, key))
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("%s: %v, want EIO", key, err)
		}
		if !m.Stderr.waitFor(10*time.Second, holding("key="+key)) {
			t.Errorf("no log line names %s:\n%s", key, m.Stderr)
		}
	}
	// Every other chunk still reads right, after the failures.
	for _, array := range []string{"blosc/lz4.shuffle", "blosc/blosclz.noshuffle", "compressors/zlib", "checksums/crc32", "blosc/zlib.shuffle"} {
		for _, key := range chunkFiles(t, raw, array) {
			if _, isBad := bad[key]; isBad {
				continue
			}
			g, err := os.ReadFile(filepath.Join(m.Dir, key))
			if err != nil || !bytes.Equal(g, testutil.Must(os.ReadFile(filepath.Join(raw, key)))) {
				t.Errorf("%s after corrupt neighbours: %v", key, err)
			}
		}
	}
	if !isMounted(t, m.Dir) {
		t.Errorf("mount gone after corrupt chunks")
	}
}

// TestReadOnly: every way of changing the mount fails with EROFS.
func TestReadOnly(t *testing.T) {
	fx := fixtures(t)
	m := mount(t, filepath.Join(fx, "comp.zarr"))
	p := func(s string) string { return filepath.Join(m.Dir, s) }
	chunk := p("compressors/zlib/0.0")
	for _, c := range []struct {
		op string
		do func() error
	}{
		{"create", func() error { return os.WriteFile(p("new"), []byte("x"), 0o644) }},
		{"overwrite", func() error { return os.WriteFile(chunk, []byte("x"), 0o644) }},
		{"open O_RDWR", func() error {
			f, err := os.OpenFile(chunk, os.O_RDWR, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"truncate", func() error { return os.Truncate(chunk, 0) }},
		{"mkdir", func() error { return os.Mkdir(p("d"), 0o755) }},
		{"remove", func() error { return os.Remove(chunk) }},
		{"remove dir", func() error { return os.RemoveAll(p("compressors")) }},
		{"rename", func() error { return os.Rename(chunk, p("compressors/zlib/9.9")) }},
		{"chmod", func() error { return os.Chmod(chunk, 0o666) }},
		{"symlink", func() error { return os.Symlink("x", p("l")) }},
	} {
		if err := c.do(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", c.op, err)
		}
	}
	// The store is untouched.
	if _, err := os.Stat(filepath.Join(fx, "comp.zarr", "compressors", "zlib", "0.0")); err != nil {
		t.Errorf("store chunk: %v", err)
	}
}

// TestCat: zfuse cat writes exactly what the mount serves, and refuses
// paths outside the store.
func TestCat(t *testing.T) {
	fx := fixtures(t)
	needMount(t)
	src := filepath.Join(t.TempDir(), "store")
	copyTree(t, filepath.Join(fx, "comp.zarr"), src)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("outside"), 0o644)
	if err := os.Symlink(secret, filepath.Join(src, "escape")); err != nil {
		t.Fatal(err)
	}
	m := mount(t, src)
	for _, p := range []string{".zmetadata", ".zattrs", "filters/delta/.zarray", "filters/delta/1.2",
		"layout/slash/2/1", "layout/scalar/0", "objects/vlen/0.0", "objects/vlen/.zarray"} {
		want, err := os.ReadFile(filepath.Join(m.Dir, p))
		if err != nil {
			t.Errorf("%s through the mount: %v", p, err)
			continue
		}
		got, stderr, err := run("cat", src, p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("zfuse cat %s: %v %s: %d bytes, the mount serves %d", p, err, stderr, len(got), len(want))
		}
	}
	for _, p := range []string{"../secret", "/etc/passwd", "filters/../../x", "escape"} {
		out, stderr, err := run("cat", src, p)
		if err == nil || bytes.Contains(out, []byte("outside")) || bytes.Contains(out, []byte("root:")) {
			t.Errorf("zfuse cat %s: %v, printed %q: not refused", p, err, out)
		}
		if !bytes.Contains(stderr, []byte("outside the store")) {
			t.Errorf("zfuse cat %s: message %q does not say why", p, stderr)
		}
	}
	if _, stderr, err := run("cat", src, "compressors/zlib/7.7"); err == nil || !bytes.Contains(stderr, []byte("no such file")) {
		t.Errorf("zfuse cat of a missing chunk: %v, %s", err, stderr)
	}
	// Through the mount, the escaping symlink is no file at all.
	if _, err := os.ReadFile(filepath.Join(m.Dir, "escape")); err == nil {
		t.Errorf("the mount serves a symlink pointing out of the store")
	}
}

// TestInfo: zfuse info lists every array, and says which pass through.
func TestInfo(t *testing.T) {
	fx := fixtures(t)
	needMount(t) // needs the binary
	out, stderr, err := run("info", filepath.Join(fx, "comp.zarr"))
	if err != nil {
		t.Fatalf("zfuse info: %v\n%s", err, stderr)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(string(out), "\n")[1:] {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	for array, a := range readManifest(t, fx).Arrays {
		l, ok := lines[array]
		switch {
		case !ok:
			t.Errorf("zfuse info does not list %s:\n%s", array, out)
		case a.Object && !strings.Contains(l, "passed through"):
			t.Errorf("%s: %q does not say passed through", array, l)
		case !a.Object && !strings.HasSuffix(strings.TrimSpace(l), "raw"):
			t.Errorf("%s: %q is not presented raw", array, l)
		}
	}
}

// TestManyReaders: many threads and processes at once read correct bytes.
func TestManyReaders(t *testing.T) {
	fx := fixtures(t)
	raw := filepath.Join(fx, "raw.zarr")
	m := mount(t, filepath.Join(fx, "comp.zarr"), "--cache", "1MiB", "--workers", "3")
	var keys []string
	for array, a := range readManifest(t, fx).Arrays {
		if !a.Object {
			keys = append(keys, chunkFiles(t, raw, array)...)
		}
	}
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Go(func() {
			for i := range keys {
				key := keys[(i*7+g*31)%len(keys)]
				got, err := os.ReadFile(filepath.Join(m.Dir, key))
				if err != nil || !bytes.Equal(got, testutil.Must(os.ReadFile(filepath.Join(raw, key)))) {
					t.Errorf("goroutine %d: %s: %v", g, key, err)
				}
			}
		})
	}
	wg.Wait()
	checkPy(t, "readers", filepath.Join(fx, "comp.zarr"), m.Dir, filepath.Join(fx, "manifest.json"), "8", "4")
}

// TestSignals: SIGINT unmounts cleanly too; a second mount on a busy
// mountpoint is refused with a message saying how to clear it (the stale
// mount a killed zfuse leaves is cleared: TestCrashRestart).
func TestSignals(t *testing.T) {
	fx := fixtures(t)
	m := mount(t, filepath.Join(fx, "comp.zarr"))
	_, stderr, err := run("mount", filepath.Join(fx, "comp.zarr"), m.Dir)
	if err == nil || !bytes.Contains(stderr, []byte("busy")) || !bytes.Contains(stderr, []byte("fusermount3 -u")) {
		t.Errorf("second mount on %s: %v, %q; want a refusal naming the busy mountpoint", m.Dir, err, stderr)
	}
	m.stop(t, syscall.SIGINT)
	if !strings.Contains(m.Stderr.String(), "unmounted") {
		t.Errorf("no unmounted log line:\n%s", m.Stderr)
	}
}

// TestConsolidatedPassThrough: an array whose .zarray is invalid (here
// truncated) but whose entry in .zmetadata is valid is passed through, its
// chunks served as stored: the served .zmetadata keeps its stored entry, so
// zarr.open_consolidated through the mount decompresses those chunks itself
// and reads the values, as it does from the store.
func TestConsolidatedPassThrough(t *testing.T) {
	needPython(t)
	src := filepath.Join(t.TempDir(), "store.zarr")
	script := `
import sys, zarr, numcodecs, numpy as np
g = zarr.open_group(sys.argv[1], mode="w")
g.create_dataset("sparse", data=np.arange(16, dtype="<i4").reshape(4, 4) + 1, chunks=(2, 2), compressor=numcodecs.Zlib(1))
g.create_dataset("dense", data=np.arange(16, dtype="<f8").reshape(4, 4), chunks=(2, 2), compressor=numcodecs.Zstd(1))
zarr.consolidate_metadata(sys.argv[1])
`
	if out, err := exec.Command(testutil.Python, "-c", script, src).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	za := filepath.Join(src, "sparse", ".zarray")
	b := testutil.Must(os.ReadFile(za))
	if err := os.WriteFile(za, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	m := mount(t, src)
	read := `
import sys, zarr, numpy as np
g = zarr.open_consolidated(sys.argv[1], mode="r")
assert g["sparse"].compressor is not None, g["sparse"].compressor
assert g["dense"].compressor is None, g["dense"].compressor
np.testing.assert_array_equal(g["sparse"][:], np.arange(16).reshape(4, 4) + 1)
np.testing.assert_array_equal(g["dense"][:], np.arange(16).reshape(4, 4))
print(g["sparse"][0, 0])
`
	out, err := exec.Command(testutil.Python, "-c", read, m.Dir).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Fatalf("zarr.open_consolidated through the mount: %v\n%s", err, out)
	}
	if !strings.Contains(m.Stderr.String(), "passed through unchanged") {
		t.Errorf("no warning that sparse is passed through:\n%s", m.Stderr)
	}
}
