package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/cache"
	"github.com/zfuse/zfuse/fs"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/zarr"
)

// benchPy writes the stores (numcodecs must write the compressed bytes)
// and times zarr-python's reads.
//
//go:embed bench.py
var benchPy []byte

// The stores a bench run reads, by name: subdirectories of the store
// directory, each a Zarr v2 array at its root with the same values.
const (
	storeBlosc = "blosc.zarr" // Blosc(lz4, clevel 5, shuffle)
	storeZstd  = "zstd.zarr"  // Zstd(level 3)
	storeRaw   = "raw.zarr"   // uncompressed
)

// bench is zfuse bench: it writes (or takes) the stores, mounts each with
// this binary's zfuse mount, and prints what it measured as a table.
func bench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("zfuse bench", flag.ContinueOnError)
	fl.SetOutput(stderr)
	b := &bencher{out: stdout, progress: stderr, lf: addLoaderFlags(fl), size: 1 << 30}
	fl.StringVar(&b.stores, "store", "", "read the stores written by an earlier run (with --keep) in this directory instead of writing new ones")
	fl.StringVar(&b.dir, "dir", "", "where to write the stores (default: a new directory in $TMPDIR)")
	fl.BoolVar(&b.keep, "keep", false, "keep the stores written, for --store")
	fl.Var(&b.size, "size", "decoded size of the array written (a multiple of 4 MiB)")
	fl.StringVar(&b.python, "python", "/usr/bin/python3", "Python with zarr 2.13 and numcodecs 0.11")
	fl.IntVar(&b.runs, "runs", 3, "runs of each measurement; the table shows the best")
	if err := parseFlags(fl, args, 0, stdout); err != nil { // usage.go: help to stdout, bad usage exits 2
		return err
	}
	if b.lf.decoder == gpu.GPU {
		// Fail now, not after writing the stores, where every mount would.
		dec, err := b.lf.decoders(nil, true)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		dec.Close()
	}
	b.runs = max(b.runs, 1)
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: finding zfuse itself: %w", err)
	}
	b.exe, b.cores = exe, runtime.NumCPU()
	work, err := os.MkdirTemp("", "zfuse-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	b.work = work
	wrote := b.stores == ""
	defer func() {
		if wrote && !b.keep && b.stores != "" {
			os.RemoveAll(b.stores)
		}
	}()
	return b.run(ctx)
}

// A bencher is one zfuse bench run.
type bencher struct {
	// Set from flags.
	stores, dir string
	keep        bool
	size        cache.Size
	python      string
	runs        int
	lf          *loaderFlags

	out, progress io.Writer
	exe           string // this binary
	cores         int    // CPUs, for the zstd target
	load          string // the load average when the measurements began
	work          string // scratch: mountpoints, stats files, bench.py
	mounts        int    // mountpoints made

	// Learnt from the stores.
	shape, chunks []int
	keys          []string         // chunk keys in C order
	stored        map[string]int64 // bytes of chunk files by store
	raw           int64            // decoded bytes of all chunks
}

// run does the measurements and prints the table. Every rate is the best
// of --runs runs, and the runs are interleaved (all of run 1, then all of
// run 2, ...), so that a burst of load elsewhere on the machine does not
// spoil every run of one measurement.
func (b *bencher) run(ctx context.Context) error {
	if err := b.prepare(ctx); err != nil {
		return err
	}
	b.load = loadAvg()
	r := &benchResults{
		mount:    map[string]*[2]float64{storeRaw: {}, storeBlosc: {}, storeZstd: {}},
		oneCore:  map[string]float64{},
		pyMount:  map[string]float64{},
		pyDirect: map[string]float64{},
		rss:      map[string]int64{},
		cpu:      map[string]time.Duration{},
	}
	// One core's decode speed, in this process, on the stored chunks.
	for _, name := range []string{storeBlosc, storeZstd} {
		gbs, err := b.oneCore(name)
		if err != nil {
			return err
		}
		r.oneCore[name] = gbs
		b.say("one-core decode, %s: %.2f GB/s", name, gbs)
	}
	for run := range b.runs {
		b.say("run %d of %d", run+1, b.runs)
		if err := b.coldScans(ctx, r, run == 0); err != nil {
			return err
		}
		if err := b.pythonReads(ctx, r); err != nil {
			return err
		}
	}
	if err := b.tmpfs(ctx, r); err != nil {
		return err
	}
	// Strided and random reads, with readahead's counters.
	for _, p := range []struct {
		name string
		keys []string
		into *patternResult
	}{
		{"strided", b.stridedKeys(), &r.strided},
		{"random", b.randomKeys(), &r.random},
	} {
		err := b.mounted(ctx, storeBlosc, p.name, r, func(mnt string) error {
			n, d, err := scan(ctx, mnt, p.keys)
			p.into.gbs, p.into.bytes, p.into.chunks = float64(n)/d.Seconds()/1e9, n, len(p.keys)
			b.say("%s scan via mount (%d chunks): %.2f GB/s", p.name, len(p.keys), p.into.gbs)
			return err
		}, &p.into.stats)
		if err != nil {
			return err
		}
	}
	b.report(r)
	return nil
}

