package integration

// Operations: background and fstab mounts, Prometheus metrics, warmup and
// the disk cache, each through real mounts of the built binary.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/internal/testutil"
)

// TestBackground: zfuse mount --background returns once the mount is ready
// (exit 0): the files read at once, served by a process in the background,
// which SIGTERM or fusermount3 -u stop cleanly, logging to --log-file.
func TestBackground(t *testing.T) {
	needMount(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "big.zarr")
	keys := writeBig(t, src, 4)
	local := mount(t, src)
	for _, stop := range []string{"SIGTERM", "fusermount3 -u"} {
		t.Run(stop, func(t *testing.T) {
			mnt, logf := t.TempDir(), filepath.Join(t.TempDir(), "zfuse.log")
			cleanupDaemon(t, mnt)
			_, stderr, err := run("mount", "--background", "--log-file", logf, src, mnt)
			if err != nil {
				t.Fatalf("zfuse mount --background: %v\n%s", err, stderr)
			}
			// Ready on return: no waiting here.
			if !isMounted(t, mnt) {
				t.Fatalf("%s is not mounted when zfuse mount --background returns", mnt)
			}
			sameFiles(t, local.Dir, mnt, append(keys, ".zarray"))
			pid := daemonPid(t, mnt)
			if pid == 0 {
				t.Fatal("no zfuse process serves the mount")
			}
			if stop == "SIGTERM" {
				syscall.Kill(pid, syscall.SIGTERM)
			} else if out, err := exec.Command("fusermount3", "-u", mnt).CombinedOutput(); err != nil {
				t.Fatalf("fusermount3 -u: %v\n%s", err, out)
			}
			waitExit(t, pid, time.Minute)
			if isMounted(t, mnt) {
				t.Errorf("%s is still mounted after zfuse exited", mnt)
			}
			checkLog(t, logf, "msg=mounted", "msg=unmounted")
		})
	}
	// Without --log-file the background mount logs to syslog; where there
	// is none (containers), the command says so before it returns.
	t.Run("syslog", func(t *testing.T) {
		mnt := t.TempDir()
		cleanupDaemon(t, mnt)
		_, stderr, err := run("mount", "-d", src, mnt)
		if err != nil || !isMounted(t, mnt) {
			t.Fatalf("zfuse mount -d: %v, mounted %v\n%s", err, isMounted(t, mnt), stderr)
		}
		_, noSyslog := os.Stat("/dev/log")
		if said := strings.Contains(string(stderr), "no syslog"); said != (noSyslog != nil) {
			t.Errorf("/dev/log: %v; stderr %q", noSyslog, stderr)
		}
		pid := daemonPid(t, mnt)
		exec.Command("fusermount3", "-u", mnt).Run()
		waitExit(t, pid, time.Minute)
	})
}

// TestAllowOther: only with --allow-other (-o allow_other) may another user
// read the mount (here: nobody, as root lets setpriv switch to it).
func TestAllowOther(t *testing.T) {
	needMount(t)
	testutil.Need(t, "root, to read as another user", os.Geteuid() == 0)
	setpriv, err := exec.LookPath("setpriv")
	testutil.Need(t, "setpriv (util-linux)", err == nil)
	dir := t.TempDir()
	src := filepath.Join(dir, "big.zarr")
	writeBig(t, src, 1)
	for _, flags := range [][]string{nil, {"--allow-other"}, {"-o", "ro,allow_other"}} {
		m := mount(t, src, flags...)
		openToAll(t, m.Dir)
		out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "cat", filepath.Join(m.Dir, ".zarray")).CombinedOutput()
		if allowed := flags != nil; allowed != (err == nil) {
			t.Errorf("zfuse mount %q: nobody reads .zarray: %v %s", flags, err, out)
		}
		m.stop(t, syscall.SIGTERM)
	}
}

