package bench

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

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
	fileNc     = "raw.nc"     // the uncompressed array as a netCDF classic file, for the netCDF reader
)

// The readers of the matrix.
const (
	readGrid   = "files-grid" // open, read whole, close each chunk file, in chunk-grid order
	readList   = "files-list" // the same in listing order (os.ReadDir: sorted by name)
	readZarr   = "zarr"       // zarr-python, plane by plane
	readLoader = "loader"     // a PyTorch DataLoader, 2 worker processes, shuffled planes
	readRemote = "zarr-http"  // zarr-python, plane by plane, from a store served over HTTP with --latency (remote.go)
	readNpy    = "npy"        // the array's .npy file under --as-npy, read whole in order (1 MiB reads)
	readMap    = "npy-map"    // the first eighth of the array along axis 0 through np.load(mmap_mode='r') of its .npy file
	readPy     = "files-py"   // Python's open().read() of each chunk file, in grid order: zarr-python's reads without its decode
	readDask   = "dask"       // the array's mean with dask (da.from_zarr, dask's threads)
	readXarray = "xarray"     // the array's mean with xarray (open_zarr of a group holding it, .mean())
	readCat    = "cat"        // cat(1) of every chunk file in grid order, its output counted through a pipe
	readNetCDF = "netcdf"     // netCDF-C through netCDF4-python, plane by plane: the --as-nc file, or raw.nc
)

// Readers are the readers of the matrix, in order.
var Readers = []string{readGrid, readList, readPy, readCat, readZarr, readDask, readXarray, readLoader, readRemote, readNpy, readMap, readNetCDF}

// selfDecoding reports whether reader can decode the compressed stores
// itself: the Python readers of Zarr (netCDF-C on Debian has no Blosc).
func selfDecoding(reader string) bool {
	return reader == readZarr || reader == readLoader || reader == readDask || reader == readXarray
}

// flatView returns the view a reader reads through a mount (--as-npy,
// --as-nc), or nil for the plain one.
func flatView(reader string) []string {
	switch reader {
	case readNpy, readMap:
		return []string{"--as-npy"}
	case readNetCDF:
		return []string{"--as-nc"}
	}
	return nil
}

// The sources a reader reads.
const (
	viaMount = "mount" // the compressed store through zfuse mount
	viaSelf  = "self"  // the compressed store directly: the reader decodes (Python readers)
	viaRaw   = "raw"   // the array stored uncompressed, from the page cache: the ceiling
	viaFloor = "floor" // the FUSE floor: a minimal FUSE server that holds the bytes (floor.go)
	viaHTTP  = "http"  // the compressed store over HTTP, read by zarr-python with fsspec: it decodes
)