// coldScans measures (a), (b), (c) and the zstd scan once: each a fresh
// mount (nothing decoded, no page cache of the mount), with the store's
// own files in the page cache, then dropped from it. On the first run it
// also re-reads the Blosc mount warm and checks what it read.
func (b *bencher) coldScans(ctx context.Context, r *benchResults, first bool) error {
	for col, cached := range []bool{true, false} {
		if err := b.source(storeRaw, cached, r); err != nil {
			return err
		}
		n, d, err := scan(ctx, filepath.Join(b.stores, storeRaw), b.keys)
		if err != nil {
			return err
		}
		r.direct[col] = max(r.direct[col], b.rate("uncompressed files, direct", cached, n, d))
		for _, name := range []string{storeRaw, storeBlosc, storeZstd} {
			if err := b.source(name, cached, r); err != nil {
				return err
			}
			err := b.mounted(ctx, name, coldLabel(name, cached), r, func(mnt string) error {
				n, d, err := scan(ctx, mnt, b.keys)
				if err != nil {
					return err
				}
				r.mount[name][col] = max(r.mount[name][col], b.rate("cold scan via mount, "+name, cached, n, d))
				if name != storeBlosc || !cached {
					return nil
				}
				// The same mount again: the page cache serves it.
				for range b.runs {
					n, d, err = scan(ctx, mnt, b.keys)
					if err != nil {
						return err
					}
					r.warm = max(r.warm, b.rate("warm re-read via mount (page cache)", cached, n, d))
				}
				if first {
					return b.verify(mnt)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// pythonReads measures (d) once: zarr-python reading each compressed
// store through a fresh mount, and decoding it itself.
func (b *bencher) pythonReads(ctx context.Context, r *benchResults) error {
	for _, name := range []string{storeBlosc, storeZstd} {
		if err := b.source(name, true, r); err != nil {
			return err
		}
		err := b.mounted(ctx, name, "zarr-python "+name, r, func(mnt string) error {
			gbs, err := b.zarrPython(ctx, mnt)
			r.pyMount[name] = max(r.pyMount[name], gbs)
			b.say("zarr-python via mount, %s: %.2f GB/s", name, gbs)
			return err
		})
		if err != nil {
			return err
		}
		gbs, err := b.zarrPython(ctx, filepath.Join(b.stores, name))
		if err != nil {
			return err
		}
		r.pyDirect[name] = max(r.pyDirect[name], gbs)
		b.say("zarr-python decoding %s itself: %.2f GB/s", name, gbs)
	}
	return nil
}

// benchResults are the measurements. Rates are GB/s (1e9 bytes per
// second); [2] arrays are {source in the page cache, dropped from it}.
type benchResults struct {
	direct          [2]float64               // (c) uncompressed files read directly
	mount           map[string]*[2]float64   // (a), (b), zstd: cold scans via mount, by store
	warm, shm       float64                  // warm re-read via mount; the same bytes from tmpfs
	oneCore         map[string]float64       // one core's decode speed, by store
	pyMount         map[string]float64       // (d) zarr-python via mount
	pyDirect        map[string]float64       // (d) zarr-python decoding the store itself
	strided, random patternResult            // (e)
	rss             map[string]int64         // (f) peak RSS (VmHWM) of each mount
	cpu             map[string]time.Duration // CPU time of each mount, the least over runs
	resident        float64                  // the most of a store's pages left in memory after dropping
}

// coldLabel names the mount of a cold scan in benchResults.rss.
func coldLabel(name string, cached bool) string {
	if cached {
		return "cold " + name
	}
	return "cold " + name + " dropped"
}

type patternResult struct {
	gbs    float64
	bytes  int64
	chunks int
	stats  readahead.Stats
}

// prepare writes the stores (or checks the given ones) and learns their
// shape and chunk keys.
func (b *bencher) prepare(ctx context.Context) error {
	py := filepath.Join(b.work, "bench.py")
	if err := os.WriteFile(py, benchPy, 0o644); err != nil {
		return err
	}
	if b.stores == "" {
		dir := b.dir
		if dir == "" {
			d, err := os.MkdirTemp("", "zfuse-bench-stores-")
			if err != nil {
				return err
			}
			dir = d
		}
		b.stores = dir
		b.say("writing the stores with %s into %s (%s decoded each)...", b.python, dir, b.size)
		cmd := exec.CommandContext(ctx, b.python, py, "write", dir, strconv.FormatInt(int64(b.size), 10))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("bench: writing the stores: %v\n%s", err, out)
		}
	}
	zarray, err := os.ReadFile(filepath.Join(b.stores, storeRaw, zarr.ArrayFile))
	if err != nil {
		return fmt.Errorf("bench: %w (--store must hold %s/, %s/ and %s/ as written by zfuse bench --keep)", err, storeBlosc, storeZstd, storeRaw)
	}
	a, err := zarr.ParseV2(zarray)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	b.shape, b.chunks = a.Shape, a.Chunks
	if len(b.shape) != 3 {
		return fmt.Errorf("bench: the array is %d-D, want 3-D", len(b.shape))
	}
	for i := range a.NumChunks() {
		b.keys = append(b.keys, a.ChunkKey(a.Coords(i)))
	}
	b.raw = a.NumChunks() * a.ChunkLen()
	b.stored = map[string]int64{}
	for _, name := range []string{storeBlosc, storeZstd, storeRaw} {
		for _, k := range b.keys {
			fi, err := os.Stat(filepath.Join(b.stores, name, k))
			if err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			b.stored[name] += fi.Size()
		}
	}
	return nil
}

func (b *bencher) say(format string, args ...any) {
	fmt.Fprintf(b.progress, "bench: "+format+"\n", args...)
}

// rate prints and returns n bytes in d as GB/s.
func (b *bencher) rate(what string, cached bool, n int64, d time.Duration) float64 {
	gbs := float64(n) / d.Seconds() / 1e9
	src := "store in page cache"
	if !cached {
		src = "store dropped from page cache"
	}
	b.say("%s (%s): %s in %v: %.2f GB/s", what, src, cache.FormatSize(n), d.Round(time.Millisecond), gbs)
	return gbs
}

// files returns the paths of the chunk files of a store.
func (b *bencher) files(name string) []string {
	out := make([]string, len(b.keys))
	for i, k := range b.keys {
		out[i] = filepath.Join(b.stores, name, k)
	}
	return out
}

// source puts the chunk files of a store in the page cache (cached) or
// drops them from it. Dropping uses posix_fadvise(DONTNEED) on those files
// only, which needs no root and leaves the rest of the machine's page cache
// alone; mincore says how much stayed (the most is kept in r.resident).
func (b *bencher) source(name string, cached bool, r *benchResults) error {
	files := b.files(name)
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		if cached {
			_, err = io.Copy(io.Discard, f)
		} else if err = unix.Fdatasync(int(f.Fd())); err == nil {
			// Dirty pages (a store just written) cannot be dropped.
			err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("bench: %s: %w", p, err)
		}
	}
	if !cached {
		in, err := resident(files)
		if err != nil {
			return fmt.Errorf("bench: mincore: %w", err)
		}
		r.resident = max(r.resident, in)
	}
	return nil
}

// resident returns the fraction of the pages of files in the page cache.
func resident(files []string) (float64, error) {
	var in, all int
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return 0, err
		}
		fi, err := f.Stat()
		if err != nil || fi.Size() == 0 {
			f.Close()
			continue
		}
		m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
		f.Close()
		if err != nil {
			return 0, err
		}
		vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
		_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
		unix.Munmap(m)
		if errno != 0 {
			return 0, errno
		}
		for _, v := range vec {
			in += int(v & 1)
		}
		all += len(vec)
	}
	if all == 0 {
		return 0, nil
	}
	return float64(in) / float64(all), nil
}

// scan reads the files keys under root in order, each whole, with one
// reader and a 1 MiB buffer, and returns the bytes read and the time taken.
func scan(ctx context.Context, root string, keys []string) (int64, time.Duration, error) {
	buf := make([]byte, 1<<20)
	var n int64
	start := time.Now()
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return n, 0, err
		}
		f, err := os.Open(filepath.Join(root, k))
		if err != nil {
			return n, 0, err
		}
		for {
			m, err := f.Read(buf)
			n += int64(m)
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return n, 0, err
			}
		}
		f.Close()
	}
	return n, time.Since(start), nil
}