// TestBackgroundFails: when the mount cannot be made, zfuse mount
// --background exits 1 with the reason, and leaves no process behind.
func TestBackgroundFails(t *testing.T) {
	needMount(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "big.zarr")
	writeBig(t, src, 1)
	busy := mount(t, src)
	for _, tc := range []struct {
		name string
		args []string // before SOURCE MOUNTPOINT
		src  string
		mnt  string // "": a new directory
		want string // in stderr
		exit int    // 1: the mount failed; 2: the command line is wrong
	}{
		{"no source", nil, filepath.Join(dir, "nothing.zarr"), "", "no such file", 1},
		{"busy mountpoint", nil, src, busy.Dir, "is busy", 1},
		{"no mountpoint", nil, src, filepath.Join(dir, "nowhere"), "no such file", 1},
		{"metrics address taken", []string{"--metrics", "256.0.0.1:1"}, src, "", "--metrics", 1},
		{"bad flag value", []string{"--cache-decoded", "lots"}, src, "", "invalid size", 2},
		{"bad option", []string{"-o", "cache_decided=1GiB"}, src, "", "unknown mount option", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := tc.mnt
			if mnt == "" {
				mnt = t.TempDir()
			}
			args := append(append([]string{"mount", "--background"}, tc.args...), tc.src, mnt)
			_, stderr, err := run(args...)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.exit {
				t.Fatalf("zfuse %q: %v, want exit status %d\n%s", args, err, tc.exit, stderr)
			}
			if !strings.Contains(string(stderr), tc.want) {
				t.Errorf("stderr %q lacks %q", stderr, tc.want)
			}
			if tc.mnt == "" && isMounted(t, mnt) {
				t.Errorf("%s is mounted", mnt)
			}
			if pid := daemonPid(t, mnt); pid != 0 && mnt != busy.Dir {
				t.Errorf("a zfuse process (pid %d) is left serving %s", pid, mnt)
			}
		})
	}
}

// TestFstab: an /etc/fstab line (given to mount -T) mounts through mount(8)
// and mount.fuse3, which runs zfuse SOURCE MOUNTPOINT -o OPTIONS; the
// options reach the flags (the budgets show in the metrics); umount
// stops it.
func TestFstab(t *testing.T) {
	needMount(t)
	_, err := exec.LookPath("mount.fuse3")
	testutil.Need(t, "mount.fuse3 (Debian's fuse3)", err == nil)
	testutil.Need(t, "root, for mount(8) of an fstab line", os.Geteuid() == 0)
	dir := t.TempDir()
	src := filepath.Join(dir, "big.zarr")
	keys := writeBig(t, src, 4)
	local := mount(t, src)
	mnt, logf, addr := t.TempDir(), filepath.Join(t.TempDir(), "zfuse.log"), testutil.FreeAddr(t)
	cleanupDaemon(t, mnt)
	// The "program#source" form names zfuse by its path: mount(8) runs
	// helpers with an empty PATH, so the fuse.zfuse form would need zfuse
	// installed in /usr/bin or /usr/local/bin.
	fstab := filepath.Join(t.TempDir(), "fstab")
	line := fmt.Sprintf("%s#%s %s fuse ro,_netdev,nofail,cache_decoded=64MiB,readahead=0,metrics=%s,log_file=%s 0 0\n", zfuse, src, mnt, addr, logf)
	if err := os.WriteFile(fstab, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-T", fstab, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount -T %s: %v\n%s\nfstab: %s", fstab, err, out, line)
	}
	if !isMounted(t, mnt) {
		t.Fatalf("%s is not mounted when mount returns", mnt)
	}
	sameFiles(t, local.Dir, mnt, keys)
	m := scrape(t, addr)
	if m[`zfuse_cache_budget_bytes{tier="decoded"}`] != 64<<20 || m[`zfuse_cache_budget_bytes{tier="readahead"}`] != 0 {
		t.Errorf("budgets decoded %v, readahead %v: want the -o values 64MiB and 0",
			m[`zfuse_cache_budget_bytes{tier="decoded"}`], m[`zfuse_cache_budget_bytes{tier="readahead"}`])
	}
	pid := daemonPid(t, mnt)
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v\n%s", err, out)
	}
	waitExit(t, pid, time.Minute)
	checkLog(t, logf, "msg=mounted", "msg=unmounted")
}

