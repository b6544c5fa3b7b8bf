package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

var requestDir = written("requests", "requests.py", "write")

// TestWarmRequests: once a reader users have has read an array through
// the mount (no-open, the default serving path), its next read of it (a
// warm epoch: every byte in the page cache) reaches the daemon at most once
// in a hundred chunks, but for
// FUSE_IOCTL, which the kernel sends for every ioctl on a FUSE file
// whatever the daemon answered before (fs/fuse/ioctl.c: fuse_file_ioctl
// calls fuse_do_ioctl each time; ENOSYS is only turned into ENOTTY):
// Python's open() asks isatty of each file it opens, at most one IOCTL a
// file. Each reader also checks the values it reads.
func TestWarmRequests(t *testing.T) {
	needMount(t)
	needPython(t)
	dir, err := requestDir()
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "t.zarr")
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
			// On the default serving path: under passthrough and open
			// every open of a file is an OPEN and a RELEASE (passthrough
			// hands the kernel a backing file per open; open is the
			// fallback for kernels without no-open mode).
			stats := filepath.Join(t.TempDir(), "stats.json")
			m := mount(t, store, append([]string{"--stats-file", stats, "--serving", "no-open"}, r.view...)...)
			r.read(t, m.Dir) // cold
			// Pages the kernel let go of since are read again (this
			// machine's kernel pages out memory it finds idle, DAMON, and
			// fresh pages may share a region with idle ones): each run
			// of pages missing from a file may cost a READ or two. Pages
			// it lets go of during the epoch cannot be counted: an epoch
			// over the bound is run again, twice at most; a mount that
			// sends requests it need not fails all three.
			var problems []string
			for try := range 3 {
				gone := missingRuns(t, m.Dir)
				before := serveRequests(t, m, stats)
				r.read(t, m.Dir) // warm
				d := minus(serveRequests(t, m, stats), before)
				t.Logf("warm epoch %d, %d chunks stored, %d runs of pages evicted before it: %v", try+1, stored, gone, d)
				if problems = warmProblems(d, stored, gone, r.ioctl); len(problems) == 0 {
					break
				}
			}
			for _, p := range problems {
				t.Error(p)
			}
			noErrors(t, m)
		})
	}
}

// warmProblems says how the requests d of a warm epoch over stored chunks,
// gone runs of pages missing before it, exceed what it may send: at most
// 0.01 a chunk of any op, besides two READs a missing run and, for readers
// that open files with Python's open() (ioctl), up to three IOCTLs a chunk.
func warmProblems(d map[string]int64, stored, gone int, ioctl bool) []string {
	var problems []string
	for op, n := range d {
		switch {
		case op == "IOCTL" && ioctl:
			// One an open: the readers open each chunk once, or twice
			// (xarray's mean through dask reads every chunk twice, for
			// the sum and the count), and the metadata again, for each
			// dask task too.
			if n > int64(3*stored) {
				problems = append(problems, fmt.Sprintf("%d IOCTLs for %d chunks: more than three a chunk", n, stored))
			}
		case op == "READ" && float64(n) > 0.01*float64(stored)+float64(2*gone):
			problems = append(problems, fmt.Sprintf("%d READs in the warm epoch for %d runs of evicted pages, %.3f a chunk: want at most 0.01 besides", n, gone, float64(n)/float64(stored)))
		case op != "READ" && float64(n) > 0.01*float64(stored):
			problems = append(problems, fmt.Sprintf("%d %s requests in the warm epoch, %.3f a chunk: want at most 0.01", n, op, float64(n)/float64(stored)))
		}
	}
	sort.Strings(problems)
	return problems
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

// missingRuns counts the runs of pages missing from the page cache in the
// files of the mount (the chunk files of t, or t.npy), which a read of
// them would READ again.
func missingRuns(t *testing.T, mnt string) int {
	t.Helper()
	var files []string
	for _, pattern := range []string{"t/[0-9]*", "t.npy"} {
		m, err := filepath.Glob(filepath.Join(mnt, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	runs := 0
	for _, f := range files {
		in := true
		for _, v := range pageMap(t, f) {
			if v&1 == 0 && in {
				runs++
			}
			in = v&1 != 0
		}
	}
	return runs
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
