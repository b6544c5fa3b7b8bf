package readahead

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zfuse/zfuse/cache"
	"github.com/zfuse/zfuse/zarr"
)

// This file is the Loader's table of readers: one stream per array and
// reader process, with what the Policy remembers of it in chunk-grid order
// and in name order, and the planning that turns a read into a prefetch.

// readers is the Loader's stream table. Its lock also guards closed: no
// prefetch starts once the Loader is closing.
type readers struct {
	max int           // immutable: streams remembered
	ttl time.Duration // immutable: a stream idle this long may be forgotten

	// orders holds the name orders computed lately, by grid (orderKey):
	// arrays re-read with the same grid (zfuse --refresh) share one, and
	// at most maxOrderBytes of them are kept, the streams reading in one
	// keeping theirs.
	orders *cache.LRU[*nameOrder]

	mu     sync.Mutex // guards the fields below
	closed bool
	m      map[streamID]*stream
}

func (r *readers) init(max int, ttl time.Duration) {
	if max <= 0 {
		max = 4096
	}
	r.max, r.ttl = max, ttl
	r.m = map[streamID]*stream{}
	r.orders = cache.NewLRU(cache.LRUConfig[*nameOrder]{MaxBytes: maxOrderBytes, MaxItems: maxOrders, Size: (*nameOrder).size})
}

// maxOrderBytes and maxOrders bound the name orders readers keeps: two of
// the largest (maxNameOrder chunks), or many small ones.
const (
	maxOrderBytes = 2 * 8 * maxNameOrder
	maxOrders     = 256
)

// orderKey names what a's name order depends on: its grid and how its
// chunk keys are written.
func orderKey(a *zarr.Array) string {
	return fmt.Sprintf("%q %q %v", a.KeyPrefix(), a.Separator, a.Grid())
}

// order returns a's name order (nil if it has too many chunks), computed
// once per grid while it is kept.
func (r *readers) order(a *zarr.Array) *nameOrder {
	o, _ := r.orders.Load(context.Background(), orderKey(a), func(context.Context) (*nameOrder, error) {
		return newNameOrder(a), nil
	})
	return o
}

// close marks the Loader closed; it reports false if it already was.
func (r *readers) close() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.closed
	r.closed = true
	return !was
}

// A streamID names one reader of one array.
type streamID struct {
	path string
	pid  uint32
}

// A stream is what the policy remembers about one reader: its state in
// chunk-grid order, and in name order for readers that follow no pattern
// in grid order (see nameOrder).
type stream struct {
	state   State
	named   State       // in order, once known
	order   *nameOrder  // the array's name order, once misses reached 3
	noOrder bool        // the array has too many chunks for a name order
	of      *zarr.Array // the array whose reads these are
	misses  int         // reads that were on no grid pattern
	// Reads in a row on which state and named had a pattern.
	gridRun, namedRun int
	last              time.Time // last read, to forget idle readers
	// Chunks planned while placing (SetPlacer), in the order planned and
	// not yet read: a read of one of them tells that the reader has read
	// those before it, placed or not.
	pending []pendingChunk
}

// A pendingChunk is a chunk planned while placing: its linear index and its
// key in staging.
type pendingChunk struct {
	i  int64
	id string
}

// maxPending bounds a stream's pending chunks, with four windows' worth:
// a reader that stops following its pattern leaves them behind.
const maxPending = 256

// run extends a count of reads in a row on a pattern with a read that left
// the reader in state s.
func run(n int, s State) int {
	if s.Step() == 0 {
		return 0
	}
	return n + 1
}

// A reading says how a read counts for readahead.
type reading int

const (
	chunkRead  reading = iota // of a chunk file: planned by Config.Policy, in grid and name order
	flatRead                  // of the flat layout, covering the chunk's first run (flat.go)
	unrecorded                // served, not recorded: flat reads of other runs
)

// plan records a read of chunk i by pid and starts prefetching what the
// policy predicts.
func (l *Loader) plan(a *zarr.Array, path string, pid uint32, i int64, waited bool, how reading) error {
	r := &l.readers
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if how == unrecorded {
		return nil
	}
	id := streamID{path, pid}
	st := r.m[id]
	if st == nil {
		r.forgetIdleLocked()
		st = &stream{of: a}
		r.m[id] = st
	}
	if st.of != a {
		// The array at path was read again, changed (zfuse --refresh):
		// its name order, and where the reader is in it, start over.
		*st = stream{of: a}
	}
	if how == flatRead {
		st.noOrder = true // a flat reader names no chunk files
	}
	if st.order == nil && !st.noOrder && st.misses >= 3 {
		// A reader with no grid pattern: compute the array's name order,
		// once per grid, outside the lock (it sorts every key).
		r.mu.Unlock()
		o := r.order(a)
		r.mu.Lock()
		if r.closed {
			return ErrClosed
		}
		st.order, st.noOrder = o, o == nil
	}
	pol := l.policyFor(a)
	if how == flatRead {
		pol = flatPolicy(pol, a, pol.MaxWindow > l.policy.withDefaults().MaxWindow)
	}
	l.readPlacedLocked(a, path, st, i, pol)
	l.planLocked(a, path, st, i, waited, pol)
	return nil
}

// readPlacedLocked tells the policy, when the reader reads chunk i, that it
// has read the chunks planned before i and placed: their reads never reach
// the Loader (the kernel has their pages). They leave the readahead budget.
func (l *Loader) readPlacedLocked(a *zarr.Array, path string, st *stream, i int64, pol Policy) {
	k := slices.IndexFunc(st.pending, func(p pendingChunk) bool { return p.i == i })
	if k < 0 {
		return
	}
	before := st.pending[:k]
	st.pending = st.pending[k+1:]
	for _, p := range before {
		if l.staging.confirm(p.id) {
			l.planLocked(a, path, st, p.i, false, pol)
		}
	}
}

