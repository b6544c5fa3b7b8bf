package integration

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// TestBench runs a small zfuse bench (the race-built binary, which mounts
// with itself): one round of every reader on a 16 MiB Blosc array in 1 MiB
// chunks, on the no-open and passthrough paths, and checks that it measured
// every cell of the matrix (the FUSE floor beside each local reader, and
// zarr-python over the bench's HTTP server with 20 ms of latency, directly
// and through a mount of the URL), read the right bytes through the mount,
// showed each mount's ratio to each baseline, and judged every target.
func TestBench(t *testing.T) {
	needMount(t)
	needPython(t)
	testutil.NeedPython(t, "zarr", "fsspec", "aiohttp", "xarray", "dask", "torch", "netCDF4") // zarr-http, xarray, loader, netcdf
	servings := "no-open"
	if os.Geteuid() == 0 {
		servings += ",passthrough"
	}
	stdout, stderr, err := run("bench", "--size", "16MiB", "--runs", "1", "--epochs", "2", "--codecs", "blosc", "--chunks", "1MiB",
		"--servings", servings, "--cache-decoded", "8MiB", "--readahead", "4MiB", "--workers", "2")
	if err != nil {
		t.Fatalf("zfuse bench: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	t.Logf("%s", stdout)
	rate := `[0-9]+\.[0-9]{2} \[[0-9]+\.[0-9]{2}-[0-9]+\.[0-9]{2}\]`
	epochs := rate + ` +` + rate
	rows := []string{
		`arrays 1MiB: float32 4x1024x1024, 16 chunks of 1 MiB \(1x512x512\)`,
		`budgets decoded 8MiB, compressed 0, readahead 4MiB`,
	}
	x := `[0-9]+\.[0-9]{2}x \[[0-9]+\.[0-9]{2}-[0-9]+\.[0-9]{2}\]`
	for _, reader := range []string{"files-grid", "files-list", "files-py", "cat", "zarr", "dask", "xarray", "loader", "zarr-http", "netcdf"} {
		bases := []string{"raw", "floor"}
		switch reader {
		case "zarr", "dask", "xarray", "loader":
			bases = append(bases, "self")
		case "zarr-http":
			bases = []string{"http"}
		case "netcdf":
			bases = []string{"raw"} // a CDF-2 file on local disk; netCDF-C has no floor here
		}
		for _, base := range bases {
			switch base {
			case "raw":
				rows = append(rows, `1MiB +`+reader+` +none +raw +`+epochs)
			case "floor":
				rows = append(rows, `1MiB +`+reader+` +none +floor +`+epochs+` +no-open, [0-9.]+ [KMG]?i?B, [0-9.]+ s`)
			default:
				rows = append(rows, `1MiB +`+reader+` +blosc +`+base+` +`+epochs)
			}
		}
		for _, s := range strings.Split(servings, ",") {
			rows = append(rows, `1MiB +`+reader+` +blosc +mount\(`+s+`\) +`+epochs+` +`+s+`, [0-9.]+ [KMG]?i?B, [0-9.]+ s`)
			for _, base := range bases {
				rows = append(rows, `1MiB +`+reader+` +blosc +mount\(`+s+`\) +`+base+` +`+x+` +`+x)
			}
		}
	}
	// The requests each epoch made of the mount: Python's open() asks
	// isatty of every chunk file it opens (IOCTL); cold, each chunk file
	// is looked up.
	rows = append(rows, `daemon requests per chunk read, by epoch`,
		`1MiB +zarr +blosc +mount\(no-open\) +IOCTL 1\.[0-9]{2}.*LOOKUP 1\.[0-9]{2}.* +IOCTL 1\.[0-9]{2}`)
	rows = append(rows, `the FUSE floor, cold \(epoch 1\): 1MiB files-grid: [0-9]+ files/s \[[0-9]+-[0-9]+\], [0-9.]+ ms a file; 1MiB files-list: `)
	for _, row := range rows {
		if !regexp.MustCompile(row).Match(stdout) {
			t.Errorf("no line matching %q", row)
		}
	}
	// Per serving path: zarr-python at epochs 1 and 2, warm against the
	// uncompressed array; the DataLoader at 1 (epoch 3 was not read),
	// dask's and xarray's mean cold; the warm epoch's requests of each of
	// the 12 readers; the file tool cold, warm, and in listing order, the
	// file tool ÷ the floor in grid and listing order, Python's
	// open().read() ÷ the floor; zarr-http at epochs 1 and 2, the .npy file
	// ÷ chunk files and the chunks a mapped eighth read; and the memory of
	// the mounts (one round: no spread).
	rows = append(rows, `1MiB netcdf warm epoch: daemon requests a chunk, but IOCTL +[0-9.]+ \[`, `1MiB cat warm epoch: daemon requests a chunk, but IOCTL`)
	want := 28*len(strings.Split(servings, ",")) + 1
	if n := strings.Count(string(stdout), " met") + strings.Count(string(stdout), "NOT MET"); n != want {
		t.Errorf("%d targets judged, want %d", n, want)
	}
	if bytes.Contains(stdout, []byte("NaN")) || bytes.Contains(stdout, []byte("Inf")) {
		t.Errorf("a ratio of nothing:\n%s", stdout)
	}
}

// TestBenchDir: zfuse bench --dir removes only what it wrote there: a
// directory the user had keeps its files (it once lost them), a directory
// the run made is gone; and --epochs 1 reads one epoch (it read two).
func TestBenchDir(t *testing.T) {
	needMount(t)
	needPython(t)
	base := t.TempDir()
	keep := filepath.Join(base, "keepme")
	if err := os.Mkdir(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(keep, "notes.txt")
	if err := os.WriteFile(notes, []byte("important\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(base, "fresh", "stores")
	for _, dir := range []string{keep, fresh} {
		stdout, stderr, err := run("bench", "--dir", dir, "--size", "8MiB", "--chunks", "1MiB", "--codecs", "zstd",
			"--readers", "files-grid", "--runs", "1", "--epochs", "1")
		if err != nil {
			t.Fatalf("zfuse bench --dir %s: %v\nstdout:\n%s\nstderr:\n%s", dir, err, stdout, stderr)
		}
		if !bytes.Contains(stdout, []byte("epoch 1")) || bytes.Contains(stdout, []byte("epoch 2")) {
			t.Errorf("--epochs 1: want one epoch column:\n%s", stdout)
		}
		if n := bytes.Count(stderr, []byte("files-grid mount(")); n != 1 {
			t.Errorf("%d mounted reads, want 1:\n%s", n, stderr)
		}
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "important\n" {
		t.Errorf("the user's file in --dir: %q, %v", b, err)
	}
	entries, err := os.ReadDir(keep)
	if err != nil || len(entries) != 1 {
		t.Errorf("--dir after the run holds %v (%v), want only notes.txt", entries, err)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the --dir the run made is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(fresh)); err != nil {
		t.Errorf("the parent of --dir was made by the run: %v", err)
	}
	// A subdirectory for a chunk size that holds something else is refused.
	if err := os.Mkdir(filepath.Join(keep, "1MiB"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keep, "1MiB", "mine"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := run("bench", "--dir", keep, "--size", "8MiB", "--chunks", "1MiB", "--codecs", "zstd", "--readers", "files-grid", "--runs", "1", "--epochs", "1")
	if err == nil || !bytes.Contains(stderr, []byte("new subdirectory")) {
		t.Errorf("bench into a chunk-size directory holding other files: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(keep, "1MiB", "mine")); err != nil {
		t.Errorf("the refused run touched the user's file: %v", err)
	}
}
