package main

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/internal/bench"
	"github.com/zfuse/zfuse/internal/bytesize"
	"github.com/zfuse/zfuse/zarr"
)

// benchPy writes the stores (numcodecs must write the compressed bytes)
// and runs the Python readers: zarr-python and a PyTorch DataLoader.
//
//go:embed bench.py
var benchPy []byte

// The stores of one chunk size, by name: subdirectories of its store
// directory, each a Zarr v2 array at its root with the same values.
const (
	storeBlosc = "blosc.zarr" // Blosc(lz4, clevel 5, shuffle)
	storeZstd  = "zstd.zarr"  // Zstd(level 3)
	storeRaw   = "raw.zarr"   // uncompressed
)

// The readers of the matrix.
const (
	readGrid   = "files-grid" // open, read whole, close each chunk file, in chunk-grid order
	readList   = "files-list" // the same in listing order (os.ReadDir: sorted by name)
	readZarr   = "zarr"       // zarr-python, plane by plane
	readLoader = "loader"     // a PyTorch DataLoader, 2 worker processes, shuffled planes
	readRemote = "zarr-http"  // zarr-python, plane by plane, from a store served over HTTP with --latency (bench_remote.go)
	readNpy    = "npy"        // the array's .npy file under --as-npy, read whole in order (1 MiB reads)
	readMap    = "npy-map"    // the first eighth of the array along axis 0 through np.load(mmap_mode='r') of its .npy file
	readPy     = "files-py"   // Python's open().read() of each chunk file, in grid order: zarr-python's reads without its decode
	readDask   = "dask"       // the array's mean with dask (da.from_zarr, dask's threads)
)

// allReaders are the readers of the matrix, in order.
var allReaders = []string{readGrid, readList, readPy, readZarr, readDask, readLoader, readRemote, readNpy, readMap}

// The sources a reader reads.
const (
	viaMount = "mount" // the compressed store through zfuse mount
	viaSelf  = "self"  // the compressed store directly: the reader decodes (Python readers)
	viaRaw   = "raw"   // the array stored uncompressed, from the page cache: the ceiling
	viaFloor = "floor" // the FUSE floor: a minimal FUSE server that holds the bytes (bench_floor.go)
	viaHTTP  = "http"  // the compressed store over HTTP, read by zarr-python with fsspec: it decodes
)

// runBench is zfuse bench: it writes (or takes) the stores, then reads them
// with each reader of the matrix, through fresh mounts of this binary and
// directly, in interleaved rounds, and prints the medians as a table.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	b, err := parseBench(args, stdout, stderr)
	if err != nil {
		return err
	}
	if err := b.check(ctx); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: finding zfuse itself: %w", err)
	}
	b.exe = exe
	work, err := os.MkdirTemp("", "zfuse-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	b.work = work
	defer func() {
		if !b.keep {
			b.removeWritten()
		}
	}()
	return b.run(ctx)
}

