package readahead

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zfuse/zfuse/cache"
	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// ErrClosed is the error of Chunk after Close.
var ErrClosed = errors.New("readahead: loader closed")

// A Config sets up a Loader. Budgets are bytes; a budget of zero or less
// turns its tier off (for ReadaheadBudget: no prefetch).
type Config struct {
	Store store.Store // where stored chunk values are read
	// Decoder returns the batch decoder for an array's chunks: a CPU pool,
	// or a GPU decoder. Nil means codec.Batch(a.Decoder()). It is called
	// once per array.
	Decoder func(*zarr.Array) codec.BatchDecoder

	DecodedBudget    int64 // chunks that have been read, decoded
	CompressedBudget int64 // stored values, as read from the store
	ReadaheadBudget  int64 // chunks prefetched and not yet read, decoded or decoding

	Policy   Policy        // the zero Policy uses its defaults
	TTL      time.Duration // how long a prefetched chunk waits unread; 0 means 30s
	Fetchers int           // store reads in flight for prefetch, over all arrays; 0 means 64
	Streams  int           // readers (array, pid) remembered; 0 means 4096

	Log *slog.Logger // nil means discard
}

// A Loader returns decoded chunks and decodes ahead of its readers. It is
// safe for concurrent use; Close stops its goroutines.
type Loader struct {
	// Immutable after New.
	store      store.Store
	decoder    func(*zarr.Array) codec.BatchDecoder
	policy     Policy
	ttl        time.Duration
	maxStreams int
	log        *slog.Logger
	decoded    *cache.Cache  // chunks that have been read
	compressed *cache.Cache  // stored values
	staging    *staging      // prefetched chunks not yet read
	shards     shardIndexes  // parsed shard indexes
	fetch      chan struct{} // a semaphore: one token per prefetch store read

	ctx    context.Context // the lifetime of background work; ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the Loader starts

	mu          sync.Mutex // guards the fields below
	closed      bool       // no goroutine starts once set
	streams     map[streamID]*stream
	batch       map[*zarr.Array]codec.BatchDecoder
	decodeStats map[string]*DecodeStats // by zarr.Array.Codecs

	// Counters, updated atomically.
	reads, storeReads, waits, prefetchErrors atomic.Int64
}

// A streamID names one reader of one array.
type streamID struct {
	path string
	pid  uint32
}

// A stream is what the policy remembers about one reader.
type stream struct {
	state State
	last  time.Time // last read, to forget idle readers
}

// New returns a Loader. It starts a goroutine that expires unread
// prefetched chunks; Close stops it.
func New(cfg Config) *Loader {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loader{
		store:       cfg.Store,
		decoder:     cfg.Decoder,
		policy:      cfg.Policy,
		ttl:         cfg.TTL,
		maxStreams:  cfg.Streams,
		log:         cfg.Log,
		ctx:         ctx,
		cancel:      cancel,
		streams:     map[streamID]*stream{},
		batch:       map[*zarr.Array]codec.BatchDecoder{},
		decodeStats: map[string]*DecodeStats{},
	}
	if l.decoder == nil {
		l.decoder = func(a *zarr.Array) codec.BatchDecoder { return codec.Batch(a.Decoder()) }
	}
	if l.ttl <= 0 {
		l.ttl = 30 * time.Second
	}
	if l.maxStreams <= 0 {
		l.maxStreams = 4096
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	fetchers := cfg.Fetchers
	if fetchers <= 0 {
		fetchers = 64
	}
	l.fetch = make(chan struct{}, fetchers)
	l.decoded = newCache(cfg.DecodedBudget, 1<<20)
	l.compressed = newCache(cfg.CompressedBudget, 256<<10)
	l.staging = newStaging(max(cfg.ReadaheadBudget, 0), l.ttl)
	l.wg.Go(func() { l.staging.run(ctx) })
	return l
}

// newCache returns a cache; the configuration cannot be invalid.
func newCache(budget, item int64) *cache.Cache {
	c, err := cache.New(cache.Config{MaxBytes: budget, ItemBytes: item})
	if err != nil {
		panic("readahead: " + err.Error())
	}
	return c
}

// Close stops prefetching, waits for the Loader's goroutines, and drops
// every cached chunk. Chunk returns ErrClosed afterwards.
func (l *Loader) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.cancel()
	l.wg.Wait()
	l.decoded.Close()
	l.compressed.Close()
	return nil
}

