package readahead

import (
	"cmp"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zfuse/zfuse/cache"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// ErrClosed is the error of Chunk after Close.
var ErrClosed = errors.New("readahead: loader closed")

// A Config sets up a Loader. Budgets are bytes; a budget of zero or less
// turns its tier off (for ReadaheadBudget: no prefetch).
type Config struct {
	Store store.Store // where stored chunk values are read
	// Decoder returns the batch decoder for an array's chunks, a CPU pool
	// or a GPU decoder, as a Route whose Decoder ("cpu", "gpu") and Why
	// say which and why. It is called once per array, through RouteOf
	// (again for an array read after those of 1024 others, maxRoutes):
	// not for arrays stored uncompressed or with codecs over whole
	// shards. Nil means codec.Batch(a.Decoder()) on the CPU.
	Decoder func(*zarr.Array) Route
	// Decoded, if not nil, is told of each batch of an array's chunks
	// decoded (not of arrays stored uncompressed), with its route and the
	// wall time it took: the time Stats.Decode adds up, measured once.
	Decoded func(a *zarr.Array, r Route, took time.Duration)
	// Served, if not nil, is told of each read of a chunk for a reader
	// (ReadAt, ReadPieces, and Open with the chunk's size) once it is
	// done, with the bytes handed out and the error: what the mount
	// serves, counted where it is served (zfuse mount --metrics). It must
	// be safe for concurrent use.
	Served func(n int64, err error)

	// Files keeps decoded chunks in memfds, decoded straight into them,
	// instead of on the heap: files that the kernel reads itself through
	// FUSE passthrough (Open). Chunks stored uncompressed in a local store
	// (a store.FileOpener) are then opened as stored, not copied.
	Files bool

	DecodedBudget    int64 // chunks that have been read, decoded
	CompressedBudget int64 // stored values, as read from the store
	ReadaheadBudget  int64 // chunks prefetched and not yet read, decoded or decoding
	// MemDir is where Files makes its files: a tmpfs directory, whose
	// files can be used again for other chunks once nobody else has them
	// open (leases tell); "" means a tmpfs of the Loader's own, whose
	// files have large folios, where it may mount one (CAP_SYS_ADMIN),
	// else /dev/shm. Where it is no tmpfs, chunks are in memfds, made for
	// each chunk.
	MemDir string
	// MaxFiles bounds the memfds the decoded tier keeps (each is a file
	// descriptor) when Files is set; 0 means no bound beyond the budget.
	MaxFiles int

	Policy   Policy        // the zero Policy uses its defaults
	TTL      time.Duration // how long a prefetched chunk waits unread; 0 means 30s
	Fetchers int           // store reads in flight for prefetch, over all arrays; 0 means 256 (the store may allow fewer)
	Streams  int           // readers (array, pid) remembered; 0 means 4096

	// Changing says the store may change while it is read (zfuse
	// --refresh): an inner chunk read from a shard is checked to come from
	// the version of the shard its index came from (shards.go).
	Changing bool

	Log *slog.Logger // nil means discard
}

// A Loader returns decoded chunks and decodes ahead of its readers. It
// holds three tiers: the decoded tier (chunks that have been read), the
// compressed tier (values as stored), and staging (chunks prefetched and
// not yet read). It is safe for concurrent use; Close stops its goroutines.
//
// Where decoded bytes live depends on who serves them. ReadAt copies
// bytes from the heap for the kernel's page cache to keep, and drops its
// own copy once the kernel has every byte of a chunk, so the bytes are
// held once (in the page cache). Open hands out a file (with Config.Files
// a memfd the chunk was decoded into) for the kernel to read itself; the
// decoded tier keeps those files within its budget for the next open, and
// a file evicted while open stays alive until it is closed.
type Loader struct {
	// Immutable after New.
	store       store.Store
	decoder     func(*zarr.Array) Route                          // Config.Decoder, nil or not (RouteOf)
	onDecoded   func(a *zarr.Array, r Route, took time.Duration) // Config.Decoded; nil: none
	onServed    func(n int64, err error)                         // Config.Served; nil: none
	decodedOff  bool                                             // no decoded tier: every read loads
	policy      Policy
	ttl         time.Duration
	log         *slog.Logger
	decoded     *cache.LRU[*chunk] // chunks that have been read
	handed      *cache.LRU[int64]  // chunks the kernel's page cache was given whole, and their sizes (handed.go)
	compressed  *cache.Cache       // stored values
	staging     *staging           // prefetched chunks not yet read
	shards      shardIndexes       // parsed shard indexes
	memfds      fileStats          // memfds alive, over every holder
	mfiles      *memFiles          // files that hold decoded chunks (Config.Files), kept for use again
	bufs        *bufPool           // decode buffers to use again
	srcs        *bufPool           // stored values to use again, when the compressed tier is off
	keepsStored bool               // the compressed tier is on: stored values are shared with it
	fetch       chan struct{}      // a semaphore: one token per prefetch store read

	ctx    context.Context // the lifetime of background work; ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the Loader starts

	files  atomic.Bool             // decode into memfds (Config.Files, SetFiles)
	placer atomic.Pointer[placing] // where decoded chunks are placed ahead of their reads; nil: nowhere (SetPlacer)
	places placeQueue              // decoded chunks to place, in order (prefetch.go)

	// Each with its own lock.
	readers readers      // whom readahead follows, and whether the Loader is closed (streams.go)
	routes  routes       // each array's route (fetch.go)
	decodes decodeCounts // the decoding done, by codec pipeline (stats.go)

	latency atomic.Int64 // moving average of store reads' time, ns (policyFor)

	// Counters, updated atomically.
	reads, storeReads, waits, prefetchErrors, dropped, storedOpens, forgotten, placeRefused, handedLost atomic.Int64
}

// A Placer puts decoded chunks where their readers will find them without
// asking: fusemount pushes them into the kernel's page cache
// (FUSE_NOTIFY_STORE) before their first read, so that the read costs what
// a warm read costs.
type Placer interface {
	// Place offers the decoded bytes of chunk i (a linear index) of array
	// a, whose key prefix in the store is path, and reports whether they
	// are placed. data is valid only during the call.
	Place(a *zarr.Array, path string, i int64, data []byte) bool
	// Expect says that chunk i of a is planned and will be offered once
	// decoded, so the Placer can get ready for it meanwhile (fusemount
	// looks its file up). It must not wait.
	Expect(a *zarr.Array, i int64)
}

// placing holds the Placer in use.
type placing struct{ p Placer }

// poolBytes bounds the decode buffers kept for the next decodes: enough for
// a stream of chunks of up to a few MiB to decode into memory that is
// already mapped in. It bounds the chunk files kept likewise.
const poolBytes = 32 << 20

// FreeFileBytes bounds the chunk files (Config.Files) a Loader keeps for
// the next chunks once nobody holds theirs: memory outside the heap and
// every budget, which a memory plan counts beside them. SetBudgets lowers
// it to the decoded and readahead budgets together, where those are less.
const FreeFileBytes = poolBytes

// storedPoolBytes bounds the stored values kept for the next reads, when
// there is no compressed tier: a prefetch decodes its batch in parts
// as their values come in, so a few parts' worth is in use at a time.
const storedPoolBytes = 16 << 20

// New returns a Loader. It starts a goroutine that expires unread
// prefetched chunks; Close stops it.
func New(cfg Config) *Loader {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loader{
		store:      cfg.Store,
		decoder:    cfg.Decoder,
		onDecoded:  cfg.Decoded,
		onServed:   cfg.Served,
		decodedOff: cfg.DecodedBudget <= 0,
		policy:     cfg.Policy,
		ttl:        cfg.TTL,
		log:        cfg.Log,
		ctx:        ctx,
		cancel:     cancel,
	}
	if l.ttl <= 0 {
		l.ttl = 30 * time.Second
	}
	l.readers.init(cfg.Streams, l.ttl)
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	fetchers := cfg.Fetchers
	if fetchers <= 0 {
		fetchers = 256
	}
	l.fetch = make(chan struct{}, fetchers)
	l.bufs = newBufPool(poolBytes, nil)
	l.mfiles = newMemFiles(cfg.MemDir, poolBytes, &l.memfds)
	l.SetFiles(cfg.Files)
	l.srcs = newBufPool(storedPoolBytes, sizeClass)
	l.keepsStored = cfg.CompressedBudget > 0
	l.decoded = cache.NewLRU(cache.LRUConfig[*chunk]{
		MaxBytes: cfg.DecodedBudget,
		MaxItems: cfg.MaxFiles,
		Size:     func(c *chunk) int64 { return c.size },
		Drop:     (*chunk).release,
	})
	l.handed = cache.NewLRU(cache.LRUConfig[int64]{
		MaxBytes: max(cfg.DecodedBudget, 0),
		Size:     func(n int64) int64 { return n },
	})
	compressed, err := cache.New(cache.Config{MaxBytes: cfg.CompressedBudget, ItemBytes: 256 << 10})
	if err != nil {
		panic("readahead: " + err.Error()) // the configuration cannot be invalid
	}
	l.compressed = compressed
	l.shards = newShardIndexes(cfg.Store, l.log, cfg.Changing, func() { l.storeReads.Add(1) }, l.fetchStored)
	l.staging = newStaging(max(cfg.ReadaheadBudget, 0), l.ttl)
	l.wg.Go(func() { l.staging.run(ctx) })
	l.places.wake = make(chan struct{}, 1)
	l.wg.Go(func() { l.placeChunks(ctx) })
	return l
}

// Close stops prefetching, waits for the Loader's goroutines, and drops
// every cached chunk. Chunk returns ErrClosed afterwards. Files handed out
// by Open stay valid until they are closed.
func (l *Loader) Close() error {
	if !l.readers.close() {
		return nil
	}
	l.cancel()
	l.wg.Wait()
	l.staging.clear()
	l.decoded.Close()
	l.compressed.Close()
	l.mfiles.drain()
	return nil
}

// Chunk returns the whole decoded chunk at coords of array a, whose key
// prefix in the store is path ("" for an array at the root). The chunk is
// a.ChunkLen() bytes.
// pid names the reader (the process behind the FUSE request); each reader of
// each array gets its own readahead. The decoded tier keeps the chunk; the
// caller gets its own copy, which it may modify.
//
// The stored value is path + "/" + a.StoredKey(coords): for v2 arrays that
// is the chunk key ("0.3", or the legacy nested "0/3" where the metadata
// names no separator and the store nests); for sharded v3 arrays it is the
// shard, whose index is read once and whose inner chunks are read by range.
//
// A missing chunk gives an error satisfying errors.Is(err, fs.ErrNotExist).
// A chunk that does not decode gives an error naming its key; other chunks
// are not affected. If ctx ends first, Chunk returns ctx.Err() and the load
// goes on for other readers.
func (l *Loader) Chunk(ctx context.Context, r Ref) ([]byte, error) {
	return l.ChunkInto(ctx, r, nil)
}

// ChunkInto is Chunk copying into buf when it has the capacity, so that a
// caller that reads many chunks (zfuse compress) reuses its buffers
// instead of making garbage of a chunk's size per read; else into a new
// slice.
func (l *Loader) ChunkInto(ctx context.Context, r Ref, buf []byte) ([]byte, error) {
	c, _, err := l.get(ctx, r, chunkRead)
	if err != nil {
		return nil, err
	}
	defer c.release()
	return c.copyInto(buf)
}

// ReadAt copies the bytes of the decoded chunk at coords from off into p,
// as io.ReaderAt does, for a FUSE read by pid whose reply the kernel keeps
// in its page cache. Once ReadAt has handed out every byte of a chunk, the
// decoded tier lets it go: the page cache holds it, and a second copy
// would only double the memory (if the kernel drops its copy and reads
// again, the chunk is decoded again). Otherwise it is Chunk.
func (l *Loader) ReadAt(ctx context.Context, r Ref, p []byte, off int64) (n int, err error) {
	if l.onServed != nil {
		defer func() { l.onServed(int64(n), err) }()
	}
	if off >= r.Array.ChunkLen() && r.Array.PassThrough == nil {
		return 0, io.EOF // direct I/O reads past the end: nothing to decode
	}
	l.lostByKernel(r)
	c, id, err := l.get(ctx, r, chunkRead)
	if err != nil {
		return 0, err
	}
	defer c.release()
	n, err = c.readAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, &fs.PathError{Op: "chunk", Path: id, Err: err}
	}
	if c.f == nil && c.served.Add(int64(n)) >= c.size { // a file is kept: no page cache holds it
		l.handOver(id, c)
	}
	return n, err
}

