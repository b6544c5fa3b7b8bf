package integration

import (
	"errors"
	"fmt"
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

// TestHTTPZarrPython: a store served by nginx and mounted over HTTP reads
// in zarr-python and xarray as the original does, and every file of the
// local mount is served identically; without consolidated metadata, the
// --array hints give the tree.
func TestHTTPZarrPython(t *testing.T) {
	fx := fixtures(t)
	_, base := startNginx(t, fx)
	t.Run("zarr-python", func(t *testing.T) {
		m := mount(t, base+"/comp.zarr")
		checkPy(t, "read", filepath.Join(fx, "comp.zarr"), m.Dir, filepath.Join(fx, "manifest.json"))
		local := mount(t, filepath.Join(fx, "comp.zarr"))
		for _, array := range slices.Sorted(maps.Keys(readManifest(t, fx).Arrays)) {
			keys := chunkFiles(t, local.Dir, array)
			keys = append(keys, array+"/.zarray")
			sameFiles(t, local.Dir, m.Dir, keys)
		}
		sameFiles(t, local.Dir, m.Dir, []string{".zmetadata", ".zgroup"})
	})
	t.Run("xarray consolidated", func(t *testing.T) {
		m := mount(t, base+"/xr_consolidated.zarr")
		checkPy(t, "xarray", filepath.Join(fx, "xr_consolidated.zarr"), m.Dir, "consolidated")
	})
	t.Run("xarray hints", func(t *testing.T) {
		src := filepath.Join(fx, "xr_plain.zarr")
		var flags []string
		des, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range des {
			if de.IsDir() {
				flags = append(flags, "--array", de.Name())
			}
		}
		m := mount(t, base+"/xr_plain.zarr", flags...)
		checkPy(t, "xarray", src, m.Dir, "plain")
	})
	t.Run("no metadata", func(t *testing.T) {
		_, stderr, err := run("info", base+"/")
		if err == nil || !strings.Contains(string(stderr), "--array") {
			t.Errorf("info of a URL without metadata: %v\n%s", err, stderr)
		}
	})
	t.Run("a group and no consolidated metadata", func(t *testing.T) {
		// Found: a .zgroup. HTTP lists nothing else: info, mount and
		// compress say what they found, and how to name the arrays.
		mnt := t.TempDir()
		t.Cleanup(func() { // where the mount is not refused
			if isMounted(t, mnt) {
				exec.Command("fusermount3", "-u", mnt).Run()
			}
		})
		for _, args := range [][]string{
			{"info", base + "/xr_plain.zarr"},
			{"mount", "--background", base + "/xr_plain.zarr", mnt},
			{"compress", base + "/xr_plain.zarr", filepath.Join(t.TempDir(), "out.zarr")},
		} {
			_, stderr, err := run(args...)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 ||
				!strings.Contains(string(stderr), "holds no Zarr array: 1 group (.) and no array") || !strings.Contains(string(stderr), "--array PATH") {
				t.Errorf("zfuse %s: %v, want exit 1 saying what it found and --array:\n%s", args[0], err, stderr)
			}
		}
	})
	t.Run("info without chunk listings", func(t *testing.T) {
		// HTTP lists no chunk keys: info says so rather than 0 chunks.
		out, stderr, err := run("info", base+"/comp.zarr")
		if err != nil || !strings.Contains(string(out), "not listed") || strings.Contains(string(out), "0 chunks, 0 B") {
			t.Errorf("zfuse info over HTTP: %v\n%s%s", err, out, stderr)
		}
	})
}

// TestS3ZarrPython: the same stores served by versitygw and mounted from
// s3://; the credentials appear in no log line, no output of zfuse info or
// cat, and not in the mount table.
func TestS3ZarrPython(t *testing.T) {
	fx := fixtures(t)
	root := t.TempDir()
	for _, s := range []string{"comp.zarr", "xr_consolidated.zarr"} {
		copyTree(t, filepath.Join(fx, s), filepath.Join(root, "fixtures", s))
	}
	gw, endpoint := startVersitygw(t, root)
	s3Setenv(t)
	flags := []string{"--s3-endpoint", endpoint, "--s3-path-style", "--log-level", "debug"}
	m := mount(t, "s3://fixtures/comp.zarr", flags...)
	checkPy(t, "read", filepath.Join(fx, "comp.zarr"), m.Dir, filepath.Join(fx, "manifest.json"))
	local := mount(t, filepath.Join(fx, "comp.zarr"))
	for _, array := range slices.Sorted(maps.Keys(readManifest(t, fx).Arrays)) {
		// S3 lists everything: the chunk files are the same names.
		if got, want := chunkFiles(t, m.Dir, array), chunkFiles(t, local.Dir, array); !slices.Equal(got, want) {
			t.Errorf("%s: chunk files %v, local %v", array, got, want)
		}
		sameFiles(t, local.Dir, m.Dir, append(chunkFiles(t, local.Dir, array), array+"/.zarray"))
	}
	x := mount(t, "s3://fixtures/xr_consolidated.zarr", flags...)
	checkPy(t, "xarray", filepath.Join(fx, "xr_consolidated.zarr"), x.Dir, "consolidated")

	info, infoErr, err := run(append(append([]string{"info"}, flags...), "s3://fixtures/comp.zarr")...)
	if err != nil || !strings.Contains(string(info), "blosc") {
		t.Errorf("zfuse info: %v\n%s%s", err, info, infoErr)
	}
	cat, catErr, err := run(append(append([]string{"cat"}, flags...), "s3://fixtures/comp.zarr", ".zmetadata")...)
	if !strings.Contains(string(cat), "zarr_consolidated_format") {
		t.Errorf("zfuse cat .zmetadata printed %.80q", cat)
	}
	if err != nil {
		t.Errorf("zfuse cat: %v\n%s", err, catErr)
	}
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	m.stop(t, syscall.SIGTERM)
	x.stop(t, syscall.SIGTERM)
	if !strings.Contains(m.Stderr.String(), "level=DEBUG") {
		t.Errorf("no debug lines in the mount's log:\n%s", m.Stderr)
	}
	for name, text := range map[string]string{
		"mount log": m.Stderr.String() + x.Stderr.String(), "info": string(info) + string(infoErr),
		"cat stderr": string(catErr), "mount table": string(mountinfo), "gateway log": gw.log.String(),
	} {
		for _, secret := range []string{s3Secret, s3Access} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s shows a credential (%.6s...)", name, secret)
			}
		}
	}
}