// TestMetrics: /metrics, scraped after each read of a scan through a mount
// of an HTTP store (readahead off, so each read is one chunk load), moves
// as the reads do: chunk reads, bytes served, decode batches, store
// requests, bytes held (none in the decoded tier on the page-cache paths,
// which let a chunk go once the kernel has it; every chunk under
// passthrough, whose memfds the tier keeps); a 503 is a retry, a 403 a
// store error and a chunk error; re-reads with the page cache dropped cost
// no store request (the decoded tier under passthrough, the compressed
// tier otherwise). The --stats-file written at unmount agrees.
func TestMetrics(t *testing.T) {
	needMount(t)
	dir := t.TempDir()
	keys := writeBig(t, filepath.Join(dir, "big.zarr"), 10)
	_, base := startNginx(t, dir)
	px := startProxy(t, base)
	px.failFirst("/big.zarr/" + keys[5])
	addr, stats := testutil.FreeAddr(t), filepath.Join(t.TempDir(), "stats.json")
	m := mount(t, px.URL+"/big.zarr", "--metrics", addr, "--readahead", "0", "--cache-decoded", "64MiB", "--stats-file", stats)
	const (
		reads   = "zfuse_chunk_reads_total"
		served  = "zfuse_served_bytes_total"
		batches = `zfuse_decode_batch_seconds_count{codec="zstd(level=1)",decoder="cpu"}`
		gets    = `zfuse_store_requests_total{backend="http",op="read"}`
		held    = `zfuse_cache_bytes{tier="decoded"}`
		hits    = `zfuse_cache_hits_total{tier="decoded"}`
		retries = `zfuse_store_retries_total{backend="http"}`
	)
	before := scrape(t, addr)
	passthrough := before[`zfuse_serving_path_info{path="passthrough"}`] == 1
	kept := 0.0 // decoded bytes kept per chunk read
	if passthrough {
		kept = 1 << 20
	}
	for i, k := range keys[:9] {
		if _, err := os.ReadFile(filepath.Join(m.Dir, k)); err != nil {
			t.Fatal(err)
		}
		got := scrape(t, addr)
		n := float64(i + 1)
		for name, want := range map[string]float64{reads: n, served: n * (1 << 20), batches: n, held: n * kept} {
			if got[name] != want {
				t.Errorf("after %d reads: %s = %v, want %v", i+1, name, got[name], want)
			}
		}
		if d := got[gets] - before[gets]; d != n {
			t.Errorf("after %d reads: %v store reads, want %v", i+1, d, n)
		}
		if want := float64(min(1, max(0, i-4))); got[retries] != want {
			t.Errorf("after %d reads (a 503 for %s): %s = %v, want %v", i+1, keys[5], retries, got[retries], want)
		}
	}
	mid := scrape(t, addr)
	// Each chunk READ's service time is in the histogram: none under
	// passthrough (the kernel reads the memfds), one or more per chunk
	// otherwise (the kernel's READs of a 1 MiB file).
	if n := mid["zfuse_fuse_chunk_read_seconds_count"]; passthrough && n != 0 || !passthrough && (n < 9 || n != mid[`zfuse_fuse_chunk_read_seconds_bucket{le="+Inf"}`]) {
		t.Errorf("READ service times: %v counted (+Inf bucket %v) for 9 chunks read", n, mid[`zfuse_fuse_chunk_read_seconds_bucket{le="+Inf"}`])
	}
	// The kernel sends RELEASE after close returns; under passthrough an
	// open before the last one's release is done shares its chunk file,
	// and reads no tier.
	released := func() {
		for deadline := time.Now().Add(10 * time.Second); scrape(t, addr)["zfuse_open_chunk_files"] != 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("chunk files still open 10 s after their last close")
			}
		}
	}
	for _, k := range keys[:9] {
		dropPageCache(t, filepath.Join(m.Dir, k))
		released()
		if _, err := os.ReadFile(filepath.Join(m.Dir, k)); err != nil {
			t.Fatal(err)
		}
		released()
	}
	after := scrape(t, addr)
	// Under passthrough every open is a read of the chunk (and dropping
	// the page cache opens the file too): two decoded-tier hits each.
	tier, wantHits := hits, 18.0
	if !passthrough {
		tier, wantHits = `zfuse_cache_hits_total{tier="compressed"}`, 9
	}
	if d := after[tier] - mid[tier]; d != wantHits {
		t.Errorf("re-reads: %v hits of %s, want %v", d, tier, wantHits)
	}
	if d := after[gets] - mid[gets]; d != 0 {
		t.Errorf("re-reads: %v store reads, want 0", d)
	}
	// Refused once its file has been looked up (the kernel keeps the
	// entry): the read's GET gets the 403.
	if _, err := os.Stat(filepath.Join(m.Dir, keys[9])); err != nil {
		t.Fatal(err)
	}
	px.deny.Store("/" + keys[9])
	if _, err := os.ReadFile(filepath.Join(m.Dir, keys[9])); !errors.Is(err, syscall.EIO) {
		t.Errorf("a chunk the server refuses: %v, want EIO", err)
	}
	failed := scrape(t, addr)
	if failed["zfuse_chunk_errors_total"] < 1 || failed[`zfuse_store_errors_total{backend="http",op="read"}`] != failed["zfuse_chunk_errors_total"] {
		t.Errorf("after a 403: chunk errors %v, store read errors %v; want at least 1, and as many store errors (one read per load)",
			failed["zfuse_chunk_errors_total"], failed[`zfuse_store_errors_total{backend="http",op="read"}`])
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", `zfuse_cache_budget_bytes{tier="compressed"}`} {
		if _, ok := failed[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	m.stop(t, syscall.SIGTERM)
	var doc struct {
		Stats struct{ Reads, DecodedHits int64 }
	}
	b, err := os.ReadFile(stats)
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err != nil || float64(doc.Stats.Reads) != failed[reads] || float64(doc.Stats.DecodedHits) != failed[hits] {
		t.Errorf("--stats-file: %+v, %v; the metrics said reads %v, decoded hits %v", doc.Stats, err, failed[reads], failed[hits])
	}
}

// TestWarmup: zfuse warmup decodes a slice, then a whole directory of
// stores, through the mount: the summary counts the chunk files; the
// mount's metrics show them read, and held where the serving path keeps
// them (the decoded tier's memfds under passthrough; the kernel's page
// cache on the other paths), and the summary says where they are;
// reading them afterwards decodes nothing. A chunk that does not decode
// fails warmup, naming it; a path that is not on a zfuse mount is refused.
func TestWarmup(t *testing.T) {
	needMount(t)
	dir := t.TempDir()
	writeBig(t, filepath.Join(dir, "x.zarr"), 8)
	ykeys := writeBig(t, filepath.Join(dir, "y.zarr"), 4)
	addr := testutil.FreeAddr(t)
	m := mount(t, dir, "--metrics", addr)
	out, stderr, err := run("warmup", "--metrics", addr, "--slice", "x.zarr[2:6]", m.Dir)
	if err != nil {
		t.Fatalf("zfuse warmup: %v\n%s%s", err, out, stderr)
	}
	t.Logf("%s", out)
	got := scrape(t, addr)
	passthrough := got[`zfuse_serving_path_info{path="passthrough"}`] == 1
	heldDecoded := "mount caches (serving no-open: a chunk leaves the decoded tier once the page cache holds all of it): decoded 0 B of 1 GiB"
	if p := got[`zfuse_serving_path_info{path="open"}`] == 1; p {
		heldDecoded = strings.Replace(heldDecoded, "no-open", "open", 1)
	}
	if passthrough {
		heldDecoded = "mount caches (serving passthrough: the decoded tier's memfds are what the kernel reads): decoded 4 MiB of 1 GiB"
	}
	if !strings.Contains(string(out), "4 chunk files of 1 array, 4 MiB read") || !strings.Contains(string(out), heldDecoded) {
		t.Errorf("summary, want %q:\n%s", heldDecoded, out)
	}
	if !passthrough && !strings.Contains(string(out), "page cache: 4 MiB of them resident (100.0% of those files' pages)") {
		t.Errorf("summary: the page cache does not hold the 4 MiB read:\n%s", out)
	}
	if strings.Contains(string(stderr), "[") {
		t.Errorf("a progress bar though stderr is no terminal: %q", stderr)
	}
	// Under passthrough every open reads the chunk: warmup opens each file
	// to read it and again to ask mincore what stayed.
	want, wantReads := 0.0, 4.0
	if passthrough {
		want, wantReads = 4<<20, 8
	}
	if got["zfuse_chunk_reads_total"] != wantReads || got[`zfuse_cache_bytes{tier="decoded"}`] != want {
		t.Errorf("after warming 4 chunks: chunk reads %v (want %v), decoded tier %v (want %v)", got["zfuse_chunk_reads_total"], wantReads, got[`zfuse_cache_bytes{tier="decoded"}`], want)
	}
	// Re-reads decode nothing: the page cache serves them (no chunk read
	// reaches the loader; nothing but memory pressure drops it, and then
	// the chunk decodes again), or under passthrough the decoded tier's
	// memfds (every chunk read a decoded-tier hit). The decode counter
	// itself proves nothing here: readahead may still be decoding chunks
	// 6 and 7 after warmup returns, and such a decode, counted after the
	// scrape above, once failed this test as if a re-read had decoded.
	const (
		reads = "zfuse_chunk_reads_total"
		hits  = `zfuse_cache_hits_total{tier="decoded"}`
	)
	var warmed []string
	for i := 2; i < 6; i++ {
		warmed = append(warmed, filepath.Join(m.Dir, "x.zarr", fmt.Sprintf("%d.0.0", i)))
	}
	held := 4 << 20 / os.Getpagesize()
	if !passthrough { // where an open does not read the chunk
		held = residentPages(t, warmed)
	}
	for _, p := range warmed {
		if b, err := os.ReadFile(p); err != nil || len(b) != 1<<20 {
			t.Fatalf("%s: %d bytes, %v", p, len(b), err)
		}
	}
	again := scrape(t, addr)
	wantReads = 0
	if passthrough {
		wantReads = 4
	}
	// Pages the kernel let go between warmup and the re-read (seen on a
	// loaded machine: 2 of 1024) come back through a READ each, decoded
	// again: at most that many chunk reads, then.
	missing := float64(4<<20/os.Getpagesize() - held)
	r, h := again[reads]-got[reads], again[hits]-got[hits]
	switch {
	case passthrough || missing == 0:
		if r != wantReads || h != r {
			t.Errorf("re-reading the warmed chunks: %v chunk reads, %v of them decoded-tier hits; want %v, all hits (nothing decoded)", r, h, wantReads)
		}
	case r > missing:
		t.Errorf("re-reading the warmed chunks: %v chunk reads; want at most one for each of the %v pages not in the page cache", r, missing)
	default:
		t.Logf("%v pages of the warmed chunks left the page cache before the re-read: %v chunk reads", missing, r)
	}
	out, stderr, err = run("warmup", "--jobs", "3", "--progress", m.Dir)
	if err != nil || !strings.Contains(string(out), "12 chunk files of 2 arrays") || !regexp.MustCompile(`page cache: [0-9.]+ [KMG]?i?B of them resident \([0-9.]+% of those files' pages\)`).Match(out) {
		t.Errorf("zfuse warmup of the directory: %v\n%s%s", err, out, stderr)
	}
	if !strings.Contains(string(stderr), "] 100% 12/12 chunk files") {
		t.Errorf("--progress drew no finished bar: %q", stderr)
	}
	m.stop(t, syscall.SIGTERM)

	// A corrupt chunk: warmup fails and names it; the others read.
	bad := filepath.Join(dir, "y.zarr", ykeys[1])
	if err := os.WriteFile(bad, []byte("not zstd"), 0o644); err != nil {
		t.Fatal(err)
	}
	m = mount(t, dir)
	out, stderr, err = run("warmup", filepath.Join(m.Dir, "y.zarr"))
	if err == nil || !strings.Contains(string(stderr), "1 chunk files did not read") || !strings.Contains(string(stderr), ykeys[1]) {
		t.Errorf("warmup over a corrupt chunk: %v\n%s%s", err, out, stderr)
	}
	if _, stderr, err := run("warmup", "--slice", "x.zarr[0:2:1]", m.Dir); err == nil || !strings.Contains(string(stderr), "steps") {
		t.Errorf("a slice with a step: %v, %s", err, stderr)
	}
	// The store itself is no mount: warming it would decode nothing.
	out, stderr, err = run("warmup", filepath.Join(dir, "x.zarr"))
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(stderr), "is not on a zfuse mount") || len(out) != 0 {
		t.Errorf("warmup of the store, not a mount: %v\n%s%s", err, out, stderr)
	}
}