// Open returns the decoded chunk at coords as an open File, for an open by
// pid of a file the kernel reads itself (FUSE passthrough). The caller must
// Close it. With Config.Files the chunk is a memfd, or, for a chunk stored
// uncompressed in a store.FileOpener, the stored file itself; otherwise
// the File has no descriptor and is read with ReadAt. Errors are those of
// Chunk.
func (l *Loader) Open(ctx context.Context, r Ref) (f *File, err error) {
	if l.onServed != nil {
		defer func() {
			var n int64
			if err == nil {
				n = f.Size()
			}
			l.onServed(n, err)
		}()
	}
	c, id, err := l.get(ctx, r, chunkRead)
	if err != nil {
		return nil, err
	}
	if c.f == nil && l.files.Load() {
		// Decoded onto the heap before SetFiles(true), or for ReadAt:
		// copy it into a file of its own.
		h := c
		mf, err := l.mfiles.get(h.size)
		if err == nil {
			_, err = mf.f.WriteAt(h.data, 0)
			if err != nil {
				l.mfiles.put(mf)
			}
		}
		h.release()
		if err != nil {
			return nil, &fs.PathError{Op: "chunk", Path: id, Err: err}
		}
		c = memChunk(mf, l.mfiles)
	}
	return &File{c: c}, nil
}

