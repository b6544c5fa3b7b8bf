package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

// A memory cgroup this test made, under the test's own part of the
// hierarchy, and removed when it ends.
type memCgroup struct {
	dir     string // /sys/fs/cgroup/memory/.../zfuse-test-N or /sys/fs/cgroup/.../zfuse-test-N
	version int
	limit   int64
}

// newMemCgroup makes a memory cgroup limited to limit bytes (no swap) and
// removes it at the end of the test, killing what is left in it. On
// cgroup v1 it is a child of the test's own memory cgroup; on v2 a child
// of the nearest cgroup above the test's that hands the memory controller
// down (a v2 cgroup with processes in it cannot). It skips, or fails in
// CI, where none can be made.
func newMemCgroup(t *testing.T, limit int64) *memCgroup {
	t.Helper()
	c, err := makeMemCgroup(limit)
	testutil.Need(t, fmt.Sprintf("a memory cgroup the test can make (root, cgroup v1 or v2 with the memory controller): %v", err), err == nil)
	t.Cleanup(func() {
		// Whatever is left in it (a reader, a hog the test did not wait
		// for) goes first: a cgroup with processes cannot be removed.
		for range 50 {
			b, _ := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
			pids := strings.Fields(string(b))
			if len(pids) == 0 {
				break
			}
			for _, p := range pids {
				if pid, err := strconv.Atoi(p); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			time.Sleep(20 * time.Millisecond) // polling the kernel's view of the cgroup
		}
		if err := os.Remove(c.dir); err != nil {
			t.Errorf("removing the test's memory cgroup: %v", err)
		}
	})
	return c
}

var cgroupSeq struct {
	sync.Mutex
	n int
}

func makeMemCgroup(limit int64) (*memCgroup, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	var v1, v2 string
	hasV1, hasV2 := false, false
	for line := range strings.Lines(string(b)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2, hasV2 = f[2], true
		}
		for c := range strings.SplitSeq(f[1], ",") {
			if c == "memory" {
				v1, hasV1 = f[2], true
			}
		}
	}
	cgroupSeq.Lock()
	cgroupSeq.n++
	name := fmt.Sprintf("zfuse-test-%d-%d", os.Getpid(), cgroupSeq.n)
	cgroupSeq.Unlock()
	var c *memCgroup
	switch {
	case hasV1:
		parent := filepath.Join("/sys/fs/cgroup/memory", v1)
		if _, err := os.Stat(filepath.Join(parent, "memory.limit_in_bytes")); err != nil {
			return nil, fmt.Errorf("cgroup v1: %w", err)
		}
		c = &memCgroup{dir: filepath.Join(parent, name), version: 1, limit: limit}
	case hasV2:
		root := "/sys/fs/cgroup"
		if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
			root = "/sys/fs/cgroup/unified"
		}
		parent := ""
		for d := filepath.Dir(filepath.Join(root, v2)); strings.HasPrefix(d, root); d = filepath.Dir(d) {
			sub, err := os.ReadFile(filepath.Join(d, "cgroup.subtree_control"))
			if err == nil && strings.Contains(" "+strings.TrimSpace(string(sub))+" ", " memory ") {
				parent = d
				break
			}
		}
		if parent == "" {
			return nil, fmt.Errorf("cgroup v2: no cgroup above %s hands down the memory controller", v2)
		}
		c = &memCgroup{dir: filepath.Join(parent, name), version: 2, limit: limit}
	default:
		return nil, errors.New("no memory cgroup in /proc/self/cgroup")
	}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		return nil, err
	}
	files := map[string]string{"memory.limit_in_bytes": strconv.FormatInt(limit, 10)}
	if c.version == 2 {
		files = map[string]string{"memory.max": strconv.FormatInt(limit, 10), "memory.swap.max": "0"}
	}
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(c.dir, name), []byte(v), 0); err != nil && !(name == "memory.swap.max" && errors.Is(err, os.ErrNotExist)) {
			os.Remove(c.dir)
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return c, nil
}

// command returns the command that runs name with args inside the cgroup
// from its first instruction: a shell that moves itself in, then execs.
func (c *memCgroup) command(name string, args ...string) *exec.Cmd {
	return exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(c.dir, "cgroup.procs"), name}, args...)...)
}