// TestHTTPCompressedTier: chunks read again after the kernel and the
// decoded tier forgot them come from the compressed tier, without another
// GET; with the compressed tier off, the same reads GET again (so the
// second pass did reach zfuse). Requests are counted by a proxy in front
// of nginx.
func TestHTTPCompressedTier(t *testing.T) {
	needMount(t)
	dir := t.TempDir()
	keys := writeBig(t, filepath.Join(dir, "big.zarr"), 16) // 16 MiB decoded
	_, base := startNginx(t, dir)
	px := startProxy(t, base)
	gets := map[string]int{}
	for _, tier := range []string{"256MiB", "0"} {
		px.reset()
		m := mount(t, px.URL+"/big.zarr", "--cache-decoded", "2MiB", "--cache-compressed", tier, "--readahead", "0")
		first := readAll(t, m.Dir, keys)
		for _, k := range keys {
			dropPageCache(t, filepath.Join(m.Dir, k))
		}
		second := readAll(t, m.Dir, keys)
		for i := range keys {
			if string(first[i]) != string(second[i]) {
				t.Errorf("%s read differently the second time", keys[i])
			}
		}
		for _, k := range keys {
			gets[tier] += px.count("GET", "/big.zarr/"+k)
		}
		m.stop(t, syscall.SIGTERM)
	}
	t.Logf("GETs for %d chunks read twice: %d with the compressed tier, %d without", len(keys), gets["256MiB"], gets["0"])
	if gets["256MiB"] != len(keys) {
		t.Errorf("%d GETs with the compressed tier, want %d (one per chunk)", gets["256MiB"], len(keys))
	}
	if gets["0"] < len(keys)*3/2 {
		t.Errorf("%d GETs without the compressed tier: the second pass did not reach zfuse, so the test proves nothing", gets["0"])
	}
}