// Forget drops every copy the Loader holds of the chunk at coords of array
// a (path as for Chunk): decoded, prefetched, as stored, and the index of
// its shard. The caller found that its stored value changed (zfuse
// --refresh); the next read loads it again. Files handed out by Open stay
// valid, holding the old chunk, until they are closed.
func (l *Loader) Forget(r Ref) {
	// From the stored value up: a prefetch that read the old value before
	// its tier forgot it is still dropped from the tiers above.
	k := ref(r.Array, r.Path, r.Coords)
	l.compressed.Delete(k.stored)
	if k.shard {
		l.shards.forget(k.stored)
		l.compressed.Delete(k.id)
	}
	l.decoded.Delete(k.id)
	l.handed.Delete(k.id)
	l.staging.drop(k.id)
	l.forgotten.Add(1)
}

// SetPlacer says where prefetched chunks are placed once decoded, from now
// on; nil places them nowhere (they wait in staging for their reads).
//
// A placed chunk's reads do not reach the Loader, so readahead would lose
// its reader: in each batch of a pattern, every few chunks (a quarter of
// the window) one is staged and not placed, and its read tells the Loader
// that the reader has read the placed ones before it, which then count as
// read for the Policy and leave the readahead budget.
func (l *Loader) SetPlacer(p Placer) {
	if p == nil {
		l.placer.Store(nil)
		return
	}
	l.placer.Store(&placing{p})
}