// parseBench parses the flags of zfuse bench.
func parseBench(args []string, stdout, stderr io.Writer) (*bencher, error) {
	fl := flag.NewFlagSet("zfuse bench", flag.ContinueOnError)
	fl.SetOutput(stderr)
	b := &bencher{out: stdout, progress: stderr, lf: addLoaderFlags(fl), size: 256 << 20}
	fl.StringVar(&b.stores, "store", "", "read the stores written by an earlier run (with --keep) in this directory instead of writing new ones")
	fl.StringVar(&b.dir, "dir", "", "where to write the stores, in a subdirectory per chunk size (default: a new directory in $TMPDIR); without --keep only what the run wrote there is removed")
	fl.Var((*boolFlag)(&b.keep), "keep", "keep the stores written, for --store")
	fl.Var(&b.size, "size", "decoded size of each array written (planes of 4 MiB)")
	fl.StringVar(&b.python, "python", "/usr/bin/python3", "Python with zarr 2.13, numcodecs 0.11 and torch")
	b.runs, b.epochs, b.latency = 3, 3, 20*time.Millisecond
	fl.Var((*countFlag)(&b.runs), "runs", "rounds of the whole matrix; the table shows the median and the range")
	fl.Var((*countFlag)(&b.epochs), "epochs", "epochs each reader reads in one mount (epoch 1 is cold)")
	fl.Var((*durationFlag)(&b.latency), "latency", "zarr-http: the time the bench's HTTP server waits before answering each request")
	one := func(words ...string) func(string) error {
		return func(s string) error { return choice(new(string), words...).Set(s) }
	}
	listFlag(fl, "readers", strings.Join(allReaders, ","), "readers to run, comma-separated", &b.readers, one(allReaders...))
	listFlag(fl, "codecs", "blosc,zstd", "compressed stores to read, comma-separated", &b.codecs, one("blosc", "zstd"))
	listFlag(fl, "chunks", "1MiB,64KiB", "chunk sizes, comma-separated (square planes of float32: 1MiB is 512x512, 64KiB 128x128)", &b.chunkSizes,
		func(s string) error { _, err := chunkSide(s); return err })
	listFlag(fl, "servings", "auto", "serving paths to mount with, comma-separated: each reader's mount is repeated on each", &b.servings,
		func(s string) error { _, err := fusemount.ParseServing(s); return err })
	listFlag(fl, "transports", "auto", "FUSE transports to mount with (auto, uring, dev), comma-separated: each reader's mount is repeated on each; the floor uses the first", &b.transports,
		func(s string) error { _, err := fusemount.ParseTransport(s); return err })
	if err := parseFlags(fl, args, 0, stdout); err != nil { // usage.go: help to stdout, bad usage exits 2
		return nil, err
	}
	return b, nil
}

// listFlag defines a comma-separated flag into *into, each of whose items
// check accepts.
func listFlag(fl *flag.FlagSet, name, def, usage string, into *[]string, check func(string) error) {
	*into = strings.Split(def, ",")
	fl.Func(name, usage+" (default "+def+")", func(s string) error {
		items := strings.Split(s, ",")
		for _, it := range items {
			if err := check(it); err != nil {
				return err
			}
		}
		*into = items
		return nil
	})
}

// check fails early, before the stores are written, on what would fail
// every reader or mount later: zarr-http without its Python packages, a
// --decoder gpu that cannot start.
func (b *bencher) check(ctx context.Context) error {
	if slices.Contains(b.readers, readRemote) {
		if err := b.checkRemotePython(ctx); err != nil { // bench_remote.go
			return err
		}
	}
	if b.lf.decoder == gpu.GPU {
		dec, err := b.lf.decoders(nil, true)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		dec.Close()
	}
	return nil
}

// removeWritten removes what this run wrote, and nothing else: the
// directories it made for the stores, deepest first (a directory it made
// for --dir only if nothing else is in it now).
func (b *bencher) removeWritten() {
	for i := len(b.wrote) - 1; i >= 0; i-- {
		if i == 0 && b.madeTop {
			os.Remove(b.wrote[i])
			continue
		}
		os.RemoveAll(b.wrote[i])
	}
}

// A bencher is one zfuse bench run.
type bencher struct {
	// Set from flags.
	stores, dir string
	keep        bool
	size        Size
	python      string
	runs        int
	epochs      int
	latency     time.Duration
	readers     []string
	codecs      []string
	chunkSizes  []string
	servings    []string
	transports  []string
	lf          *loaderFlags

	out, progress io.Writer
	exe           string     // this binary
	work          string     // scratch: mountpoints, stats files, bench.py
	mounts        int        // mountpoints made
	start, load   string     // when the measurements began, and the load average then
	http          *benchHTTP // serves the stores for zarr-http; nil without it

	sets    []*storeSet // one per chunk size
	res     *benchResults
	wrote   []string // directories this run made, in order: removed at the end without --keep
	madeTop bool     // wrote[0] is the stores' directory itself, made for this run
}

// A storeSet is the three stores of one chunk size.
type storeSet struct {
	name          string // the chunk size as given: "1MiB"
	dir           string // holds blosc.zarr, zstd.zarr, raw.zarr
	shape, chunks []int
	chunkLen      int64
	keys          []string         // chunk keys in grid (C) order
	stored        map[string]int64 // bytes of chunk files, by store
}