// oneCore measures how fast one goroutine decodes the chunks of a store,
// on up to 64 chunks held in memory, for at least half a second.
func (b *bencher) oneCore(name string) (float64, error) {
	meta, err := os.ReadFile(filepath.Join(b.stores, name, zarr.ArrayFile))
	if err != nil {
		return 0, err
	}
	a, err := zarr.ParseV2(meta)
	if err != nil {
		return 0, err
	}
	var srcs [][]byte
	for _, p := range b.files(name)[:min(64, len(b.keys))] {
		src, err := os.ReadFile(p)
		if err != nil {
			return 0, err
		}
		srcs = append(srcs, src)
	}
	dst := make([]byte, 0, a.ChunkLen())
	var n int64
	start := time.Now()
	for n == 0 || time.Since(start) < 500*time.Millisecond {
		for _, src := range srcs {
			out, err := a.DecodeChunk(dst[:0], src)
			if err != nil {
				return 0, fmt.Errorf("bench: decoding %s: %w", name, err)
			}
			n += int64(len(out))
		}
	}
	return float64(n) / time.Since(start).Seconds() / 1e9, nil
}

// A benchMount is one zfuse mount process.
type benchMount struct {
	dir, stats string
	cmd        *exec.Cmd
	stderr     bytes.Buffer
	exited     chan struct{}
	err        error
}

