package integration

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
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

// The netCDF view (zfuse mount --as-nc): every group one netCDF classic
// file, read with netCDF4-python (masking and scaling off) against what
// zarr-python 2.13 (v2) and zarrita (v3) read from the original stores;
// with xarray (its netcdf4 and scipy engines) against xr.open_zarr of the
// store; and with the tools of the trade: ncdump, CDO, NCO's ncks and a C
// program calling nc_get_vara_float. Each serving path is covered where CI
// runs this package with ZFUSE_SERVING unset, =passthrough and =open.

// ncPy runs testdata/nccheck.py and turns each line it prints into a
// subtest of t.
func ncPy(t *testing.T, args ...string) {
	t.Helper()
	testutil.NeedPython(t, "netCDF4")
	pyChecks(t, "nccheck.py", args...)
}

var cfStores = written("cf", "nccheck.py", "writecf")

// cf returns the directory nccheck.py writecf wrote (once per run):
// cf.zarr, cf2.zarr and big.zarr.
func cf(t *testing.T) string {
	t.Helper()
	needMount(t)
	needPython(t)
	testutil.NeedPython(t, "netCDF4", "pandas")
	dir, err := cfStores()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestNetCDFFixtures: every group of the fixture store (every codec and
// filter, F and C order, big-endian, both separators, missing chunks, NaN
// fill, 0-d, every dtype) through --as-nc is a netCDF file whose
// variables hold what zarr-python reads from the original, typed as
// docs/netcdf.md says; arrays with no netCDF type are left out, and the
// log and zfuse info say so; the Zarr metadata and the array directories
// are not shown; an array given as SOURCE is one file named after it.
func TestNetCDFFixtures(t *testing.T) {
	dir := fixtures(t)
	src := filepath.Join(dir, "comp.zarr")
	m := mount(t, src, "--as-nc")
	ncPy(t, "zarr", src, m.Dir, "comp")
	for _, key := range []string{"dtypes/c8", "dtypes/f2", "dtypes/U3", "dtypes/structured", "objects/vlen"} {
		if !m.Stderr.waitFor(10*time.Second, holding(`msg="array left out of the netCDF file" key=`+key)) {
			t.Errorf("no log line says %s is left out:\n%s", key, m.Stderr)
		}
	}
	for _, p := range []string{".zgroup", ".zmetadata", "dtypes/.zgroup", "dtypes/u1", "blosc/lz4.shuffle"} {
		if _, err := os.Stat(filepath.Join(m.Dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it not shown under --as-nc", p, err)
		}
	}
	for _, p := range []string{"comp.nc", "dtypes.nc", "deep/a/b/c.nc"} {
		if _, err := os.Stat(filepath.Join(m.Dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	lines := infoLines(t, "--as-nc", src)
	for p, want := range map[string]string{
		"dtypes/u1": "raw, as dtypes.nc variable u1 (ubyte)",
		"dtypes/M8": "raw, as dtypes.nc variable M8 (int64)",
		"dtypes/c8": "not shown (--as-nc): no netCDF classic type for <c8",
		"layout/1d": "raw, as layout.nc variable 1d (int64)",
	} {
		if !strings.Contains(lines[p], want) {
			t.Errorf("zfuse info --as-nc: %s: %q, want %q", p, lines[p], want)
		}
	}
	out, _, err := run("info", "--as-nc", src)
	for _, want := range []string{"dtypes.nc dtypes CDF-5 (cdf5)", "deep/a/b/c.nc deep/a/b/c CDF-2 (64-bit offset) 1.7 KiB nested", "objects.nc objects CDF-2 (64-bit offset) 32 B -"} {
		if err != nil || !strings.Contains(strings.Join(strings.Fields(string(out)), " "), want) {
			t.Errorf("zfuse info --as-nc: %v; no %q in\n%s", err, want, out)
		}
	}
	t.Run("root array", func(t *testing.T) {
		arr := filepath.Join(src, "layout/f_order.3d")
		m := mount(t, arr, "--as-nc")
		ncPy(t, "zarr", arr, m.Dir, "f_order.3d")
	})
	noErrors(t, m)
}

// TestNetCDFConformance: the shared conformance stores through --as-nc.
// The v2 stores (zarr-python 2.18's format fixture, zarrita.js's v2 data)
// hold what zarr-python 2.13 reads from them; the v3 store (written by
// zarr-python 3: sharding, transpose, both byte orders, a group with
// spaces in its name) holds the values its MANIFEST lists and zarrita
// reads from it; its float16 and string arrays are left out.
func TestNetCDFConformance(t *testing.T) {
	for _, rel := range []string{"zarr-python-2.18.7/fixture", "zarrita.js/fixtures/v2/data.zarr"} {
		t.Run(rel, func(t *testing.T) {
			src := conformance(t, rel)
			m := mount(t, src, "--as-nc")
			ncPy(t, "zarr", src, m.Dir, filepath.Base(strings.TrimSuffix(src, ".zarr")))
		})
	}
	t.Run("zarrita.js/fixtures/v3", func(t *testing.T) {
		src := conformance(t, "zarrita.js/fixtures/v3/data.zarr")
		m := mount(t, src, "--as-nc")
		known := maps.Clone(testutil.ZarritaV3)
		delete(known, "1d.contiguous.f2.le") // float16: no netCDF type
		ncPy(t, "values", m.Dir, "data", writeWant(t, known))
		read := zarritaRead(t, src, slices.Collect(maps.Keys(known)))
		sameValues(t, "zarrita on the original", read, known)
		ncPy(t, append([]string{"absent", m.Dir, "data", "1d.contiguous.f2.le"}, conformanceV3Strings...)...)
		if _, err := os.Stat(filepath.Join(m.Dir, "my group with spaces.nc")); err != nil {
			t.Errorf("the group with spaces in its name: %v", err)
		}
	})
}

// TestNetCDFXarray: xarray-written CF groups (a time coordinate, packed
// values with scale_factor and add_offset, fill values, a bool and a
// string variable, a scalar coordinate) through --as-nc: xarray opening
// the root file (netcdf4 engine; the scipy engine too for the CDF-2 one)
// gives exactly the dataset xr.open_zarr gives; ncdump, CDO and NCO read
// it, and a C program's nc_get_vara_float reads a hyperslab of a variable
// as zarr-python reads it; through a memory map and over HTTP (nginx)
// the file is the same.
func TestNetCDFXarray(t *testing.T) {
	dir := cf(t)
	src, src2 := filepath.Join(dir, "cf.zarr"), filepath.Join(dir, "cf2.zarr")
	m, m2 := mount(t, src, "--as-nc"), mount(t, src2, "--as-nc")
	file, file2 := filepath.Join(m.Dir, "cf.nc"), filepath.Join(m2.Dir, "cf2.nc")
	ncPy(t, "xarray", src, file, "netcdf4")
	ncPy(t, "xarray", src2, file2, "netcdf4")
	testutil.NeedPython(t, "scipy")
	ncPy(t, "xarray", src2, file2, "scipy")
	t.Run("ncdump", func(t *testing.T) {
		needTool(t, "ncdump", "netCDF-C's ncdump (Debian's netcdf-bin)")
		out, err := exec.Command("ncdump", "-h", file).CombinedOutput()
		for _, want := range []string{"int64 time(time) ;", `time:units = "hours since 2000-01-01 00:00:00" ;`,
			"short precip(time, lat, lon) ;", "precip:scale_factor = 0.1 ;", "precip:_FillValue = -32767s ;",
			"byte land(lat, lon) ;", `land:dtype = "bool" ;`, "char station(lat, station_strlen) ;",
			`:Conventions = "CF-1.8" ;`, `t2m:coordinates = "height" ;`} {
			if err != nil || !strings.Contains(string(out), want) {
				t.Errorf("ncdump -h: %v; no %q in\n%s", err, want, out)
			}
		}
		out, err = exec.Command("ncdump", "-k", file2).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "64-bit offset" {
			t.Errorf("ncdump -k cf2.nc: %q, %v", out, err)
		}
		out, err = exec.Command("ncdump", "-v", "count,station", file).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "count = 0, 1, 2, 3, 4, 5, 6, 7 ;") || !strings.Contains(string(out), `"dddd"`) {
			t.Errorf("ncdump -v count,station: %v\n%s", err, out)
		}
	})
	t.Run("cdo", func(t *testing.T) {
		needTool(t, "cdo", "CDO (Debian's cdo)")
		out, err := exec.Command("cdo", "-s", "outputtab,date,time,lat,lon,value", "-selname,t2m", "-seltimestep,2", file).CombinedOutput()
		if err != nil || strings.Count(string(out), "2000-01-01 06:00:00") != 30 {
			t.Errorf("cdo outputtab of t2m, step 2: %v\n%s", err, out)
		}
		out, err = exec.Command("cdo", "-s", "-output", "-fldmax", "-selname,count", file2).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "7") {
			t.Errorf("cdo output of count: %v\n%s", err, out)
		}
	})
	t.Run("ncks", func(t *testing.T) {
		needTool(t, "ncks", "NCO's ncks (Debian's nco)")
		out, err := exec.Command("ncks", "-H", "-C", "-v", "count", "-d", "time,3", file).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "count = 3 ;") {
			t.Errorf("ncks -H -v count -d time,3: %v\n%s", err, out)
		}
		// ncks copies variables out into a file of its own.
		copied := filepath.Join(t.TempDir(), "copy.nc")
		if out, err := exec.Command("ncks", "-O", "-v", "t2m,precip", file, copied).CombinedOutput(); err != nil {
			t.Fatalf("ncks copy: %v\n%s", err, out)
		}
		out, err = exec.Command("ncks", "-H", "-C", "-v", "count", "-d", "time,5", file2).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "count = 5 ;") {
			t.Errorf("ncks -H -v count -d time,5 of cf2.nc: %v\n%s", err, out)
		}
	})
	t.Run("nc_get_vara_float", func(t *testing.T) {
		bin := buildNcread(t)
		big := filepath.Join(dir, "big.zarr")
		mb := mount(t, big, "--as-nc")
		for _, slab := range [][2]string{{"0,0,0", "1,2,3"}, {"7,30,31", "2,3,4"}, {"0,0,0", "16,64,64"}} {
			got, err := exec.Command(bin, filepath.Join(mb.Dir, "big.nc"), "big", slab[0], slab[1]).CombinedOutput()
			if err != nil {
				t.Fatalf("ncread %v: %v\n%s", slab, err, got)
			}
			want, err := exec.Command(testutil.Python, filepath.Join(repo, "integration", "testdata", "nccheck.py"), "slab", big, "", slab[0], slab[1]).Output()
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("nc_get_vara_float of big[%s +%s]: %d bytes, zarr-python's %d (%v)", slab[0], slab[1], len(got), len(want), err)
			}
		}
		noErrors(t, mb)
	})
	t.Run("mmap", func(t *testing.T) {
		want := testutil.Must(os.ReadFile(file))
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := syscall.Mmap(int(f.Fd()), 0, len(want), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Munmap(b)
		if !bytes.Equal(b, want) {
			t.Errorf("cf.nc through a memory map differs from its reads")
		}
	})
	t.Run("http", func(t *testing.T) {
		_, base := startNginx(t, dir)
		r := mount(t, base+"/cf.zarr", "--as-nc")
		got, err := os.ReadFile(filepath.Join(r.Dir, "cf.nc"))
		if want := testutil.Must(os.ReadFile(file)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("cf.nc over HTTP: %d bytes, %v; the local mount's has %d", len(got), err, len(want))
		}
	})
	noErrors(t, m)
	noErrors(t, m2)
}

// buildNcread compiles testdata/ncread.c against netCDF-C (libnetcdf-dev)
// and returns the binary.
func buildNcread(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	testutil.Need(t, "a C compiler (cc)", err == nil)
	_, err = os.Stat("/usr/include/netcdf.h")
	testutil.Need(t, "netCDF-C's headers (Debian's libnetcdf-dev, make deps)", err == nil)
	bin := filepath.Join(t.TempDir(), "ncread")
	if out, err := exec.Command(cc, "-O2", "-Wall", "-Werror", "-o", bin, filepath.Join(repo, "integration", "testdata", "ncread.c"), "-lnetcdf").CombinedOutput(); err != nil {
		t.Fatalf("cc ncread.c: %v\n%s", err, out)
	}
	return bin
}

// TestNetCDFCorrupt: a chunk whose stored bytes are garbage makes the
// pages of the file holding its values fail with EIO, with a log line
// naming the chunk's key; the rest of the file reads, netCDF-C's reads of
// other hyperslabs too.
func TestNetCDFCorrupt(t *testing.T) {
	dir := cf(t)
	src := filepath.Join(t.TempDir(), "big.zarr")
	copyTree(t, filepath.Join(dir, "big.zarr"), src)
	// Chunk 1.0.1 holds big[8:16, 0:32, 32:64].
	if err := os.WriteFile(filepath.Join(src, "1.0.1"), []byte("this is not blosc"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := mount(t, src, "--as-nc")
	p := filepath.Join(m.Dir, "big.nc")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	begin := fi.Size() - 4*16*64*64 // the one variable ends the file
	at := func(i, j, k int64) int64 { return begin + 4*((i*64+j)*64+k) }
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 4)
	if _, err := f.ReadAt(b, at(8, 0, 33)); !errors.Is(err, syscall.EIO) {
		t.Errorf("a value of the corrupt chunk: %v, want EIO", err)
	}
	if !m.Stderr.waitFor(10*time.Second, holding("1.0.1")) {
		t.Errorf("no log line names the corrupt chunk 1.0.1:\n%s", m.Stderr)
	}
	if _, err := f.ReadAt(b, at(0, 5, 7)); err != nil || math.Float32frombits(binary.BigEndian.Uint32(b)) != float32(5*64+7)/7 {
		t.Errorf("a value of another chunk: %x, %v; want %v", b, err, float32(5*64+7)/7)
	}
	bin := buildNcread(t)
	// netCDF-C reads 8 KiB blocks: rows 0-6 stay clear of row 8's pages.
	if out, err := exec.Command(bin, p, "big", "0,0,0", "7,64,64").CombinedOutput(); err != nil {
		t.Errorf("ncread of chunks before the corrupt one: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, p, "big", "8,0,32", "1,1,1").CombinedOutput(); err == nil {
		t.Errorf("ncread of a value of the corrupt chunk succeeded:\n%s", out)
	}
}

// TestNetCDFSlab: a slab of 1/8 of an array read through netCDF4 (v[0:16]
// of 128x256x256 float32 in 64 KiB chunks, 64 chunks) reads at most twice
// the chunks it covers from the store (the mount's StoreReads), the
// target docs/netcdf.md measures on a 512 MiB array with
// scripts/nc-bench.py. The kernel reads ahead of netCDF-C past the slab's
// end: its readahead is set to 1 MiB, 1/32 of this array as the default
// 16 MiB is of the measured one.
func TestNetCDFSlab(t *testing.T) {
	dir := cf(t)
	src := filepath.Join(dir, "slab.zarr")
	stats := filepath.Join(t.TempDir(), "stats.json")
	m := mount(t, src, "--as-nc", "--kernel-readahead", "1MiB", "--stats-file", stats)
	const script = `
import sys, netCDF4, numpy as np, zarr
d = netCDF4.Dataset(sys.argv[1])
v = d["slab"]
v.set_auto_maskandscale(False)
assert np.array_equal(v[0:16], zarr.open(sys.argv[2], mode="r")[0:16])
`
	if out, err := exec.Command(testutil.Python, "-c", script, filepath.Join(m.Dir, "slab.nc"), src).CombinedOutput(); err != nil {
		t.Fatalf("netCDF4 reading slab[0:16]: %v\n%s", err, out)
	}
	var doc struct {
		Stats struct{ StoreReads int64 } `json:"stats"`
	}
	if err := json.Unmarshal(askStats(t, m, stats), &doc); err != nil {
		t.Fatal(err)
	}
	const covered = 16 * 2 * 2 // 16 steps of 2x2 chunks
	t.Logf("slab[0:16]: %d chunks read from the store for %d covered (%.2fx)", doc.Stats.StoreReads, covered, float64(doc.Stats.StoreReads)/covered)
	if doc.Stats.StoreReads < covered || doc.Stats.StoreReads > 2*covered {
		t.Errorf("slab[0:16] read %d chunks from the store, want %d to %d: the ones it covers, at most twice over", doc.Stats.StoreReads, covered, 2*covered)
	}
	noErrors(t, m)
}

// TestNetCDFLimits: a group past netCDF-C's limits is still a file
// netCDF-C reads, without what would take it past them, each left out
// with a warning: ncdump -h reads the file of a store of 1030 arrays of a
// dimension each (1024 dimensions at most: 6 left out), an array and an
// attribute whose names netCDF refuses, and an attribute name over 256
// bytes. netCDF-C 4.9.0 refuses names that long (NC_MAX_NAME); it would
// read more dimensions, which zfuse keeps to netcdf.h's NC_MAX_DIMS for
// readers that size their arrays by it. (The limit of 8192 variables:
// tree's TestNcLimits, where 8200 arrays cost no disk.)
func TestNetCDFLimits(t *testing.T) {
	const netCDFMaxDims = 1024 // NC_MAX_DIMS
	needMount(t)
	needTool(t, "ncdump", "netCDF-C's ncdump (Debian's netcdf-bin)")
	src := filepath.Join(t.TempDir(), "lim.zarr")
	w := func(key, doc string) { testutil.WriteFile(t, src, key, []byte(doc)) }
	const array = `{"zarr_format": 2, "shape": [1], "chunks": [1], "dtype": "|u1", "compressor": null, "fill_value": null, "order": "C", "filters": null}`
	long := strings.Repeat("n", 300)
	w(".zgroup", `{"zarr_format": 2}`)
	w(".zattrs", `{"`+long+`": 1, "bad/name": 2, "ok": 3}`)
	for i := range 1030 {
		w(fmt.Sprintf("d%04d/.zarray", i), array)
	}
	w("-bad/.zarray", array)
	m := mount(t, src, "--as-nc")
	out, err := exec.Command("ncdump", "-h", filepath.Join(m.Dir, "lim.nc")).CombinedOutput()
	if err != nil {
		t.Fatalf("ncdump -h lim.nc: %v\n%.2000s", err, out)
	}
	if n := strings.Count(string(out), "\tubyte "); n != netCDFMaxDims {
		t.Errorf("ncdump -h lim.nc: %d variables, want %d", n, netCDFMaxDims)
	}
	if !strings.Contains(string(out), ":ok = 3 ;") || strings.Contains(string(out), "nnnn") {
		t.Errorf("ncdump -h lim.nc: want the global attribute ok and not the long one:\n%.2000s", out)
	}
	var want []string
	for i := netCDFMaxDims; i < 1030; i++ {
		want = append(want, fmt.Sprintf(`msg="array left out of the netCDF file" key=d%04d`, i))
	}
	want = append(want, `msg="array left out of the netCDF file" key=-bad`, "attribute=bad/name", "attribute="+long)
	for _, line := range want {
		if !m.Stderr.waitFor(10*time.Second, holding(line)) {
			t.Errorf("no log line says %s", line)
		}
	}
	noErrors(t, m)
}

// TestNetCDFRefresh: under --refresh, a group whose attributes change in
// the store is another file (a new inode) holding the new header, and a
// reader that held the old one open reads it whole or gets ESTALE, never a
// mix.
func TestNetCDFRefresh(t *testing.T) {
	dir := cf(t)
	src := filepath.Join(t.TempDir(), "cf2.zarr")
	copyTree(t, filepath.Join(dir, "cf2.zarr"), src)
	m := mount(t, src, "--as-nc", "--refresh", "1s")
	p := filepath.Join(m.Dir, "cf2.nc")
	old, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	attrs := filepath.Join(src, ".zattrs")
	b := testutil.Must(os.ReadFile(attrs))
	b = bytes.Replace(b, []byte(`"title": "a CF group"`), []byte(`"title": "a CF group, changed"`), 1)
	if err := os.WriteFile(attrs, b, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(refreshBound)
	var now syscall.Stat_t
	for syscall.Stat(p, &now) == nil && now.Ino == st.Ino && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if now.Ino == st.Ino {
		t.Fatalf("cf2.nc kept inode %d after its group's attributes changed", st.Ino)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Contains(got, []byte("a CF group, changed")) {
		t.Errorf("the new cf2.nc: %v; no new title in its %d bytes", err, len(got))
	}
	got := make([]byte, len(old))
	n, err := f.ReadAt(got, 0)
	if err != nil && !errors.Is(err, syscall.ESTALE) {
		t.Errorf("the old cf2.nc, held open: %v", err)
	}
	if !bytes.Equal(got[:n], old[:n]) {
		t.Errorf("the old cf2.nc, held open, read %d bytes that are not the old file's", n)
	}
}

// TestLayoutNative: zfuse mount --layout native presents order F and
// big-endian arrays as C order, little-endian, so that netCDF-C's NCZarr,
// which ignores both (4.9.0 reads such arrays through a plain mount as
// other values, exit 0), reads the values zarr-python reads; zarr-python
// reads the same values either way. Under --as-v2 a v3 store's big-endian arrays are
// little-endian too.
func TestLayoutNative(t *testing.T) {
	dir := cf(t)
	src := filepath.Join(dir, "layout.zarr")
	m := mount(t, src, "--layout", "native")
	ncPy(t, "native", src, m.Dir)
	t.Run("v3 --as-v2", func(t *testing.T) {
		src := conformance(t, "zarrita.js/fixtures/v3/data.zarr")
		m := mount(t, src, "--as-v2", "--layout", "native")
		known := map[string]testutil.Values{}
		for _, p := range []string{"1d.contiguous.f4.be", "1d.contiguous.f4.le", "3d.chunked.mixed.i2.F", "1d.contiguous.compressed.sharded.f4"} {
			known[p] = testutil.ZarritaV3[p]
		}
		ncPy(t, "nativev2", m.Dir, writeWant(t, known))
	})
	noErrors(t, m)
}