// SetFiles says whether chunks are decoded into memfds (for Open) or onto
// the heap (for Read) from now on; see Config.Files. Chunks decoded
// before keep their form, and each of Read, Open and Chunk serves either.
func (l *Loader) SetFiles(on bool) {
	if on && !l.files.Load() {
		if where := l.mfiles.dir(); where == "" {
			l.log.Warn("chunk files are memfds made and freed for each chunk: no tmpfs to keep them in for use again", "dir", cmp.Or(l.mfiles.want, "/dev/shm"))
		} else {
			l.log.Debug("chunk files are kept for use again", "dir", where)
		}
	}
	l.files.Store(on)
}

// get returns the chunk at coords with a reference the caller must
// release, and the name it has in the tiers. It records the read for
// readahead as how says.
func (l *Loader) get(ctx context.Context, q Ref, how reading) (*chunk, string, error) {
	a, path, coords, pid := q.Array, q.Path, q.Coords, q.PID
	if a.PassThrough != nil {
		return nil, "", &fs.PathError{Op: "chunk", Path: join(path, a.ChunkKey(coords)), Err: a.PassThrough}
	}
	r := ref(a, path, coords)
	l.reads.Add(1)
	// Whether this read will wait is the policy's signal to look further
	// ahead; decide it before the read changes what is where.
	waited := how != unrecorded && !l.decoded.Has(r.id) && !l.staging.isReady(r.id)
	if err := l.plan(a, path, pid, a.Linear(coords), waited, how); err != nil {
		return nil, "", err
	}
	if c, ok, err := l.openStored(ctx, a, r); ok || err != nil {
		return c, r.id, err
	}
	if l.decodedOff {
		c, err := l.load(ctx, a, r)
		return c, r.id, err
	}
	// A chunk decoded ahead is taken from staging in this goroutine; only
	// a load that may wait runs in one of its own (cache.LRU.LoadNow): a
	// FUSE request served on a thread of its own (FUSE over io_uring)
	// parks that thread for every wait, and a flat file's READ takes up to
	// dozens of chunks.
	// A file chunk can be evicted (and closed) between its load and our
	// acquire, when other loads fill the tier meanwhile; then it is loaded
	// again, and after a few tries for this reader alone.
	for range 3 {
		c, err := l.decoded.LoadNow(ctx, r.id, func() (*chunk, bool) {
			return l.staging.takeReady(r.id)
		}, func(ctx context.Context) (*chunk, error) {
			return l.load(ctx, a, r)
		})
		if err != nil {
			return nil, "", err
		}
		if c.acquire() {
			return c, r.id, nil
		}
	}
	c, err := l.load(ctx, a, r)
	return c, r.id, err
}