// TestDiskCache: with --cache-dir, a mount of an HTTP store keeps chunks on
// local disk: re-reads in the same mount cost no request; the next mount
// validates each chunk with one bodiless request (304) and reads again only
// the one changed at the source; a second mount sharing the directory is
// refused; after a crash (SIGKILL) the next mount works and never serves
// an entry torn on disk (it reads that chunk again: one GET); with
// --cache-dir-max-age, chunks validated recently cost no request at all.
func TestDiskCache(t *testing.T) {
	needMount(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "big.zarr")
	keys := writeBig(t, src, 8)
	_, base := startNginx(t, dir)
	px := startProxy(t, base)
	cacheDir := t.TempDir()
	flags := []string{"--cache-dir", cacheDir, "--cache-dir-size", "64MiB", "--cache-compressed", "0", "--cache-decoded", "2MiB", "--readahead", "0"}
	url := px.URL + "/big.zarr"
	reread := func(m *mounted) {
		for _, k := range keys {
			dropPageCache(t, filepath.Join(m.Dir, k))
		}
		readAll(t, m.Dir, keys)
	}
	// Each mount asks once whether the array keeps legacy nested keys (a
	// HEAD of big.zarr/0: 404), as the HTTP store does without --cache-dir.
	const probe = "HEAD 404"
	expect := func(when string, want map[string]int) {
		t.Helper()
		got := px.takeStatuses()
		for k, n := range want {
			if got[k] != n {
				t.Errorf("%s: responses %v, want %v", when, got, want)
				return
			}
		}
		for k, n := range got {
			if want[k] != n {
				t.Errorf("%s: responses %v, want %v", when, got, want)
				return
			}
		}
	}

	px.takeStatuses()
	m1 := mount(t, url, flags...)
	local := mount(t, src)
	sameFiles(t, local.Dir, m1.Dir, keys)
	expect("first mount", map[string]int{probe: 1, "HEAD 200": 8, "GET 200": 8})
	reread(m1)
	expect("re-reading in the first mount", nil)

	_, stderr, err := run(append(append([]string{"mount"}, flags...), url, t.TempDir())...)
	if err == nil || !strings.Contains(string(stderr), "in use by another") {
		t.Errorf("a second mount on the same --cache-dir: %v\n%s", err, stderr)
	}
	m1.stop(t, syscall.SIGTERM)
	local.stop(t, syscall.SIGTERM)

	// Between the mounts, chunk 0 is rewritten at the source (chunk 1's
	// value, a minute later).
	b, err := os.ReadFile(filepath.Join(src, keys[1]))
	if err != nil {
		t.Fatal(err)
	}
	p0 := filepath.Join(src, keys[0])
	os.WriteFile(p0, b, 0o644)
	later := time.Now().Add(time.Minute)
	os.Chtimes(p0, later, later)

	px.takeStatuses()
	m2 := mount(t, url, flags...)
	local = mount(t, src)
	sameFiles(t, local.Dir, m2.Dir, keys)
	expect("second mount", map[string]int{probe: 1, "GET 304": 7, "GET 200": 1})
	reread(m2)
	expect("re-reading in the second mount", nil)

	// A crash, and an entry file torn as a crash mid-write could leave it.
	m2.cmd.Process.Kill()
	<-m2.exited
	exec.Command("fusermount3", "-u", "-z", m2.Dir).Run()
	entries, _ := filepath.Glob(filepath.Join(cacheDir, "zfuse-cache-v1", "[0-9a-f][0-9a-f]", "*"))
	if len(entries) != 8 {
		t.Fatalf("%d entry files in the cache directory, want 8", len(entries))
	}
	fi, _ := os.Stat(entries[3])
	os.Truncate(entries[3], fi.Size()/2)
	px.takeStatuses()
	m3 := mount(t, url, flags...)
	sameFiles(t, local.Dir, m3.Dir, keys)
	expect("after the crash", map[string]int{probe: 1, "GET 304": 7, "GET 200": 1})
	m3.stop(t, syscall.SIGTERM)
	if !strings.Contains(m3.Stderr.String(), "disk cache entry dropped") {
		t.Errorf("no log line about the torn entry:\n%s", m3.Stderr)
	}

	// --cache-dir-max-age: chunks validated within the hour cost nothing.
	m4 := mount(t, url, append(flags, "--cache-dir-max-age", "1h")...)
	sameFiles(t, local.Dir, m4.Dir, keys)
	expect("a mount with --cache-dir-max-age", map[string]int{probe: 1})
}