// chunkSide returns the side of square float32 chunks of the size s.
func chunkSide(s string) (int, error) {
	n, err := bytesize.Parse(s)
	side := 1
	for int64(side*side*4) < n {
		side *= 2
	}
	if err != nil || int64(side*side*4) != n || side > 1024 {
		return 0, fmt.Errorf("bench: chunk size %q: want 4 x a power of 4 bytes, up to 4MiB (64KiB, 1MiB)", s)
	}
	return side, nil
}

// run prepares the stores, runs the matrix --runs times, interleaved (all
// of round 1, then all of round 2, ...: a burst of load elsewhere on the
// machine then spoils one sample of each cell, not every sample of one),
// and prints the report.
func (b *bencher) run(ctx context.Context) error {
	if err := b.prepare(ctx); err != nil {
		return err
	}
	if slices.Contains(b.readers, readRemote) {
		h, err := startHTTP(b.stores, b.latency) // bench_remote.go
		if err != nil {
			return err
		}
		defer h.close()
		b.http = h
	}
	b.res = newBenchResults()
	b.start, b.load = time.Now().UTC().Format("2006-01-02 15:04 MST"), loadAvg()
	for round := range b.runs {
		b.say("round %d of %d", round+1, b.runs)
		for _, set := range b.sets {
			if err := b.round(ctx, set); err != nil {
				return err
			}
		}
	}
	b.report()
	return nil
}