// dropPageCache asks the kernel to forget the cached pages of a file
// (posix_fadvise POSIX_FADV_DONTNEED), so that the next read reaches zfuse.
func dropPageCache(t *testing.T, p string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const dontNeed = 4 // POSIX_FADV_DONTNEED
	if _, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, dontNeed, 0, 0); e != 0 {
		t.Fatal(e)
	}
}

// TestHTTPServerDown: reads of chunks not yet fetched fail with EIO while
// the server is stopped (mid-scan), with log lines naming them; the mount
// survives, and once the server is back every chunk reads as the local
// mount's does.
func TestHTTPServerDown(t *testing.T) {
	needMount(t)
	dir := t.TempDir()
	keys := writeBig(t, filepath.Join(dir, "big.zarr"), 24)
	ng, base := startNginx(t, dir)
	m := mount(t, base+"/big.zarr")
	local := mount(t, filepath.Join(dir, "big.zarr"))
	sameFiles(t, local.Dir, m.Dir, keys[:3])
	ng.stop()
	eio := 0
	for _, k := range keys[3:] {
		_, err := os.ReadFile(filepath.Join(m.Dir, k))
		if err == nil {
			continue // read ahead before the stop
		}
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("%s with the server stopped: %v, want EIO", k, err)
		}
		if eio++; eio == 3 {
			break
		}
	}
	if eio == 0 {
		t.Fatal("every read succeeded with the server stopped")
	}
	if !m.Stderr.waitFor(10*time.Second, holding("level=ERROR")) {
		t.Errorf("no error logged for the failed reads:\n%s", m.Stderr)
	}
	if _, err := os.Stat(filepath.Join(m.Dir, ".zarray")); err != nil {
		t.Errorf("the mount did not survive: %v", err)
	}
	ng.start()
	sameFiles(t, local.Dir, m.Dir, keys)
}

// TestHTTPForbidden: a chunk the server refuses (403) is EIO with a log
// line naming it, a chunk that does not exist (404) is ENOENT, and the
// other chunks read.
func TestHTTPForbidden(t *testing.T) {
	needMount(t)
	dir := t.TempDir()
	keys := writeBig(t, filepath.Join(dir, "big.zarr"), 4)
	os.Remove(filepath.Join(dir, "big.zarr", keys[2])) // a missing chunk: fill value
	_, base := startNginx(t, dir)
	px := startProxy(t, base)
	px.deny.Store("/" + keys[1])
	m := mount(t, px.URL+"/big.zarr", "--readahead", "0")
	if _, err := os.ReadFile(filepath.Join(m.Dir, keys[1])); !errors.Is(err, syscall.EIO) {
		t.Errorf("403: %v, want EIO", err)
	}
	if _, err := os.ReadFile(filepath.Join(m.Dir, keys[2])); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("404: %v, want ENOENT", err)
	}
	for _, k := range []string{keys[0], keys[3]} {
		if b, err := os.ReadFile(filepath.Join(m.Dir, k)); err != nil || len(b) != 1<<20 {
			t.Errorf("%s: %d bytes, %v", k, len(b), err)
		}
	}
	m.stop(t, syscall.SIGTERM)
	var logged bool
	for line := range strings.Lines(m.Stderr.String()) {
		logged = logged || strings.Contains(line, "level=ERROR") && strings.Contains(line, keys[1]) && strings.Contains(line, "403")
	}
	if !logged {
		t.Errorf("no error line naming %s and the 403:\n%s", keys[1], m.Stderr)
	}
}