// Chunk returns the decoded chunk at coords of array a, whose key prefix
// in the store is path ("" for an array at the root). The chunk is
// a.ChunkLen() bytes, shared and immutable: the caller must not modify it.
// pid names the reader (the process behind the FUSE request); each reader of
// each array gets its own readahead.
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
func (l *Loader) Chunk(ctx context.Context, a *zarr.Array, path string, coords []int, pid uint32) ([]byte, error) {
	if a.PassThrough != nil {
		return nil, fmt.Errorf("chunk %s: %w", join(path, a.ChunkKey(coords)), a.PassThrough)
	}
	r := ref(a, path, coords)
	l.reads.Add(1)
	// Whether this read will wait is the policy's signal to look further
	// ahead; decide it before the read changes what is where.
	waited := !l.decoded.Has(r.id) && !l.staging.isReady(r.id)
	if err := l.plan(a, path, pid, a.Linear(coords), waited); err != nil {
		return nil, err
	}
	return l.decoded.Load(ctx, r.id, func(ctx context.Context) ([]byte, error) {
		return l.load(ctx, a, r)
	})
}

// load produces a chunk that is not in the decoded tier: from staging if
// readahead got there first, else from the compressed tier or the store.
// The decoded tier keeps what load returns: that is the move on first read.
func (l *Loader) load(ctx context.Context, a *zarr.Array, r chunkRef) ([]byte, error) {
	ctx, stop := l.lifetime(ctx)
	defer stop()
	if e := l.staging.take(r.id); e != nil {
		select {
		case <-e.done:
		default:
			l.waits.Add(1) // still loading or decoding
		}
		v, err := e.wait(ctx)
		if err == nil || e.decodeErr || errors.Is(err, iofs.ErrNotExist) {
			return v, err
		}
		// The prefetch failed for a reason of its own (a store error, a
		// cancellation): try again for this reader.
	}
	src, err := l.encoded(ctx, a, r)
	if err != nil {
		return nil, err
	}
	jobs := l.decode(ctx, a, []chunkRef{r}, [][]byte{src})
	if err := jobs[0].Err; err != nil {
		return nil, fmt.Errorf("decode %s: %w", r.stored, err)
	}
	return jobs[0].Dst, nil
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
		return l.store.ReadKey(ctx, key)
	})
}

// batchDecoder returns a's batch decoder, made once per array.
func (l *Loader) batchDecoder(a *zarr.Array) codec.BatchDecoder {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.batch[a]
	if !ok {
		d = l.decoder(a)
		l.batch[a] = d
	}
	return d
}

// decode decodes the chunks refs of a from srcs (as encoded returned them)
// in one batch with a's batch decoder, and records the time. Each job's Err
// is set if its chunk did not decode to exactly ChunkLen bytes.
func (l *Loader) decode(ctx context.Context, a *zarr.Array, refs []chunkRef, srcs [][]byte) []codec.Job {
	jobs := make([]codec.Job, len(refs))
	_, raw := a.Decoder().(codec.Raw)
	raw = raw && !a.WholeShard()
	for i := range jobs {
		jobs[i].Src = srcs[i]
		if raw {
			// Stored uncompressed: the stored value is the chunk. Values
			// are immutable, so it is served as is, without a copy.
			jobs[i].Dst = srcs[i]
			continue
		}
		jobs[i].Dst = make([]byte, 0, a.ChunkLen())
	}
	start := time.Now()
	switch {
	case raw:
	case a.WholeShard():
		// Codecs over the whole shard: each chunk is cut from its shard.
		for i := range jobs {
			jobs[i].Dst, jobs[i].Err = a.DecodeFromShard(jobs[i].Dst, jobs[i].Src, refs[i].coords)
		}
	default:
		if err := l.batchDecoder(a).DecodeBatch(ctx, jobs); err != nil {
			for i := range jobs {
				if jobs[i].Err == nil && len(jobs[i].Dst) == 0 {
					jobs[i].Err = err // not reached
				}
			}
		}
	}
	took := time.Since(start)
	var n, bad int64
	for i := range jobs {
		j := &jobs[i]
		if j.Err == nil && int64(len(j.Dst)) != a.ChunkLen() {
			j.Err = fmt.Errorf("%w: decoded %d bytes, want %d", codec.ErrCorrupt, len(j.Dst), a.ChunkLen())
		}
		if j.Err != nil {
			bad++
		} else {
			n += int64(len(j.Dst))
		}
	}
	l.mu.Lock()
	ds := l.decodeStats[a.Codecs]
	if ds == nil {
		ds = &DecodeStats{}
		l.decodeStats[a.Codecs] = ds
	}
	ds.Batches++
	ds.Chunks += int64(len(jobs)) - bad
	ds.Bytes += n
	ds.Errors += bad
	ds.Time += took
	l.mu.Unlock()
	return jobs
}