// mounted mounts store name with this binary, runs f on the mountpoint,
// unmounts, and records the mount's peak RSS under label (and its counters
// in st, if given).
func (b *bencher) mounted(ctx context.Context, name, label string, r *benchResults, f func(mnt string) error, st ...*readahead.Stats) error {
	b.mounts++
	m := &benchMount{
		dir:    filepath.Join(b.work, fmt.Sprintf("mnt%d", b.mounts)),
		stats:  filepath.Join(b.work, fmt.Sprintf("stats%d.json", b.mounts)),
		exited: make(chan struct{}),
	}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		return err
	}
	args := append([]string{"mount", "--log-level", "warn", "--stats-file", m.stats}, b.lf.args()...)
	m.cmd = exec.Command(b.exe, append(args, filepath.Join(b.stores, name), m.dir)...)
	m.cmd.Stderr = &m.stderr
	if err := m.cmd.Start(); err != nil {
		return err
	}
	go func() { m.err = m.cmd.Wait(); close(m.exited) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
		case <-time.After(time.Minute):
			m.cmd.Process.Kill()
			<-m.exited
			return fmt.Errorf("bench: zfuse mount did not stop within a minute of SIGTERM\n%s", &m.stderr)
		}
		if m.err != nil {
			return fmt.Errorf("bench: zfuse mount: %v\n%s", m.err, &m.stderr)
		}
		return nil
	}
	defer stop()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if on, _ := fs.Mounted(m.dir); on {
			break
		}
		select {
		case <-m.exited:
			return fmt.Errorf("bench: zfuse mount exited: %v\n%s", m.err, &m.stderr)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: zfuse mount did not mount within a minute\n%s", &m.stderr)
		}
	}
	if err := f(m.dir); err != nil {
		return err
	}
	hwm, err := vmHWM(m.cmd.Process.Pid)
	if err != nil {
		return err
	}
	r.rss[label] = max(r.rss[label], hwm)
	cpu, err := cpuTime(m.cmd.Process.Pid)
	if err != nil {
		return err
	}
	b.say("mount for %s: peak RSS %s, CPU %.2f s", label, mib(hwm), cpu.Seconds())
	if old, ok := r.cpu[label]; !ok || cpu < old {
		r.cpu[label] = cpu
	}
	if err := stop(); err != nil {
		return err
	}
	if len(st) > 0 {
		doc, err := os.ReadFile(m.stats)
		if err != nil {
			return fmt.Errorf("bench: the mount's stats: %w", err)
		}
		var s statsDoc
		if err := json.Unmarshal(doc, &s); err != nil {
			return fmt.Errorf("bench: the mount's stats: %w", err)
		}
		*st[0] = s.Stats
	}
	return nil
}