// TestHTTPLatency: a sequential scan (every chunk file in grid order, one
// reader) through a mount whose server answers 20 ms late reaches at least
// 0.8x the throughput of the same scan with no delay: readahead keeps many
// GETs in flight, and lookups of the next files are answered by them.
func TestHTTPLatency(t *testing.T) {
	needMount(t)
	dir := t.TempDir()
	// 768 MiB decoded: throughput is a steady-state rate, and a short scan
	// is dominated by its fixed start (the first reads, before readahead
	// has seen a pattern, each wait for a round trip): at 192 chunks the
	// same mount measured 0.70-0.77x, at 768 0.94x.
	keys := writeBig(t, filepath.Join(dir, "big.zarr"), 768)
	readAll(t, filepath.Join(dir, "big.zarr"), keys) // into the page cache for nginx
	_, base := startNginx(t, dir)
	px := startProxy(t, base)
	// Speed is measured on zfuse as users run it: the race detector slows
	// the mount's own work several times, which hides request latency.
	bin, err := plainZfuse()
	if err != nil {
		t.Fatal(err)
	}
	scan := func(delay time.Duration) float64 {
		px.reset()
		px.delay.Store(int64(delay))
		m := startMount(t, bin, px.URL+"/big.zarr")
		defer m.stop(t, syscall.SIGTERM)
		start := time.Now()
		n := 0
		for _, b := range readAll(t, m.Dir, keys) {
			n += len(b)
		}
		mbs := float64(n) / time.Since(start).Seconds() / 1e6
		t.Logf("delay %v: %.0f MB/s, %d HEAD and %d GET requests", delay, mbs, px.count("HEAD", ""), px.count("GET", ""))
		return mbs
	}
	// Alternate the two, and keep the best of three each: the machine is
	// shared, and a busy moment should not decide.
	var fast, slow float64
	for range 3 {
		fast = max(fast, scan(0))
		slow = max(slow, scan(20*time.Millisecond))
	}
	msg := fmt.Sprintf("sequential scan of %d x 1 MiB chunks over HTTP: %.0f MB/s with no delay, %.0f MB/s with 20 ms per request (%.2fx)", len(keys), fast, slow, slow/fast)
	t.Log(msg)
	if slow < 0.8*fast {
		t.Error(msg + ", want >= 0.8x")
	}
}

// TestRemoteV3: zarrita.js's v3 store (sharded arrays presented unsharded,
// strings passed through) served by nginx (no consolidated metadata: the
// arrays named with --array) and by versitygw: every file of the local
// mount reads identically through both.
func TestRemoteV3(t *testing.T) {
	v3 := conformance(t, "zarrita.js/fixtures/v3/data.zarr")
	local := mount(t, v3)
	var files []string
	err := filepath.WalkDir(local.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, testutil.Must(filepath.Rel(local.Dir, p)))
		}
		return err
	})
	if err != nil || len(files) < 100 {
		t.Fatalf("%d files in the local mount: %v", len(files), err)
	}
	t.Run("http", func(t *testing.T) {
		_, base := startNginx(t, filepath.Dir(v3))
		var flags []string
		for _, de := range testutil.Must(os.ReadDir(v3)) {
			if de.IsDir() {
				flags = append(flags, "--array", de.Name())
			}
		}
		m := mount(t, base+"/data.zarr", flags...)
		sameFiles(t, local.Dir, m.Dir, files)
	})
	t.Run("s3", func(t *testing.T) {
		root := t.TempDir()
		copyTree(t, v3, filepath.Join(root, "conformance", "v3.zarr"))
		_, endpoint := startVersitygw(t, root)
		s3Setenv(t)
		m := mount(t, "s3://conformance/v3.zarr", "--s3-endpoint", endpoint, "--s3-path-style")
		sameFiles(t, local.Dir, m.Dir, files)
	})
}