// BenchmarkDiskCacheRemount measures a sequential scan of 512 chunks of
// 1 MiB through a mount of an HTTP store behind a proxy that adds 20 ms to
// every request: the first mount (empty --cache-dir) against the second
// (the disk cache full: one bodiless request per chunk) and a third with
// --cache-dir-max-age (no request). Rounds alternate the three, each round
// with a new cache directory; it reports the medians of the rates and of
// the ratios to the first.
//
//	go test -run '^$' -bench DiskCacheRemount -benchtime 1x ./integration
func BenchmarkDiskCacheRemount(b *testing.B) {
	needMount(b)
	dir := b.TempDir()
	keys := writeBig(b, filepath.Join(dir, "big.zarr"), 512)
	_, base := startNginx(b, dir)
	px := startProxy(b, base)
	px.delay.Store(int64(20 * time.Millisecond))
	bin, err := plainZfuse()
	if err != nil {
		b.Fatal(err)
	}
	scan := func(cacheDir string, flags ...string) (float64, map[string]int) {
		px.takeStatuses()
		m := startMount(b, bin, px.URL+"/big.zarr", append([]string{"--cache-dir", cacheDir, "--cache-dir-size", "1GiB"}, flags...)...)
		defer m.stop(b, syscall.SIGTERM)
		start := time.Now()
		n := 0
		for _, k := range keys {
			v, err := os.ReadFile(filepath.Join(m.Dir, k))
			if err != nil {
				b.Fatal(err)
			}
			n += len(v)
		}
		return float64(n) / time.Since(start).Seconds() / 1e6, px.takeStatuses()
	}
	var first, second, aged, ratio, agedRatio []float64
	for range 3 {
		c := b.TempDir()
		f, fc := scan(c)
		s, sc := scan(c)
		a, ac := scan(c, "--cache-dir-max-age", "1h")
		b.Logf("first mount %.0f MB/s %v; second %.0f MB/s %v (%.2fx); with --cache-dir-max-age %.0f MB/s %v (%.2fx)",
			f, fc, s, sc, s/f, a, ac, a/f)
		first, second, aged = append(first, f), append(second, s), append(aged, a)
		ratio, agedRatio = append(ratio, s/f), append(agedRatio, a/f)
	}
	med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(med(first), "first-MB/s")
	b.ReportMetric(med(second), "second-MB/s")
	b.ReportMetric(med(aged), "max-age-MB/s")
	b.ReportMetric(med(ratio), "second/first")
	b.ReportMetric(med(agedRatio), "max-age/first")
	b.Logf("second/first %.2f, max-age/first %.2f", ratio, agedRatio)
}

// residentPages counts the pages of files in the page cache (mincore over
// a read-only mapping of each).
func residentPages(t *testing.T, files []string) int {
	t.Helper()
	n := 0
	for _, p := range files {
		for _, v := range pageMap(t, p) {
			n += int(v & 1)
		}
	}
	return n
}

// pageMap returns mincore(2)'s map of the file at path: a byte a page,
// bit 0 set where the page is in the page cache. Mapping a file and asking
// reads nothing of it: no request reaches a FUSE server.
func pageMap(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 {
		f.Close()
		return nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	return vec
}