// cpuTime returns the CPU time (user and system) process pid has used.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseCPUTime(string(b))
}

// parseCPUTime reads utime and stime (fields 14 and 15, in clock ticks of
// 1/100 s, Linux's USER_HZ) from a /proc/PID/stat line. The command name
// (field 2) may hold spaces, so fields are counted after its ")".
func parseCPUTime(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	f := strings.Fields(stat[i+1:])
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("bench: /proc/PID/stat: %q", stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc/PID/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// vmHWM returns the peak resident set size of process pid.
func vmHWM(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseVmHWM(f)
}

// parseVmHWM finds "VmHWM: N kB" in a /proc/PID/status.
func parseVmHWM(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no VmHWM line")
}

// verify checks that every chunk file of the mount equals the
// uncompressed store's.
func (b *bencher) verify(mnt string) error {
	for _, k := range b.keys {
		got, err := os.ReadFile(filepath.Join(mnt, k))
		if err != nil {
			return err
		}
		want, err := os.ReadFile(filepath.Join(b.stores, storeRaw, k))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("bench: %s read through the mount differs from the uncompressed store", k)
		}
	}
	b.say("verified: all %d chunk files read through the mount equal the uncompressed store's", len(b.keys))
	return nil
}

// tmpfs copies the uncompressed chunk files to /dev/shm and reads them
// there: the page cache's speed without FUSE.
func (b *bencher) tmpfs(ctx context.Context, r *benchResults) error {
	dir, err := os.MkdirTemp("/dev/shm", "zfuse-bench-")
	if err != nil {
		b.say("no tmpfs at /dev/shm: %v", err)
		return nil
	}
	defer os.RemoveAll(dir)
	for _, k := range b.keys {
		src, err := os.ReadFile(filepath.Join(b.stores, storeRaw, k))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, k), src, 0o644)
		}
		if err != nil {
			return err
		}
	}
	for range b.runs {
		n, d, err := scan(ctx, dir, b.keys)
		if err != nil {
			return err
		}
		r.shm = max(r.shm, float64(n)/d.Seconds()/1e9)
		b.say("the same bytes from tmpfs (/dev/shm): %.2f GB/s", float64(n)/d.Seconds()/1e9)
	}
	return nil
}