// planLocked is plan with l.readers.mu held, planning with pol.
func (l *Loader) planLocked(a *zarr.Array, path string, st *stream, i int64, waited bool, pol Policy) {
	pl, named, index := st.next(a, i, waited, pol)
	if l.servesStored(a) {
		return // nothing to decode ahead: the kernel reads the stored files
	}
	var batch []prefetched
	for k := range pl.N {
		i := index(pl.Index(k))
		r := ref(a, path, a.Coords(i))
		// A reader's load has it (without a compressed tier, a prefetch
		// would read it again), or the kernel has its pages (handed.go).
		if l.decoded.Has(r.id) || l.decoded.Loading(r.id) || l.handed.Has(r.id) {
			continue
		}
		e, res := l.staging.reserve(r.id, a.ChunkLen())
		if res == full {
			if named {
				st.named = pol.Cut(st.named, pl, k)
			} else {
				st.state = pol.Cut(st.state, pl, k)
			}
			break
		}
		if res == reserved {
			batch = append(batch, prefetched{e: e, ref: r, i: i})
		}
	}
	if len(batch) == 0 {
		return
	}
	if l.placer.Load() != nil {
		l.markPlaced(st, batch)
	}
	l.log.Debug("prefetch", "key", batch[0].ref.stored, "n", len(batch), "named", named)
	l.wg.Go(func() { l.prefetch(a, path, batch) })
}

// next records the read of chunk i (a linear index) of a in st and
// returns the plan that follows it: in grid order, or in name order where
// that order's pattern has held longer, named then true and index mapping
// the plan's positions to linear indexes (else the identity).
func (st *stream) next(a *zarr.Array, i int64, waited bool, policy Policy) (pl Plan, named bool, index func(int64) int64) {
	st.last = time.Now()
	s, pl := policy.Next(st.state, Access{Index: i, Len: a.NumChunks(), Slab: slabLen(a), Waited: waited})
	st.state = s
	st.gridRun = run(st.gridRun, s)
	if s.Step() == 0 && st.named.Step() == 0 {
		st.pending = st.pending[:0] // the reader left its pattern: its placed chunks expire unread
	}
	if s.Step() == 0 {
		st.misses++
	}
	index = func(p int64) int64 { return p }
	if order := st.order; order != nil {
		// Both orders make short runs of the other now and then (a reader
		// in listing order reads "0.10", "0.11", "0.12"): the order whose
		// pattern has held longer plans.
		ns, npl := policy.Next(st.named, Access{Index: int64(order.pos[i]), Len: a.NumChunks(), Waited: waited})
		st.namedRun = run(st.namedRun, ns)
		// The plan not taken is cut to nothing, so that its state does not
		// count those chunks as planned.
		if st.namedRun > st.gridRun {
			st.state = policy.Cut(st.state, pl, 0)
			pl, named = npl, true
			index = func(p int64) int64 { return int64(order.lin[p]) }
		} else {
			ns = policy.Cut(ns, npl, 0)
		}
		st.named = ns
	}
	return pl, named, index
}

// slabLen returns the chunks of one grid index of a's axis 0 (Access.Slab),
// 0 for a 1-D grid.
func slabLen(a *zarr.Array) int64 {
	g := a.Grid()
	if len(g) < 2 || g[0] <= 0 {
		return 0
	}
	return a.NumChunks() / int64(g[0])
}

// markPlaced chooses which chunks of batch to place: all but every
// quarter window's one and the last, which stay staged so that their
// reads reach the Loader; and records them all as pending for st.
func (l *Loader) markPlaced(st *stream, batch []prefetched) {
	w := st.state.Window()
	if st.namedRun > st.gridRun {
		w = st.named.Window()
	}
	every := max(w/4, 1)
	for k := range batch {
		batch[k].place = k < len(batch)-1 && int64(k+1)%every != 0
		st.pending = append(st.pending, pendingChunk{batch[k].i, batch[k].ref.id})
	}
	if n := int64(len(st.pending)) - max(maxPending, 4*w); n > 0 {
		st.pending = slices.Delete(st.pending, 0, int(n))
	}
}

// aheadRate is the rate readahead plans to keep up with, in bytes per
// second: about what the decoders of a few cores deliver. Over a store
// with latency L a reader at that rate needs aheadRate·L bytes in flight.
const aheadRate = 2e9

// policyFor returns the Policy for a's readers: the Loader's, with its
// largest window widened to cover the latency the store shows (a remote
// store: 20 ms is 40 MB at aheadRate, 610 chunks of 64 KiB), as
// mountpoint-s3 and gcsfuse ramp their prefetch; within half the readahead
// budget, and twice the store reads the Loader has in flight (beyond that,
// a read's time is mostly its wait for a turn, which a wider window would
// only lengthen).
func (l *Loader) policyFor(a *zarr.Array) Policy {
	p := l.policy.withDefaults()
	size := max(a.ChunkLen(), 1)
	need := int64(aheadRate*time.Duration(l.latency.Load()).Seconds()) / size
	room := min(l.staging.budget()/2/size, 2*int64(cap(l.fetch)))
	p.MaxWindow = max(p.MaxWindow, min(need, room))
	return p
}

// forgetIdleLocked makes room for a new stream: readers idle for a TTL go
// first, then any.
func (r *readers) forgetIdleLocked() {
	if len(r.m) < r.max {
		return
	}
	old := time.Now().Add(-r.ttl)
	for id, st := range r.m {
		if st.last.Before(old) {
			delete(r.m, id)
		}
	}
	for id := range r.m {
		if len(r.m) < r.max {
			break
		}
		delete(r.m, id)
	}
}