// load produces a chunk that is not in the decoded tier, with one
// reference, which the decoded tier takes over: from staging if readahead
// got there first, else from the compressed tier or the store.
func (l *Loader) load(ctx context.Context, a *zarr.Array, r chunkRef) (*chunk, error) {
	ctx, stop := l.lifetime(ctx)
	defer stop()
	if e := l.staging.take(r.id); e != nil { // nil too for a chunk placed, whose pages the kernel let go
		select {
		case <-e.done:
		default:
			l.waits.Add(1) // still loading or decoding
		}
		c, err := e.wait(ctx)
		if err == nil || e.decodeErr || errors.Is(err, fs.ErrNotExist) {
			return c, err
		}
		if ctx.Err() != nil {
			l.staging.abandon(e) // the Loader is closing
			return nil, ctx.Err()
		}
		// The prefetch failed for a reason of its own (a store error, a
		// cancellation): try again for this reader.
	}
	src, err := l.encoded(ctx, a, r)
	if err != nil {
		return nil, err
	}
	cs, errs := l.decode(ctx, a, []chunkRef{r}, []stored{src})
	if err := errs[0]; err != nil {
		return nil, &fs.PathError{Op: "decode", Path: r.stored, Err: err}
	}
	return cs[0], nil
}

// lifetime returns ctx, also cancelled when the Loader closes, so that no
// load outlives it.
func (l *Loader) lifetime(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(l.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// fetchStored returns the stored value of key from the compressed tier,
// reading the store on a miss (one read per key at a time).
func (l *Loader) fetchStored(ctx context.Context, key string) ([]byte, error) {
	return l.compressed.Load(ctx, key, func(ctx context.Context) ([]byte, error) {
		l.storeReads.Add(1)
		ctx, stop := l.lifetime(ctx)
		defer stop()
		defer l.timeStore(time.Now())
		return l.store.ReadKey(ctx, key)
	})
}

// ShardIndex returns the parsed index of the shard of array a stored under
// key (size bytes; negative when unknown). It is the index the Loader
// reads inner chunks with, read once per shard: the presented tree lists
// sharded arrays with it. A shard whose index does not parse gives the
// reason (logged once), a missing shard an error wrapping fs.ErrNotExist.
func (l *Loader) ShardIndex(ctx context.Context, a *zarr.Array, key string, size int64) (*zarr.Index, error) {
	ctx, stop := l.lifetime(ctx)
	defer stop()
	return l.shards.index(ctx, a, key, size)
}