// zarrPython times zarr-python reading the whole array at path.
func (b *bencher) zarrPython(ctx context.Context, path string) (float64, error) {
	cmd := exec.CommandContext(ctx, b.python, filepath.Join(b.work, "bench.py"), "read", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("bench: zarr-python reading %s: %v\n%s", path, err, &stderr)
	}
	var res struct {
		Seconds float64 `json:"seconds"`
		Bytes   int64   `json:"bytes"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, fmt.Errorf("bench: zarr-python printed %q: %w", out, err)
	}
	return float64(res.Bytes) / res.Seconds / 1e9, nil
}

// stridedKeys walks axis 0 for each chunk position of the other axes: a
// constant step of grid[1]*grid[2] in linear chunk index.
func (b *bencher) stridedKeys() []string {
	g := b.grid()
	out := make([]string, 0, len(b.keys))
	for j := range g[1] * g[2] {
		for i := range g[0] {
			out = append(out, b.keys[i*g[1]*g[2]+j])
		}
	}
	return out
}

// randomKeys is a quarter of the chunks (at least 16), in random order
// (a fixed seed: every run reads the same).
func (b *bencher) randomKeys() []string {
	r := rand.New(rand.NewPCG(1, 2))
	perm := r.Perm(len(b.keys))
	out := make([]string, 0, len(b.keys)/4)
	for _, i := range perm[:min(len(b.keys), max(16, len(b.keys)/4))] {
		out = append(out, b.keys[i])
	}
	return out
}

func (b *bencher) grid() []int {
	g := make([]int, len(b.shape))
	for i := range g {
		g[i] = (b.shape[i] + b.chunks[i] - 1) / b.chunks[i]
	}
	return g
}

// report prints the setting, the table of rates and the targets.
func (b *bencher) report(r *benchResults) {
	lf := b.lf
	fmt.Fprintf(b.out, "zfuse bench, %s: %s, %d cores, %s/%s, %s\n",
		time.Now().Format("2006-01-02 15:04 MST"), cpuModel(), b.cores, runtime.GOOS, runtime.GOARCH, runtime.Version())
	chunkLen := int64(4)
	for _, c := range b.chunks {
		chunkLen *= int64(c)
	}
	fmt.Fprintf(b.out, "array: float32 %s = %s decoded, %d chunks of %s (%s)\n",
		dims(b.shape), cache.FormatSize(b.raw), len(b.keys), cache.FormatSize(chunkLen), dims(b.chunks))
	ratio := func(name string) float64 { return float64(b.raw) / float64(max(b.stored[name], 1)) }
	fmt.Fprintf(b.out, "stored: blosc lz4 clevel 5 shuffle %s (ratio %.2f), zstd level 3 %s (ratio %.2f), uncompressed %s\n",
		human(b.stored[storeBlosc]), ratio(storeBlosc), human(b.stored[storeZstd]), ratio(storeZstd), human(b.stored[storeRaw]))
	kra := "kernel default (not root)"
	if os.Geteuid() == 0 && lf.kernelReadahead > 0 {
		kra = lf.kernelReadahead.String()
	}
	fmt.Fprintf(b.out, "mount: --decoder %s, --workers %d, budgets decoded %s, compressed %s, readahead %s; kernel readahead %s\n",
		lf.decoder, lf.workers, lf.decoded, lf.compressed, lf.readahead, kra)
	fmt.Fprintf(b.out, "load average (1, 5, 15 min) at the start %s, at the end %s\n", b.load, loadAvg())
	fmt.Fprintf(b.out, "best of %d runs; cold runs: a fresh mount each; \"store dropped\": the store's files dropped from the page cache (fadvise DONTNEED, %.1f%% left)\n\n", b.runs, 100*r.resident)

	rate := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f GB/s", v)
	}
	rss := func(label string) string {
		v, ok := r.rss[label]
		if !ok {
			return ""
		}
		c, ok := r.cpu[label]
		if !ok {
			return mib(v) + "\t"
		}
		return fmt.Sprintf("%s\t%.2f s", mib(v), c.Seconds())
	}
	w := tabwriter.NewWriter(b.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\tstore cached\tstore dropped\tmount peak RSS\tmount CPU\t")
	fmt.Fprintf(w, "(a) cold scan via mount, blosc-lz4\t%s\t%s\t%s\t\n", rate(r.mount[storeBlosc][0]), rate(r.mount[storeBlosc][1]), rss(coldLabel(storeBlosc, true)))
	fmt.Fprintf(w, "(b) cold scan via mount, uncompressed (FUSE ceiling)\t%s\t%s\t%s\t\n", rate(r.mount[storeRaw][0]), rate(r.mount[storeRaw][1]), rss(coldLabel(storeRaw, true)))
	fmt.Fprintf(w, "(c) uncompressed files read directly\t%s\t%s\t\t\n", rate(r.direct[0]), rate(r.direct[1]))
	fmt.Fprintf(w, "    cold scan via mount, zstd\t%s\t%s\t%s\t\n", rate(r.mount[storeZstd][0]), rate(r.mount[storeZstd][1]), rss(coldLabel(storeZstd, true)))
	fmt.Fprintf(w, "    one-core decode in Go: blosc-lz4 / zstd\t%s\t%s\t\t\n", rate(r.oneCore[storeBlosc]), rate(r.oneCore[storeZstd]))
	fmt.Fprintf(w, "(d) zarr-python via mount, blosc-lz4 / zstd\t%s\t%s\t%s\t\n", rate(r.pyMount[storeBlosc]), rate(r.pyMount[storeZstd]), rss("zarr-python "+storeBlosc))
	fmt.Fprintf(w, "(d) zarr-python decoding the store, blosc-lz4 / zstd\t%s\t%s\t\t\n", rate(r.pyDirect[storeBlosc]), rate(r.pyDirect[storeZstd]))
	fmt.Fprintf(w, "(e) strided scan (axis 0) via mount, %d chunks\t%s\t\t%s\t\n", r.strided.chunks, rate(r.strided.gbs), rss("strided"))
	fmt.Fprintf(w, "(e) random chunks via mount, %d chunks\t%s\t\t%s\t\n", r.random.chunks, rate(r.random.gbs), rss("random"))
	fmt.Fprintf(w, "    warm re-read via mount (page cache)\t%s\t\t\t\n", rate(r.warm))
	fmt.Fprintf(w, "    the same bytes from tmpfs (/dev/shm)\t%s\t\t\t\n", rate(r.shm))
	w.Flush()

	fmt.Fprintln(b.out)
	w = tabwriter.NewWriter(b.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "target\tmeasured\twanted\t\t")
	for _, t := range b.targets(r) {
		verdict := "met"
		if !t.ok {
			verdict = "NOT MET"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t\n", t.name, t.got, t.want, verdict)
	}
	w.Flush()
}

// A benchTarget is one of the targets, as measured.
type benchTarget struct {
	name, got, want string
	ok              bool
}

// targets compares the results with the targets of the readahead issue.
// Rates are those with the store in the page cache, where FUSE and the
// decoder, not the disk, set the pace.
func (b *bencher) targets(r *benchResults) []benchTarget {
	x := func(v float64) string { return fmt.Sprintf("%.2fx", v) }
	pct := func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
	ceiling := r.mount[storeRaw][0]
	cores := float64(b.cores)
	zstdBound := min(ceiling, cores*r.oneCore[storeZstd])
	a := r.mount[storeBlosc][0] / ceiling
	z := r.mount[storeZstd][0] / zstdBound
	py := r.pyMount[storeBlosc] / r.pyDirect[storeBlosc]
	hits := float64(r.strided.stats.PrefetchUsed) / float64(max(r.strided.stats.Reads, 1))
	st := r.random.stats
	waste := float64(st.PrefetchedBytes-st.PrefetchUsedBytes) / float64(max(r.random.bytes, 1))
	var peak int64
	var peakAt string
	for label, v := range r.rss {
		if v > peak {
			peak, peakAt = v, label
		}
	}
	limit := int64(b.lf.decoded) + int64(b.lf.compressed) + 64<<20
	warm := r.warm / r.shm
	return []benchTarget{
		{"(a) cold blosc-lz4 scan / (b) FUSE ceiling", x(a), ">= 0.90x", a >= 0.9},
		{fmt.Sprintf("zstd scan / min(ceiling, %d cores x one-core zstd = %.2f GB/s)", int(cores), zstdBound), x(z), ">= 0.90x", z >= 0.9},
		{"(d) zarr-python via mount / decoding itself (blosc-lz4)", x(py), ">= 2x", py >= 2},
		{fmt.Sprintf("(e) strided: reads served by prefetch (%d of %d)", r.strided.stats.PrefetchUsed, r.strided.stats.Reads), pct(hits), ">= 90%", hits >= 0.9},
		{fmt.Sprintf("(e) random: prefetched, never read (%s of %s read)", human(st.PrefetchedBytes-st.PrefetchUsedBytes), human(r.random.bytes)), pct(waste), "<= 10%", waste <= 0.1},
		{"(f) peak RSS (" + peakAt + ")", mib(peak), "<= " + mib(limit) + " (decoded + compressed + 64 MiB)", peak <= limit},
		{"warm re-read via mount / tmpfs", x(warm), ">= 0.90x", warm >= 0.9},
	}
}

// mib formats a byte count in whole MiB, rounded up: RSS against a budget.
func mib(n int64) string { return fmt.Sprintf("%d MiB", (n+1<<20-1)>>20) }

// loadAvg returns the 1, 5 and 15 minute load averages: other work on the
// machine takes cores from the mount and the readers.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// cpuModel returns the CPU's model name from /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