// round reads every cell of the matrix for one chunk size once.
func (b *bencher) round(ctx context.Context, set *storeSet) error {
	for _, reader := range b.readers {
		if reader == readRemote {
			if err := b.remote(ctx, set); err != nil { // bench_remote.go
				return err
			}
			continue
		}
		// The ceiling, the FUSE floor, and each reader decoding the
		// stores itself; the readers of .npy files have no ceiling (the
		// store holds no .npy file), and their floor serves one.
		if reader != readNpy && reader != readMap {
			if err := b.direct(ctx, set, reader, viaRaw, storeRaw); err != nil {
				return err
			}
		}
		if err := b.viaFloor(ctx, set, reader); err != nil { // bench_floor.go
			return err
		}
		for _, codec := range b.codecs {
			if reader == readZarr || reader == readLoader || reader == readDask {
				if err := b.direct(ctx, set, reader, viaSelf, codec+".zarr"); err != nil {
					return err
				}
			}
			for _, serving := range b.servings {
				for _, transport := range b.transports {
					if err := b.viaMount(ctx, set, reader, codec, serving, transport); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// direct reads a store with reader, without a mount.
func (b *bencher) direct(ctx context.Context, set *storeSet, reader, via, store string) error {
	if err := bench.WarmDir(filepath.Join(set.dir, store)); err != nil {
		return err
	}
	codec := strings.TrimSuffix(store, ".zarr")
	if via == viaRaw {
		codec = ""
	}
	epochs, err := b.read(ctx, set, reader, filepath.Join(set.dir, store), nil)
	if err != nil {
		return err
	}
	b.res.Add(cell{set.name, codec, reader, via, "", ""}, epochs)
	b.say("%s %s %s %s: %s", set.name, reader, via, store, epochString(epochs))
	return nil
}

// viaMount reads a compressed store through a fresh mount on serving and
// transport: of the store's directory, or for zarr-http of its URL. The
// requests that reach the mount are counted epoch by epoch.
func (b *bencher) viaMount(ctx context.Context, set *storeSet, reader, codec, serving, transport string) error {
	store := filepath.Join(set.dir, codec+".zarr")
	if err := bench.WarmDir(store); err != nil {
		return err
	}
	source := store
	var requests int64
	if reader == readRemote {
		source, requests = b.http.storeURL(set, codec), b.http.requests.Load()
	}
	var view []string
	if reader == readNpy || reader == readMap {
		view = []string{"--as-npy"}
	}
	m, err := b.mount(ctx, source, serving, transport, view...)
	if err != nil {
		return err
	}
	counts, rerr := m.requests()
	var perEpoch []map[string]int64
	var epochs []float64
	if rerr == nil {
		epochs, rerr = b.read(ctx, set, reader, m.dir, func(int) error {
			now, err := m.requests()
			perEpoch = append(perEpoch, minus(now, counts))
			counts = now
			return err
		})
	}
	if rerr == nil && reader == readGrid {
		rerr = b.verify(set, m.dir)
	}
	st, serr := m.stop()
	if err := errors.Join(rerr, serr); err != nil {
		return err
	}
	st.epochRequests = perEpoch
	c := cell{set.name, codec, reader, viaMount, serving, transport}
	b.res.Add(c, epochs)
	b.res.addMount(c, st)
	remote := ""
	if reader == readRemote {
		remote = fmt.Sprintf("; %d requests", b.http.requests.Load()-requests)
	}
	b.say("%s %s mount(%s, %s) %s: %s; mount: peak RSS %s + memfds and pushed %s, CPU %.2f s, %d chunks pushed, %d chunk READs (p50 %v, p99 %v)%s; requests per chunk read by epoch: %s",
		set.name, reader, st.serving, st.transport, codec, epochString(epochs), bytesize.Format(st.hwm), bytesize.Format(st.memfdPeak), st.cpu.Seconds(),
		st.pushed, st.reads.Count, seconds(st.reads.Quantile(0.5)), seconds(st.reads.Quantile(0.99)), remote, requestsString(perEpoch, chunksRead(set, reader)))
	return nil
}

// minus returns a - b, key by key, without the zeros.
func minus(a, b map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range a {
		if v-b[k] != 0 {
			d[k] = v - b[k]
		}
	}
	return d
}

// chunksRead is how many chunks one epoch of reader reads from set: all of
// them, but for npy-map (the first eighth of the array along axis 0).
func chunksRead(set *storeSet, reader string) int64 {
	if reader != readMap || len(set.shape) == 0 {
		return int64(len(set.keys))
	}
	rows := max(1, set.shape[0]/8) // as bench.py npymap reads
	n := int64((rows + set.chunks[0] - 1) / set.chunks[0])
	for i := 1; i < len(set.shape); i++ {
		n *= int64((set.shape[i] + set.chunks[i] - 1) / set.chunks[i])
	}
	return n
}

// requestsString shows requests per chunk read epoch by epoch, the most
// frequent first: "IOCTL 1.00 LOOKUP 1.00 READ 0.12 | IOCTL 1.00".
func requestsString(perEpoch []map[string]int64, chunks int64) string {
	var epochs []string
	for _, m := range perEpoch {
		epochs = append(epochs, perChunk(m, chunks))
	}
	return strings.Join(epochs, " | ")
}

// perChunk shows one epoch's requests per chunk read, the most frequent
// first, leaving out those under 0.005 a chunk; "none" when nothing is
// left.
func perChunk(m map[string]int64, chunks int64) string {
	ops := slices.Collect(maps.Keys(m))
	slices.SortFunc(ops, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	var parts []string
	for _, op := range ops {
		if x := float64(m[op]) / float64(max(chunks, 1)); x >= 0.005 {
			parts = append(parts, fmt.Sprintf("%s %.2f", op, x))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// read runs reader on the array at root for --epochs epochs and returns
// each epoch's rate.
//
// after, if not nil, is called after each epoch, outside its time.
func (b *bencher) read(ctx context.Context, set *storeSet, reader, root string, after func(epoch int) error) ([]float64, error) {
	switch reader {
	case readGrid:
		return bench.ReadEpochs(ctx, root, set.keys, b.epochs, after)
	case readList:
		names, err := listChunks(root)
		if err != nil {
			return nil, err
		}
		return bench.ReadEpochs(ctx, root, names, b.epochs, after)
	case readZarr, readRemote: // root: a directory, or for zarr-http a URL
		return b.python3(ctx, after, "zarr", root, strconv.Itoa(b.epochs))
	case readPy:
		return b.python3(ctx, after, "files", root, strconv.Itoa(b.epochs))
	case readDask:
		return b.python3(ctx, after, "dask", root, strconv.Itoa(b.epochs))
	case readNpy, readMap:
		// The store is an array at its root: its .npy file is the one
		// file at the mount's root that ends in .npy.
		es, err := os.ReadDir(root)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(es, func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), ".npy") })
		if i < 0 {
			return nil, fmt.Errorf("bench: no .npy file in %s", root)
		}
		if reader == readMap {
			return b.python3(ctx, after, "npymap", filepath.Join(root, es[i].Name()), strconv.Itoa(b.epochs))
		}
		return bench.ReadEpochs(ctx, root, []string{es[i].Name()}, b.epochs, after)
	}
	return b.python3(ctx, after, "loader", root, strconv.Itoa(b.epochs), "2")
}

// prepare writes the stores (or checks the given ones) and learns their
// shapes and chunk keys.
func (b *bencher) prepare(ctx context.Context) error {
	if err := os.WriteFile(filepath.Join(b.work, "bench.py"), benchPy, 0o644); err != nil {
		return err
	}
	write := b.stores == ""
	if write {
		if err := b.makeStoresDir(); err != nil {
			return err
		}
	}
	for _, name := range b.chunkSizes {
		set := &storeSet{name: name, dir: filepath.Join(b.stores, name), stored: map[string]int64{}}
		if _, err := os.Stat(filepath.Join(set.dir, storeRaw, zarr.ArrayFile)); write && errors.Is(err, os.ErrNotExist) {
			// Only into a directory of its own, made now: what is removed at
			// the end is then what this run wrote.
			if err := os.Mkdir(set.dir, 0o755); err != nil {
				return fmt.Errorf("bench: --dir: %w (the stores of each chunk size go into a new subdirectory; an earlier run's, with --keep, are read again)", err)
			}
			b.wrote = append(b.wrote, set.dir)
			side, _ := chunkSide(name)
			b.say("writing the %s stores with %s into %s (%s decoded each)...", name, b.python, set.dir, b.size)
			if _, err := b.python3(ctx, nil, "write", set.dir, strconv.FormatInt(int64(b.size), 10), strconv.Itoa(side)); err != nil {
				return err
			}
		}
		zarray, err := os.ReadFile(filepath.Join(set.dir, storeRaw, zarr.ArrayFile))
		if err != nil {
			return fmt.Errorf("bench: %w (--store must hold %s/%s/ and the others as written by zfuse bench --keep)", err, name, storeRaw)
		}
		a, err := zarr.ParseV2(zarray)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		set.shape, set.chunks, set.chunkLen = a.Shape, a.Chunks, a.ChunkLen()
		for i := range a.NumChunks() {
			set.keys = append(set.keys, a.ChunkKey(a.Coords(i)))
		}
		for _, s := range []string{storeBlosc, storeZstd, storeRaw} {
			for _, k := range set.keys {
				fi, err := os.Stat(filepath.Join(set.dir, s, k))
				if err != nil {
					return fmt.Errorf("bench: %w", err)
				}
				set.stored[s] += fi.Size()
			}
		}
		b.sets = append(b.sets, set)
	}
	return nil
}

// makeStoresDir sets b.stores to --dir, made if it does not exist, or to a
// new temporary directory.
func (b *bencher) makeStoresDir() error {
	if b.dir == "" {
		d, err := os.MkdirTemp("", "zfuse-bench-stores-")
		if err != nil {
			return err
		}
		b.stores, b.wrote, b.madeTop = d, append(b.wrote, d), true
		return nil
	}
	b.stores = b.dir
	if _, err := os.Stat(b.dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(b.dir, 0o755); err != nil {
			return fmt.Errorf("bench: --dir: %w", err)
		}
		b.wrote, b.madeTop = append(b.wrote, b.dir), true
	}
	return nil
}

func (b *bencher) say(format string, args ...any) {
	fmt.Fprintf(b.progress, "bench: "+format+"\n", args...)
}

// epochString shows rates as "1.23, 4.56 GB/s".
func epochString(epochs []float64) string {
	s := make([]string, len(epochs))
	for i, e := range epochs {
		s[i] = fmt.Sprintf("%.2f", e)
	}
	return strings.Join(s, ", ") + " GB/s"
}

// seconds shows a duration given in seconds.
func seconds(s float64) time.Duration { return time.Duration(s * 1e9) }

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

// machine describes where the bench runs.
func machine() string {
	return fmt.Sprintf("%s, %d cores, %s/%s, %s", cpuModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}