// plan records a read of chunk i by pid and starts prefetching what the
// policy predicts.
func (l *Loader) plan(a *zarr.Array, path string, pid uint32, i int64, waited bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	id := streamID{path, pid}
	st := l.streams[id]
	if st == nil {
		l.forgetIdleLocked()
		st = &stream{}
		l.streams[id] = st
	}
	st.last = time.Now()
	s, pl := l.policy.Next(st.state, Access{Index: i, Len: a.NumChunks(), Waited: waited})
	var batch []prefetched
	for k := range pl.N {
		r := ref(a, path, a.Coords(pl.Index(k)))
		if l.decoded.Has(r.id) {
			continue
		}
		e, res := l.staging.reserve(r.id, a.ChunkLen())
		if res == full {
			s = l.policy.Cut(s, pl, k)
			break
		}
		if res == reserved {
			batch = append(batch, prefetched{e, r})
		}
	}
	st.state = s
	if len(batch) > 0 {
		l.log.Debug("prefetch", "key", batch[0].ref.stored, "n", len(batch), "step", s.Step(), "window", s.Window())
		l.wg.Go(func() { l.prefetch(a, batch) })
	}
	return nil
}

// forgetIdleLocked makes room for a new stream: readers idle for a TTL go
// first, then any.
func (l *Loader) forgetIdleLocked() {
	if len(l.streams) < l.maxStreams {
		return
	}
	old := time.Now().Add(-l.ttl)
	for id, st := range l.streams {
		if st.last.Before(old) {
			delete(l.streams, id)
		}
	}
	for id := range l.streams {
		if len(l.streams) < l.maxStreams {
			break
		}
		delete(l.streams, id)
	}
}

// A prefetched chunk: its staging entry, and where it is stored.
type prefetched struct {
	e   *staged
	ref chunkRef
}

// prefetch fetches the stored values of batch concurrently and decodes
// them in a few parts, each as one batch as soon as its values are in, so
// decoding overlaps the fetches still in flight (on a remote store a fetch
// is a round trip of milliseconds). Every staged entry is filled, whatever
// happens, so no reader waits for ever.
func (l *Loader) prefetch(a *zarr.Array, batch []prefetched) {
	ctx := l.ctx
	srcs := make([][]byte, len(batch))
	errs := make([]error, len(batch))
	ready := make([]chan struct{}, len(batch)) // closed when srcs[k], errs[k] are set
	for k := range ready {
		ready[k] = make(chan struct{})
	}
	var fetches sync.WaitGroup
	fetches.Go(func() {
		for k, p := range batch {
			select {
			case l.fetch <- struct{}{}:
			case <-ctx.Done():
				errs[k] = ctx.Err()
				close(ready[k])
				continue
			}
			fetches.Go(func() {
				defer close(ready[k])
				defer func() { <-l.fetch }()
				srcs[k], errs[k] = l.encoded(ctx, a, p.ref)
			})
		}
	})
	size := (len(batch) + decodeParts - 1) / decodeParts
	for lo := 0; lo < len(batch); lo += size {
		hi := min(lo+size, len(batch))
		for k := lo; k < hi; k++ {
			<-ready[k]
		}
		l.decodePart(ctx, a, batch[lo:hi], srcs[lo:hi], errs[lo:hi])
	}
	fetches.Wait()
}

// decodeParts is how many parts a prefetch batch is decoded in.
const decodeParts = 4

// decodePart decodes one part of a prefetch batch whose values have been
// fetched (or failed to be) and fills the staging entries.
func (l *Loader) decodePart(ctx context.Context, a *zarr.Array, batch []prefetched, srcs [][]byte, errs []error) {
	var ok []prefetched
	var okSrcs [][]byte
	for k, p := range batch {
		if err := errs[k]; err != nil {
			if !errors.Is(err, iofs.ErrNotExist) && ctx.Err() == nil {
				l.prefetchErrors.Add(1)
				l.log.Debug("prefetch failed", "key", p.ref.stored, "err", err)
			}
			// A corrupt shard index is the chunk's own fault, as a
			// corrupt chunk is: a reader gets the error as it is.
			l.staging.fill(p.e, nil, err, ctx.Err() == nil && !isStoreErr(err))
			continue
		}
		ok = append(ok, p)
		okSrcs = append(okSrcs, srcs[k])
	}
	if len(ok) == 0 {
		return
	}
	refs := make([]chunkRef, len(ok))
	for k, p := range ok {
		refs[k] = p.ref
	}
	jobs := l.decode(ctx, a, refs, okSrcs)
	for k, p := range ok {
		if err := jobs[k].Err; err != nil {
			if ctx.Err() == nil {
				l.prefetchErrors.Add(1)
			}
			l.staging.fill(p.e, nil, fmt.Errorf("decode %s: %w", p.ref.stored, err), ctx.Err() == nil)
			continue
		}
		l.staging.fill(p.e, jobs[k].Dst, nil, false)
	}
}

// isStoreErr reports whether err came from reading the store (worth another
// try by a reader) rather than from the data read (not worth one).
func isStoreErr(err error) bool {
	return !errors.Is(err, codec.ErrCorrupt) && !errors.Is(err, codec.ErrChecksum)
}
