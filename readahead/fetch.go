package readahead

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"sync"
	"time"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// This file is how the Loader fetches and decodes: it locates a presented
// chunk in the store (ref), fetches what decodes into it (encoded) and
// decodes batches of chunks (decode), with no cache of its own beyond the
// shard indexes (shards.go). The Loader wraps it with its tiers and
// policy.

// A chunkRef locates one presented chunk in the store.
type chunkRef struct {
	coords []int
	stored string // key of the stored value holding it: the chunk, or its shard
	inner  int    // entry in the shard index, for a sharded array
	shard  bool   // stored is a shard
	id     string // names the chunk in the decoded tier and staging
}

// ref locates the chunk at coords of the array whose key prefix is path.
func ref(a *zarr.Array, path string, coords []int) chunkRef {
	rel, inner, sharded := a.StoredKey(coords)
	r := chunkRef{coords: coords, stored: join(path, rel), inner: inner, shard: sharded}
	r.id = r.stored
	if sharded {
		// NUL cannot occur in a key, so this names no stored value.
		r.id += "\x00" + strconv.Itoa(inner)
	}
	return r
}

func join(path, rel string) string {
	if path == "" {
		return rel
	}
	return path + "/" + rel
}

// A stored value, as encoded returns it: bytes from the store, and whether
// they are the caller's own, in a buffer from the Loader's pool of stored
// values, to give back (putStored) once decoded, rather than shared with
// the compressed tier.
type stored struct {
	b      []byte
	pooled bool
}

// encoded returns what decodes into the chunk r: the chunk's stored value,
// the inner chunk's bytes read from its shard, or, for an array with codecs
// over the whole shard, the whole stored shard. Values come from the
// compressed tier, or the store on a miss (one read per key at a time);
// without a compressed tier, a chunk's own bytes are read into a pooled
// buffer.
func (l *Loader) encoded(ctx context.Context, a *zarr.Array, r chunkRef) (stored, error) {
	switch {
	case a.WholeShard():
		b, err := l.fetchStored(ctx, r.stored)
		return stored{b: b}, err
	case !r.shard && l.keepsStored:
		b, err := l.fetchStored(ctx, r.stored)
		return stored{b: b}, err
	case !r.shard:
		b, err := l.readStored(ctx, r.stored, 0, -1)
		return stored{b: b, pooled: true}, err
	}
	// Where the store may change, the shard can be replaced between the
	// reads of its index and of the inner chunk: then the index is read
	// again, a few times at most.
	for range 3 {
		ix, err := l.shards.result(ctx, a, r.stored, -1)
		if err != nil {
			return stored{}, err
		}
		if ix.err != nil {
			return stored{}, ix.err
		}
		off, n, err := ix.ix.Entry(r.inner)
		if err != nil {
			return stored{}, &fs.PathError{Op: "shard", Path: r.stored, Err: err}
		}
		load := func(ctx context.Context) ([]byte, error) {
			b, err := l.readStored(ctx, r.stored, off, n)
			if err != nil {
				return nil, err
			}
			if same, err := l.shards.unchanged(ctx, r.stored, ix); err != nil {
				return nil, err
			} else if !same {
				return nil, errShardChanged
			}
			return b, nil
		}
		var v stored
		if l.keepsStored {
			v.b, err = l.compressed.Load(ctx, r.id, load)
		} else {
			v.b, err = load(ctx)
			v.pooled = true
		}
		if !errors.Is(err, errShardChanged) {
			return v, err
		}
		l.shards.forget(r.stored)
	}
	return stored{}, &fs.PathError{Op: "shard", Path: r.stored, Err: errShardChanged}
}

// readStored reads [off, off+n) of key's stored value (all of it when
// n < 0) from the store, into a buffer from the pool of stored values.
func (l *Loader) readStored(ctx context.Context, key string, off, n int64) ([]byte, error) {
	l.storeReads.Add(1)
	ctx, stop := l.lifetime(ctx)
	defer stop()
	defer l.timeStore(time.Now())
	return store.ReadInto(ctx, l.store, key, off, n, l.srcs.get)
}

// timeStore adds the time since start, one store read's, to the moving
// average of store latency that readahead widens its window by.
func (l *Loader) timeStore(start time.Time) {
	d := int64(time.Since(start))
	for {
		old := l.latency.Load()
		if l.latency.CompareAndSwap(old, old+(d-old)/8) {
			return
		}
	}
}