// counters returns the cgroup's peak usage and OOM kills so far.
func (c *memCgroup) counters(t *testing.T) (peak, oomKills int64) {
	t.Helper()
	peakFile, events, key := "memory.max_usage_in_bytes", "memory.oom_control", "oom_kill"
	if c.version == 2 {
		peakFile, events = "memory.peak", "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(c.dir, peakFile))
	if err == nil {
		peak, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	if err != nil {
		t.Fatalf("the cgroup's peak usage: %v", err)
	}
	b, err = os.ReadFile(filepath.Join(c.dir, events))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			oomKills, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return peak, oomKills
}

// watch samples the cgroup's working set (its usage less its file pages,
// which the kernel reclaims rather than kill: the page cache a mount
// pushes chunks into is charged to it, and fills a cgroup to its limit
// as any reading does) every 5 ms until the returned function is called,
// which returns the largest sample.
func (c *memCgroup) watch(t *testing.T) (peak func() int64) {
	t.Helper()
	usage, active, inactive := "memory.usage_in_bytes", "total_active_file", "total_inactive_file"
	if c.version == 2 {
		usage, active, inactive = "memory.current", "active_file", "inactive_file"
	}
	sample := func() (int64, bool) {
		u, err1 := os.ReadFile(filepath.Join(c.dir, usage))
		st, err2 := os.ReadFile(filepath.Join(c.dir, "memory.stat"))
		if err1 != nil || err2 != nil {
			return 0, false
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(string(u)), 10, 64)
		for line := range strings.Lines(string(st)) {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && (k == active || k == inactive) {
				f, _ := strconv.ParseInt(v, 10, 64)
				n -= f
			}
		}
		return n, true
	}
	stop := make(chan struct{})
	done := make(chan int64)
	go func() {
		var max int64
		tick := time.NewTicker(5 * time.Millisecond) // a measurement, not a wait
		defer tick.Stop()
		for {
			if n, ok := sample(); ok && n > max {
				max = n
			}
			select {
			case <-stop:
				done <- max
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 { close(stop); return <-done }
}

// memStore writes a zarr-python store of n chunks of 1 MiB (512x512
// float32, Blosc-LZ4 with shuffle, about half as large stored) into dir
// and a manifest of each chunk's decoded CRC-32 (zlib's), and reads the
// store's files once, so that the page cache holds them charged to this
// test and not to a mount's cgroup.
const memStoreScript = `
import sys, json, zlib, numpy as np, numcodecs, zarr
out, n = sys.argv[1], int(sys.argv[2])
z = zarr.open(out + "/a.zarr", mode="w", shape=(n, 512, 512), chunks=(1, 512, 512), dtype="<f4",
              compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))
rng = np.random.default_rng(7)
base = np.linspace(0, 6, 512 * 512, dtype=np.float32).reshape(512, 512)
crc = []
for i in range(n):
    a = (base + i + 0.01 * rng.standard_normal((512, 512), dtype=np.float32)).astype("<f4")
    z[i] = a
    crc.append(zlib.crc32(a.tobytes()))
json.dump({"crc": crc}, open(out + "/manifest.json", "w"))
`

var memStores struct {
	sync.Mutex
	dirs map[int]string
}

// memStore returns the directory holding a.zarr of n chunks and its
// manifest.json, written once per test binary.
func memStore(t *testing.T, n int) string {
	t.Helper()
	needPython(t)
	memStores.Lock()
	defer memStores.Unlock()
	if d, ok := memStores.dirs[n]; ok {
		return d
	}
	d := filepath.Join(tmp, fmt.Sprintf("memlimit-%d", n), "mem") // nginx serves mem/, versitygw the bucket mem
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(testutil.Python, "-c", memStoreScript, d, fmt.Sprint(n)).CombinedOutput(); err != nil {
		t.Fatalf("writing the store: %v\n%s", err, out)
	}
	if memStores.dirs == nil {
		memStores.dirs = map[int]string{}
	}
	memStores.dirs[n] = d
	return d
}

// warmPageCache reads every file under dir, so that the page cache holds
// them charged to this process's cgroup: a mount's own reads of a local
// store then charge nothing to the cgroup the test made (page cache is
// charged to who brings it in, and would fill a cgroup to its limit).
func warmPageCache(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// memReader reads chunk files [lo, hi) of the array at MNT (keys i.0.0)
// in order (with "drop", each dropped from the page cache first, so that
// every read reaches the mount), and checks each against the manifest's
// CRC; it prints a JSON
// summary. Any error (EIO, ENOTCONN from a killed mount, ENOENT, which a
// reader like zarr-python would turn into fill values) is a bad read.
const memReader = `
import os, sys, json, zlib
mnt, manifest, lo, hi, drop = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "drop"
crc = json.load(open(manifest))["crc"]
bad = []
for i in range(lo, hi):
    try:
        with open(f"{mnt}/{i}.0.0", "rb") as f:
            if drop:  # read through the mount, not the page cache
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            b = f.read()
    except OSError as e:
        bad.append(f"{i}.0.0: {e}")
        continue
    if len(b) != 1 << 20 or zlib.crc32(b) != crc[i]:
        bad.append(f"{i}.0.0: wrong bytes ({len(b)} bytes)")
print(json.dumps({"reads": hi - lo, "bad": len(bad), "examples": bad[:5]}))
`

// scanAll has readers processes read a share each of the n chunk files at
// dir at once, checking every byte, and returns the reads and the bad ones
// with a few examples. drop has them drop each file's pages first.
func scanAll(t *testing.T, dir, manifest string, n, readers int, drop bool) (reads, bad int, examples []string) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for r := range readers {
		wg.Go(func() {
			lo, hi := r*n/readers, (r+1)*n/readers
			how := "keep"
			if drop {
				how = "drop"
			}
			out, err := exec.Command(testutil.Python, "-c", memReader, dir, manifest, fmt.Sprint(lo), fmt.Sprint(hi), how).Output()
			var res struct {
				Reads, Bad int
				Examples   []string
			}
			if err == nil {
				err = json.Unmarshal(out, &res)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				bad += hi - lo
				examples = append(examples, fmt.Sprintf("reader %d: %v %s", r, err, out))
				return
			}
			reads += res.Reads
			bad += res.Bad
			examples = append(examples, res.Examples...)
		})
	}
	wg.Wait()
	return reads, bad, examples
}

// TestMemoryLimit: a mount started with default flags in a memory cgroup
// of 256 MiB (made for the test, on cgroup v1 or v2, and removed after)
// finds the limit, says so in its first log line, and sizes its budgets
// to it; four readers at once then scan an array of 1 GiB, four times the
// limit, through it, from a local directory, nginx (HTTP) and versitygw
// (S3), on the serving path of $ZFUSE_SERVING as CI runs each: every
// chunk reads right, no process in the cgroup is killed for memory, the
// cgroup's working set (its usage less the page cache, which the kernel
// reclaims rather than kill) stays under 90% of its limit, and the mount
// exits cleanly after. (The usage itself may reach the limit: the chunks
// the mount pushes into the kernel's page cache are charged to it, and
// page cache fills a cgroup as any reading does.) It runs the plain
// build, as users do (the race detector's shadow memory is several times
// the heap).
//
// Then a cgroup gets a neighbour (a process taking 60% of the limit, as
// a training job that grows would) after a scan, and the readers scan
// again: the mount sheds its caches, and nobody is killed. (Under
// passthrough, where the mount holds its budgets in memfds after a scan,
// the neighbour and the mount's caches do not fit together: without
// shedding the kernel kills one of them.)
func TestMemoryLimit(t *testing.T) {
	needMount(t)
	const limit, chunks, readers = 256 << 20, 1024, 4
	dir := memStore(t, chunks)
	manifest := filepath.Join(dir, "manifest.json")
	bin, err := plainZfuse()
	if err != nil {
		t.Fatal(err)
	}
	// check scans the array through m and checks the reads and the
	// cgroup's memory: no OOM kill, and, when the mount is alone in it
	// (within), a working set under 90% of the limit.
	check := func(t *testing.T, cg *memCgroup, m *mounted, what string, drop bool, within float64) {
		t.Helper()
		began := time.Now()
		ws := cg.watch(t)
		reads, bad, examples := scanAll(t, m.Dir, manifest, chunks, readers, drop)
		wsPeak := ws()
		took := time.Since(began)
		peak, kills := cg.counters(t)
		t.Logf("%s: %d reads, %d bad in %v (%.0f MB/s); the cgroup's peak working set %d MiB of %d MiB (usage with page cache %d MiB), %d OOM kills",
			what, reads, bad, took.Round(time.Millisecond), float64(reads)*(1<<20)/took.Seconds()/1e6, wsPeak>>20, int64(limit)>>20, peak>>20, kills)
		if reads != chunks || bad != 0 {
			t.Errorf("%s: %d of %d chunks read, %d bad: %q", what, reads, chunks, bad, examples)
		}
		if kills != 0 {
			t.Errorf("%s: %d processes in the cgroup killed for memory\n%s", what, kills, tail(m.Stderr.String(), 20))
		}
		if float64(wsPeak) >= within*limit {
			t.Errorf("%s: the cgroup's working set peaked at %d MiB, over %.0f%% of its limit", what, wsPeak>>20, within*100)
		}
		if wsPeak < 32<<20 {
			t.Errorf("%s: the cgroup's working set peaked at %d MiB: the mount was not charged to it", what, wsPeak>>20)
		}
		select {
		case <-m.exited:
			t.Fatalf("%s: the mount exited: %v\n%s", what, m.err, tail(m.Stderr.String(), 20))
		default:
		}
	}
	start := func(t *testing.T, cg *memCgroup, src string, flags ...string) *mounted {
		t.Helper()
		mnt := t.TempDir()
		m := startMountCmd(t, mnt, cg.command(bin, mountArgs(src, mnt, flags...)...))
		t.Cleanup(func() {
			select {
			case <-m.exited: // killed: its mount is left, stale
				exec.Command("fusermount3", "-u", "-z", mnt).Run()
			default:
			}
		})
		first, _, _ := strings.Cut(m.Stderr.String(), "\n")
		if want := fmt.Sprintf(`msg="memory limit" limit="256 MiB" from="cgroup v%d %s"`, cg.version, cg.dir); !strings.Contains(first, want) {
			t.Errorf("the mount's first log line is %q; want it to hold %q", first, want)
		}
		return m
	}

	t.Run("local", func(t *testing.T) {
		cg := newMemCgroup(t, limit)
		warmPageCache(t, dir)
		m := start(t, cg, filepath.Join(dir, "a.zarr"))
		check(t, cg, m, "local", false, 0.9)
	})
	t.Run("http", func(t *testing.T) {
		cg := newMemCgroup(t, limit)
		_, base := startNginx(t, dir)
		warmPageCache(t, dir)
		m := start(t, cg, base+"/a.zarr")
		check(t, cg, m, "nginx", false, 0.9)
	})
	t.Run("s3", func(t *testing.T) {
		cg := newMemCgroup(t, limit)
		_, endpoint := startVersitygw(t, filepath.Dir(dir))
		s3Setenv(t)
		warmPageCache(t, dir)
		m := start(t, cg, "s3://mem/a.zarr", "--s3-endpoint", endpoint, "--s3-path-style")
		check(t, cg, m, "versitygw", false, 0.9)
	})
	t.Run("neighbour", func(t *testing.T) {
		cg := newMemCgroup(t, limit)
		warmPageCache(t, dir)
		m := start(t, cg, filepath.Join(dir, "a.zarr"))
		check(t, cg, m, "before the neighbour", false, 0.9)
		hog := cg.command(testutil.Python, "-c", memHog, fmt.Sprint(limit*6/10))
		var hogErr bytes.Buffer
		hog.Stderr = &hogErr
		out, err := hog.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := hog.Start(); err != nil {
			t.Fatal(err)
		}
		hogDone := make(chan error, 1)
		held := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(out).ReadString('\n')
			held <- line
			hogDone <- hog.Wait()
		}()
		select {
		case line := <-held:
			if !strings.HasPrefix(line, "holding") {
				_, kills := cg.counters(t)
				t.Fatalf("the neighbour did not take its memory: %v, %d processes in the cgroup killed for memory\n%s", <-hogDone, kills, hogErr.String())
			}
			t.Logf("the neighbour: %s", strings.TrimSpace(line))
		case <-time.After(30 * time.Second):
			t.Fatal("the neighbour took no memory for 30 s")
		}
		check(t, cg, m, "with the neighbour", true, 1) // every read reaches the mount again
		if err := hog.Process.Signal(syscall.SIGTERM); err != nil {
			t.Error(err)
		}
		if err := <-hogDone; err != nil {
			t.Errorf("the neighbour: %v (killed for memory?)\n%s", err, hogErr.String())
		}
		if !m.Stderr.waitFor(5*time.Second, holding("memory pressure: shedding caches")) {
			t.Errorf("the mount did not shed its caches with the neighbour holding 60%% of the limit:\n%s", tail(m.Stderr.String(), 20))
		}
	})
}

// memHog takes N bytes of memory 8 MiB at a time (touching every page),
// one step every 100 ms (80 MiB/s), then says "holding" and holds it until
// SIGTERM.
const memHog = `
import sys, time, signal
n = int(sys.argv[1])
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
bufs = []
while len(bufs) * (8 << 20) < n:
    b = bytearray(8 << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    bufs.append(b)
    time.sleep(0.1)
print("holding", len(bufs) * 8, "MiB", flush=True)
while True:
    time.sleep(1)
`
