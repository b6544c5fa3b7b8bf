package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

var requestStore = sync.OnceValues(func() (string, error) {
	out := filepath.Join(tmp, "requests")
	if err := os.Mkdir(out, 0o755); err != nil {
		return "", err
	}
	if b, err := exec.Command(testutil.Python, filepath.Join(repo, "integration", "testdata", "requests.py"), "write", out).CombinedOutput(); err != nil {
		return "", fmt.Errorf("requests.py write: %v\n%s", err, b)
	}
	return filepath.Join(out, "t.zarr"), nil
})

// TestWarmRequests: once a reader users have has read an array through
// the mount, its next read of it (a warm epoch: every byte in the page
// cache) reaches the daemon at most once in a hundred chunks, but for
// FUSE_IOCTL, which the kernel sends for every ioctl on a FUSE file
// whatever the daemon answered before (fs/fuse/ioctl.c: fuse_file_ioctl
// calls fuse_do_ioctl each time; ENOSYS is only turned into ENOTTY):
// Python's open() asks isatty of each file it opens, at most one IOCTL a
// file. Each reader also checks the values it reads.
func TestWarmRequests(t *testing.T) {
	needMount(t)
	needPython(t)
	store, err := requestStore()
	if err != nil {
		t.Fatal(err)
	}
	const planes, chunksPerPlane = 16, 64
	stored := (planes - 1) * chunksPerPlane // the last plane is fill, not stored
	py := func(reader string) func(t *testing.T, mnt string) {
		return func(t *testing.T, mnt string) {
			t.Helper()
			if b, err := exec.Command(testutil.Python, filepath.Join(repo, "integration", "testdata", "requests.py"), reader, mnt).CombinedOutput(); err != nil {
				t.Fatalf("requests.py %s: %v\n%s", reader, err, b)
			}
		}
	}
	for _, r := range []struct {
		name  string
		view  []string
		read  func(t *testing.T, mnt string)
		ioctl bool // opens files with Python's open()
	}{
		{"zarr-python", nil, py("zarr"), true},
		{"xarray", nil, py("xarray"), true},
		{"DataLoader", nil, py("loader"), true},
		{"netCDF4", nil, py("netcdf4"), false},
		{"npy-mmap", []string{"--as-npy"}, py("npymap"), true},
		{"cat", nil, catChunks, false},
	} {
		t.Run(r.name, func(t *testing.T) {
			switch r.name {
			case "DataLoader":
				testutil.NeedPython(t, "torch")
			case "netCDF4":
				testutil.NeedPython(t, "netCDF4")
			}
			stats := filepath.Join(t.TempDir(), "stats.json")
			m := mount(t, store, append([]string{"--stats-file", stats}, r.view...)...)
			r.read(t, m.Dir) // cold
			before := serveRequests(t, m, stats)
			r.read(t, m.Dir) // warm
			d := minus(serveRequests(t, m, stats), before)
			t.Logf("warm epoch, %d chunks stored: %v", stored, d)
			for op, n := range d {
				switch {
				case op == "IOCTL" && r.ioctl:
					// A file opened, whether a chunk or a metadata
					// document (zarr-python opens .zgroup, .zarray and
					// .zattrs again for each array it opens).
					if n > int64(stored+16) {
						t.Errorf("%d IOCTLs for %d chunks: more than one per file opened", n, stored)
					}
				case float64(n) > 0.01*float64(stored):
					t.Errorf("%d %s requests in the warm epoch, %.3f a chunk: want at most 0.01", n, op, float64(n)/float64(stored))
				}
			}
			noErrors(t, m)
		})
	}
}

// catChunks reads every chunk file of the mount's array t with one cat.
func catChunks(t *testing.T, mnt string) {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(mnt, "t"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(mnt, "t", e.Name()))
		}
	}
	sort.Strings(files)
	cmd := exec.Command("cat", files...)
	out, err := cmd.Output()
	if err != nil || len(out) != len(files)*128*128*4 {
		t.Fatalf("cat of %d chunk files: %d bytes, %v", len(files), len(out), err)
	}
}

// serveRequests asks the mount for its stats file and returns the
// requests that reached it so far, by opcode.
func serveRequests(t testing.TB, m *mounted, stats string) map[string]int64 {
	t.Helper()
	var doc struct {
		Serve struct{ Requests map[string]int64 }
	}
	if err := json.Unmarshal(askStats(t, m, stats), &doc); err != nil {
		t.Fatalf("stats file: %v", err)
	}
	return doc.Serve.Requests
}

// minus returns a - b, opcode by opcode, without the zeros.
func minus(a, b map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range a {
		if v != b[k] {
			d[k] = v - b[k]
		}
	}
	return d
}