// errShardChanged: a shard was replaced in the store while one of its
// inner chunks was read (Config.Changing).
var errShardChanged = errors.New("the shard changed while it was read")

// raw reports whether a's stored values are its decoded chunks (no codec
// but the bytes layout, and no codec over whole shards).
func raw(a *zarr.Array) bool {
	_, ok := a.Decoder().(codec.Raw)
	return ok && !a.WholeShard()
}

// openStored opens the stored file of chunk r when the Loader keeps chunks
// in files, r is stored uncompressed and unsharded, and the store can open
// its files: the stored file is the chunk, and the kernel reads it through
// passthrough without a copy. ok is false when r must be loaded instead
// (including a stored file of the wrong size, which then fails to decode
// as any short chunk does).
func (l *Loader) openStored(ctx context.Context, a *zarr.Array, r chunkRef) (c *chunk, ok bool, err error) {
	if !l.servesStored(a) {
		return nil, false, nil
	}
	f, err := l.store.(store.FileOpener).OpenKey(ctx, r.stored)
	if err != nil {
		return nil, true, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != a.ChunkLen() {
		f.Close()
		return nil, false, nil
	}
	l.storedOpens.Add(1)
	return fileChunk(f, fi.Size(), nil), true, nil
}

// servesStored reports whether a's chunks are opened as stored (see
// openStored): there is nothing to decode ahead, then, and nothing to keep.
func (l *Loader) servesStored(a *zarr.Array) bool {
	_, ok := l.store.(store.FileOpener)
	return ok && l.files.Load() && a.Shard() == nil && raw(a)
}

// decode decodes the chunks refs of a from srcs (as encoded returned them)
// in one batch, as a's route says, and records the time (the one
// measurement of it: Stats.Decode and Config.Decoded). Each chunk
// comes back with one reference, the caller's, or with the reason it did
// not decode to exactly ChunkLen bytes. Chunks are decoded into buffers
// from the pool, or, with Config.Files, straight into the mapped files
// that will hold them (memFiles). Pooled stored values go back to their
// pool once decoded (or, for a raw array on the heap, with their chunk).
func (l *Loader) decode(ctx context.Context, a *zarr.Array, refs []chunkRef, srcs []stored) ([]*chunk, []error) {
	route := l.route(a)
	isRaw, files := route.Decoder == "none", l.files.Load()
	b := l.destinations(a, srcs, isRaw, files)
	start := time.Now()
	runBatch(ctx, a, route, refs, b.jobs)
	took := time.Since(start)
	if l.onDecoded != nil && route.Decoder != "none" {
		l.onDecoded(a, route, took)
	}
	for _, m := range b.maps {
		unmap(m)
	}
	cs, errs, bytes, bad := l.results(a, b, srcs, isRaw, files)
	l.decodes.add(a.Codecs, DecodeStats{Batches: 1, Chunks: int64(len(refs)) - bad, Bytes: bytes, Errors: bad, Time: took})
	return cs, errs
}

// A decodeBatch is one batch's jobs and what each decodes into.
type decodeBatch struct {
	jobs     []codec.Job
	bufs     [][]byte   // from the pool, for heap chunks of a compressed array
	mfs      []*memFile // with Config.Files: the files decoded into
	maps     [][]byte   // their mappings, dropped once decoded
	fileErrs []error    // why a file could not be had
}

// destinations makes a job for each stored value of srcs, with where it
// decodes into: a pooled buffer, a mapped file, or (raw on the heap) the
// stored value itself.
func (l *Loader) destinations(a *zarr.Array, srcs []stored, isRaw, files bool) decodeBatch {
	n, size := len(srcs), a.ChunkLen()
	b := decodeBatch{jobs: make([]codec.Job, n), bufs: make([][]byte, n), mfs: make([]*memFile, n), maps: make([][]byte, n), fileErrs: make([]error, n)}
	for i := range b.jobs {
		j := &b.jobs[i]
		j.Src = srcs[i].b
		switch {
		case files:
			b.mfs[i], b.fileErrs[i] = l.mfiles.get(size)
			if b.fileErrs[i] == nil {
				b.maps[i], b.fileErrs[i] = b.mfs[i].mapped()
			}
			if b.fileErrs[i] != nil {
				continue // no room to decode into: the decoder fails it
			}
			j.Dst = b.maps[i][:0:size]
			if isRaw {
				j.Dst = append(j.Dst, srcs[i].b[:min(int64(len(srcs[i].b)), size)]...)
			}
		case isRaw:
			// Stored uncompressed: the stored value is the chunk. Values
			// are immutable, so it is served as is, without a copy.
			j.Dst = srcs[i].b
		default:
			b.bufs[i] = l.bufs.get(int(size))
			j.Dst = b.bufs[i][:0]
		}
	}
	return b
}

// runBatch decodes jobs as route says: not at all (raw), each cut from
// its whole shard, or as one batch of the route's decoder.
func runBatch(ctx context.Context, a *zarr.Array, route Route, refs []chunkRef, jobs []codec.Job) {
	switch {
	case route.Decoder == "none":
	case route.Shards == "whole-shard":
		// Codecs over the whole shard: each chunk is cut from its shard.
		for i := range jobs {
			jobs[i].Dst, jobs[i].Err = a.DecodeFromShard(jobs[i].Dst, jobs[i].Src, refs[i].coords)
		}
	default:
		if err := route.Batch.DecodeBatch(ctx, jobs); err != nil {
			for i := range jobs {
				if jobs[i].Err == nil && len(jobs[i].Dst) == 0 {
					jobs[i].Err = err // not reached
				}
			}
		}
	}
}

// results turns the decoded jobs of b into chunks, or the reason each is
// not exactly ChunkLen bytes, and gives back what the failed ones held and
// the pooled stored values no chunk keeps. It returns the bytes decoded
// and the chunks that failed.
func (l *Loader) results(a *zarr.Array, b decodeBatch, srcs []stored, isRaw, files bool) (cs []*chunk, errs []error, bytes, bad int64) {
	n, size := len(b.jobs), a.ChunkLen()
	cs, errs = make([]*chunk, n), make([]error, n)
	for i := range b.jobs {
		j := &b.jobs[i]
		errs[i] = cmp.Or(b.fileErrs[i], j.Err)
		if errs[i] == nil && int64(len(j.Dst)) != size {
			errs[i] = fmt.Errorf("%w: decoded %d bytes, want %d", codec.ErrCorrupt, len(j.Dst), size)
		}
		held := srcs[i].pooled && isRaw && !files // the chunk is its pooled stored value
		switch {
		case errs[i] != nil:
			bad++
			held = false
			if b.mfs[i] != nil && b.fileErrs[i] == nil {
				l.mfiles.put(b.mfs[i])
			}
			l.bufs.put(b.bufs[i])
		case files:
			cs[i] = memChunk(b.mfs[i], l.mfiles)
		case b.bufs[i] != nil:
			cs[i] = heapChunk(j.Dst, l.bufs)
		case held:
			cs[i] = heapChunk(j.Dst, l.srcs)
		default:
			cs[i] = heapChunk(j.Dst, nil)
		}
		if errs[i] == nil {
			bytes += size
		}
		if srcs[i].pooled && !held {
			l.srcs.put(srcs[i].b) // decoded, failed, or copied to its file
		}
	}
	return cs, errs, bytes, bad
}

// routes holds the routes of the arrays read lately, decided once per
// array. Under zfuse --refresh every metadata read is a new *zarr.Array,
// so a table keeping them all would grow for the life of the mount; at
// maxRoutes arrays it starts over instead (a route is cheap to decide
// again).
type routes struct {
	mu sync.Mutex // guards m
	m  map[*zarr.Array]Route
}

// maxRoutes bounds the arrays routes holds routes for.
const maxRoutes = 1024

// route returns a's route (RouteOf), decided once per array (see routes).
func (l *Loader) route(a *zarr.Array) Route {
	rs := &l.routes
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.m[a]
	if !ok {
		if rs.m == nil || len(rs.m) >= maxRoutes {
			rs.m = map[*zarr.Array]Route{}
		}
		r = RouteOf(a, l.decoder)
		rs.m[a] = r
	}
	return r
}

// len returns the arrays rs holds routes for.
func (rs *routes) len() int64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return int64(len(rs.m))
}