// Run is zfuse bench: it writes (or takes) the stores, then reads them
// with each reader of the matrix, through fresh mounts of this binary and
// directly, in interleaved rounds, and prints the medians as a table on
// cfg.Out, its progress on cfg.Progress.
func Run(ctx context.Context, cfg Config) error {
	b := &bencher{out: cfg.Out, progress: cfg.Progress, stores: cfg.Stores, dir: cfg.Dir, keep: cfg.Keep, size: cfg.Size,
		python: cfg.Python, runs: cfg.Runs, epochs: cfg.Epochs, latency: cfg.Latency, readers: cfg.Readers, codecs: cfg.Codecs,
		chunkSizes: cfg.ChunkSizes, servings: cfg.Servings, transports: cfg.Transports, lf: cfg.Mount}
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

// A Config is one zfuse bench run: its flags.
type Config struct {
	Stores     string        // read the stores an earlier run kept in this directory; "": write them
	Dir        string        // where to write the stores; "": a new temporary directory
	Keep       bool          // keep the stores written
	Size       int64         // decoded bytes of each array written
	Python     string        // Python with zarr 2.13, numcodecs 0.11 and torch
	Runs       int           // rounds of the whole matrix
	Epochs     int           // epochs each reader reads in one mount
	Latency    time.Duration // zarr-http: the HTTP server's wait before each answer
	Readers    []string      // of Readers
	Codecs     []string      // "blosc", "zstd"
	ChunkSizes []string      // "1MiB", "64KiB" (ChunkSide)
	Servings   []string      // serving paths to mount with, each
	Transports []string      // FUSE transports to mount with, each; the floor uses the first
	Mount      MountFlags    // what every mount is given
	Out        io.Writer     // the report
	Progress   io.Writer     // what it is doing, line by line
}

// MountFlags are what the bench passes to each of its mounts, zfuse
// mount's flags of the loader (beside the serving path and transport,
// which it sets per mount), and what its report and targets say of them.
type MountFlags struct {
	Args                           []string // the flags, as zfuse mount takes them
	Decoder                        string   // --decoder
	Workers                        int      // --workers
	Decoded, Compressed, Readahead int64    // the budgets
	KernelReadahead                int64    // --kernel-readahead, the floor's too
	Own                            int64    // the mount's own memory beside its budgets (memlimit.Own)
	// Check, if not nil, fails where the flags cannot work (--decoder gpu
	// without a GPU), before anything is written.
	Check func() error
}

// memory is what a mount of these flags may hold, the target of its peak
// RSS and memfds: the three budgets and its own memory.
func (f MountFlags) memory() int64 { return f.Decoded + f.Compressed + f.Readahead + f.Own }

// check fails early, before the stores are written, on what would fail
// every reader or mount later: zarr-http without its Python packages, a
// --decoder gpu that cannot start.
func (b *bencher) check(ctx context.Context) error {
	for _, reader := range b.readers {
		if err := b.checkReader(ctx, reader); err != nil {
			return err
		}
	}
	if b.lf.Check != nil {
		if err := b.lf.Check(); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// pythonNeeds are the Python modules a reader needs beside zarr-python
// and numcodecs, and the Debian packages that hold them.
var pythonNeeds = map[string][2]string{
	readRemote: {"fsspec, aiohttp", "python3-fsspec python3-aiohttp"},
	readDask:   {"dask", "python3-dask"},
	readXarray: {"xarray, dask", "python3-xarray python3-dask"},
	readLoader: {"torch", "python3-torch"},
	readNetCDF: {"netCDF4", "python3-netcdf4"},
}

// checkReader fails, saying what to install, where reader lacks what it
// runs: its Python modules, or cat(1).
func (b *bencher) checkReader(ctx context.Context, reader string) error {
	if reader == readCat {
		if _, err := exec.LookPath("cat"); err != nil {
			return fmt.Errorf("bench: %s needs cat(1), or leave it out of --readers: %w", reader, err)
		}
		return nil
	}
	need, ok := pythonNeeds[reader]
	if !ok {
		return nil
	}
	out, err := exec.CommandContext(ctx, b.python, "-c", "import "+need[0]).CombinedOutput()
	if err != nil {
		return fmt.Errorf("bench: %s needs %s in %s (Debian: %s; make deps installs them), or leave it out of --readers: %v\n%s",
			reader, need[0], b.python, need[1], err, strings.TrimSpace(string(out)))
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
	size        int64
	python      string
	runs        int
	epochs      int
	latency     time.Duration
	readers     []string
	codecs      []string
	chunkSizes  []string
	servings    []string
	transports  []string
	lf          MountFlags

	out, progress io.Writer
	exe           string     // this binary
	work          string     // scratch: mountpoints, stats files, bench.py
	mounts        int        // mountpoints made
	start, load   string     // when the measurements began, and the load average then
	memory        [2]string  // what new memory cost at the start and at the end (MemCost)
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

// ChunkSide returns the side of square float32 chunks of the size s
// (--chunks: 64KiB, 1MiB).
func ChunkSide(s string) (int, error) {
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
		h, err := startHTTP(b.stores, b.latency) // remote.go
		if err != nil {
			return err
		}
		defer h.close()
		b.http = h
	}
	b.res = newBenchResults()
	b.start, b.load = time.Now().UTC().Format("2006-01-02 15:04 MST"), loadAvg()
	b.memory[0] = memCost()
	for round := range b.runs {
		b.say("round %d of %d", round+1, b.runs)
		for _, set := range b.sets {
			if err := b.round(ctx, set); err != nil {
				return err
			}
		}
	}
	b.memory[1] = memCost()
	b.report()
	return nil
}

// memCost measures what 256 MiB of new memory costs now, for the report.
func memCost() string {
	c, err := MeasureMemCost(256 << 20)
	if err != nil {
		return err.Error()
	}
	return c.String()
}

// round reads every cell of the matrix for one chunk size once.
func (b *bencher) round(ctx context.Context, set *storeSet) error {
	for _, reader := range b.readers {
		if reader == readRemote {
			if err := b.remote(ctx, set); err != nil { // remote.go
				return err
			}
			continue
		}
		// The ceiling, the FUSE floor, and each reader decoding the
		// stores itself; the readers of .npy files have no ceiling (the
		// store holds no .npy file), and their floor serves one; the
		// netCDF reader's ceiling is raw.nc, and it has no floor.
		switch reader {
		case readNpy, readMap:
		case readNetCDF:
			if err := b.direct(ctx, set, reader, viaRaw, fileNc); err != nil {
				return err
			}
		default:
			if err := b.direct(ctx, set, reader, viaRaw, storeRaw); err != nil {
				return err
			}
		}
		if reader != readNetCDF {
			if err := b.viaFloor(ctx, set, reader); err != nil { // floor.go
				return err
			}
		}
		for _, codec := range b.codecs {
			if selfDecoding(reader) {
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
	if err := warm(filepath.Join(set.dir, store)); err != nil {
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
	if err := WarmDir(store); err != nil {
		return err
	}
	source := store
	var requests int64
	if reader == readRemote {
		source, requests = b.http.storeURL(set, codec), b.http.requests.Load()
	}
	m, err := b.mount(ctx, source, serving, transport, flatView(reader)...)
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
		return ReadEpochs(ctx, root, set.keys, b.epochs, after)
	case readList:
		names, err := listChunks(root)
		if err != nil {
			return nil, err
		}
		return ReadEpochs(ctx, root, names, b.epochs, after)
	case readZarr, readRemote: // root: a directory, or for zarr-http a URL
		return b.python3(ctx, after, "zarr", root, strconv.Itoa(b.epochs))
	case readPy:
		return b.python3(ctx, after, "files", root, strconv.Itoa(b.epochs))
	case readDask:
		return b.python3(ctx, after, "dask", root, strconv.Itoa(b.epochs))
	case readXarray:
		return b.python3(ctx, after, "xarray", root, strconv.Itoa(b.epochs))
	case readCat:
		return catEpochs(ctx, root, set.keys, b.epochs, after)
	case readNetCDF:
		// root: raw.nc itself, or a --as-nc mount, whose one file at
		// its root is the array's.
		if strings.HasSuffix(root, ".nc") {
			return b.python3(ctx, after, "netcdf", root, strconv.Itoa(b.epochs))
		}
		name, err := oneFile(root, ".nc")
		if err != nil {
			return nil, err
		}
		return b.python3(ctx, after, "netcdf", filepath.Join(root, name), strconv.Itoa(b.epochs))
	case readNpy, readMap:
		// The store is an array at its root: its .npy file is the one
		// file at the mount's root that ends in .npy.
		name, err := oneFile(root, ".npy")
		if err != nil {
			return nil, err
		}
		if reader == readMap {
			return b.python3(ctx, after, "npymap", filepath.Join(root, name), strconv.Itoa(b.epochs))
		}
		return ReadEpochs(ctx, root, []string{name}, b.epochs, after)
	}
	return b.python3(ctx, after, "loader", root, strconv.Itoa(b.epochs), "2")
}

// oneFile returns the name of the first file in dir whose name ends in
// ext: a flat view of a store whose root is an array holds one.
func oneFile(dir, ext string) (string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	i := slices.IndexFunc(es, func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), ext) })
	if i < 0 {
		return "", fmt.Errorf("bench: no %s file in %s", ext, dir)
	}
	return es[i].Name(), nil
}

// warm reads path into the page cache: a directory's files (WarmDir), or
// one file.
func warm(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return WarmDir(path)
	}
	if _, err := ReadFile(path, make([]byte, 1<<20)); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
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
			side, _ := ChunkSide(name)
			b.say("writing the %s stores with %s into %s (%s decoded each)...", name, b.python, set.dir, bytesize.Exact(b.size))
			if _, err := b.python3(ctx, nil, "write", set.dir, strconv.FormatInt(b.size, 10), strconv.Itoa(side)); err != nil {
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
		if err := b.prepareNc(ctx, set); err != nil {
			return err
		}
		b.sets = append(b.sets, set)
	}
	return nil
}

// prepareNc writes set's raw.nc, the netCDF reader's ceiling, where the
// netCDF reader runs and the stores (written by this run or an earlier
// one) lack it.
func (b *bencher) prepareNc(ctx context.Context, set *storeSet) error {
	if !slices.Contains(b.readers, readNetCDF) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(set.dir, fileNc)); err == nil {
		return nil
	}
	b.say("writing %s with %s...", filepath.Join(set.dir, fileNc), b.python)
	_, err := b.python3(ctx, nil, "writenc", set.dir)
	return err
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
