package readahead

import "iter"

// A Policy decides which chunks to prefetch for one reader of one array.
// It is a pure value: Next maps the reader's State and its latest read to a
// new State and a Plan, and keeps no state of its own, so the caller decides
// where states live (the Loader keeps one per array and reader process) and
// the rules can be tested as a table.
//
// Reads are indices in linear chunk-index space (C order over the chunk
// grid). A pattern is a constant step: +1 is a sequential scan; a larger
// step is a walk along a slower axis (axis 0 of a 3-D grid steps by the
// product of the other grid dimensions); a negative step walks backwards. A
// pattern is seen when the last three distinct reads, sorted, are evenly
// spaced: reads that arrive slightly out of order (the kernel, parallel
// workers) still form the pattern. Once seen, a read continues it if it lies
// on the pattern's lattice within Slack steps of the furthest read so far;
// any other read ends it, and there is no prefetch until a new pattern is
// seen, so random reads prefetch nothing.
//
// Readers of Zarr arrays index axis 0 (a sample, a time step): zarr-python's
// a[i] reads the chunks of slab i (those with grid coordinate i on axis 0)
// one after the other. A reader that has read one slab whole, in order, is
// taken to read whole slabs: at the first chunk of each slab it begins,
// with no pattern holding, the rest of that slab is planned (up to
// MaxWindow chunks). That serves readers that jump from slab to slab at
// random (a shuffled DataLoader), which no pattern covers; a reader of one
// chunk per slab (a slice a[i, :10]) never confirms, and is planned
// nothing. While such a reader jumps (it did not go on from a slab it read
// whole to the next), a pattern it follows inside a slab plans no further
// than the slab's end: what lies beyond is another reader's, or no one's.
//
// While a pattern holds, the Policy keeps Window chunks planned ahead of the
// furthest read. The window starts at MinWindow and doubles, up to
// MaxWindow, each time the plan is topped up and each time the reader had to
// wait for a chunk; Cut halves it when the caller could not take a whole
// plan (the readahead budget is full). Plans are topped up in batches, once
// half the window has been consumed, so decoders get batches to work on.
// The zero Policy uses the defaults.
type Policy struct {
	MinWindow int64 // chunks planned ahead when a pattern is first seen; 0 means 2
	MaxWindow int64 // most chunks planned ahead; 0 means 64
	Slack     int64 // reordering tolerated, in steps; 0 means 4
	// Backfill keeps the chunks a read skips past (within Slack) in the
	// plan, for a reader whose reads all come, only out of order: the
	// kernel's readahead of a flat file reaches the Loader through one
	// queue per CPU, so a reader that moved to another CPU has its later
	// reads served before earlier ones still queued (flatPolicy). Without
	// it, a read that overtakes the plan moves the plan past them, and
	// each is decoded only when its read arrives, while that read waits.
	Backfill bool
}

// A State is what a Policy remembers about one reader. The zero State is a
// reader that has read nothing.
type State struct {
	slabs   slabs    // the reader's reads of whole slabs; kept when a pattern ends
	recent  [3]int64 // last distinct reads while no pattern holds, oldest first
	n       int      // valid entries of recent
	step    int64    // the pattern's step; 0 while no pattern holds
	head    int64    // furthest read along step
	planned int64    // furthest index planned along step (head when none)
	window  int64    // chunks to keep planned ahead of head
	refills int      // plans made since the pattern was seen
	cut     bool     // the last plan was cut short: do not grow on the next
}

// Step returns the step of the pattern the reader follows, 0 if none.
func (s State) Step() int64 { return s.step }

// Window returns the number of chunks the policy keeps planned ahead.
func (s State) Window() int64 { return s.window }

// An Access is one read reported to Next.
type Access struct {
	Index  int64 // linear index of the chunk read
	Len    int64 // number of chunks in the grid; plans stay in [0, Len)
	Slab   int64 // chunks in a slab (one grid index of axis 0); 0 or 1: no slabs (a 1-D grid)
	Waited bool  // the chunk was not ready: the reader waited for a load or decode
}

// slabs is what a State remembers of a reader's reads of whole slabs.
type slabs struct {
	cur   int64 // 1 + the slab being read in order from its first chunk; 0: none
	next  int64 // the offset in it of the next chunk an in-order read takes
	whole int   // slabs read whole in order, up to maxWhole; one confirms
	done  int64 // 1 + the last slab read whole; 0: none
	onto  bool  // the slab being read began right after the one read whole before it
}

// jumps reports whether the reader reads whole slabs but not one after the
// other.
func (t slabs) jumps() bool { return t.whole > 0 && !t.onto }

const maxWhole = 4

// read records read a and returns the rest of a's slab to plan, when a is
// the first chunk of a slab and the reader has read whole slabs; else an
// empty plan.
func (t slabs) read(a Access, max int64) (slabs, Plan) {
	if a.Slab <= 1 || a.Len%a.Slab != 0 {
		return t, Plan{}
	}
	slab, off := a.Index/a.Slab, a.Index%a.Slab
	switch {
	case off == 0:
		t.cur, t.next, t.onto = slab+1, 1, t.done == slab && slab > 0
		if t.whole > 0 {
			return t, Plan{From: a.Index + 1, Step: 1, N: min(a.Slab-1, max)}
		}
	case t.cur == slab+1 && off == t.next:
		if t.next++; t.next == a.Slab {
			t.cur, t.whole, t.done = 0, min(t.whole+1, maxWhole), slab+1
		}
	case t.cur == slab+1 && off < t.next:
		// A chunk of this slab again (one read per FUSE request).
	default:
		// Out of order: not a whole slab; trust in slabs wanes.
		t.cur, t.whole = 0, t.whole-1
		if t.whole < 0 {
			t.whole = 0
		}
	}
	return t, Plan{}
}

// A Plan is the chunks to prefetch: N indices From, From+Step, ... It is
// empty when N is 0.
type Plan struct {
	From, Step, N int64
}

// Index returns the k-th index of the plan.
func (p Plan) Index(k int64) int64 { return p.From + k*p.Step }

// All yields the plan's indices in order.
func (p Plan) All() iter.Seq[int64] {
	return func(yield func(int64) bool) {
		for k := range p.N {
			if !yield(p.Index(k)) {
				return
			}
		}
	}
}

func (p Policy) withDefaults() Policy {
	if p.MinWindow <= 0 {
		p.MinWindow = 2
	}
	if p.MaxWindow <= 0 {
		p.MaxWindow = 64
	}
	p.MaxWindow = max(p.MaxWindow, p.MinWindow)
	if p.Slack <= 0 {
		p.Slack = 4
	}
	return p
}

// Next records the read a and returns the reader's new state and the chunks
// to prefetch now. Reads outside [0, a.Len) are ignored.
func (p Policy) Next(s State, a Access) (State, Plan) {
	p = p.withDefaults()
	if a.Index < 0 || a.Index >= a.Len {
		return s, Plan{}
	}
	var slab Plan
	s.slabs, slab = s.slabs.read(a, p.MaxWindow)
	end := a.Len
	if s.slabs.jumps() {
		end = (a.Index/a.Slab + 1) * a.Slab
	}
	s, pl := p.pattern(s, a, end)
	if s.step == 0 && pl.N == 0 {
		pl = slab
	}
	return s, pl
}

// pattern is Next for the patterns of constant step; a forward one plans
// nothing at or past end.
func (p Policy) pattern(s State, a Access, end int64) (State, Plan) {
	i := a.Index
	if s.step != 0 {
		if !s.continues(i, p.Slack) {
			return State{slabs: s.slabs, recent: [3]int64{i}, n: 1}, Plan{} // random: start over
		}
		if (i-s.head)/s.step > 0 {
			s.head = i
			if (s.planned-s.head)/s.step < 0 && !p.Backfill { // the reader overtook the plan
				s.planned = s.head
			}
		}
		if a.Waited && !s.cut {
			s.window = min(2*s.window, p.MaxWindow)
		}
		return p.refill(s, a.Len, end)
	}
	for _, r := range s.recent[:s.n] {
		if r == i {
			return s, Plan{} // the same chunk again (one read per FUSE request)
		}
	}
	if s.n == len(s.recent) {
		copy(s.recent[:], s.recent[1:])
		s.n--
	}
	s.recent[s.n] = i
	s.n++
	step, lo, hi, ok := evenlySpaced(s.recent[:s.n])
	if !ok {
		return s, Plan{}
	}
	// The direction is where the newest read lies: a forward reader's latest
	// read is the highest or near it.
	mean := lo + (hi-lo)/2
	if i >= mean {
		s.step, s.head = step, hi
	} else {
		s.step, s.head = -step, lo
	}
	s.planned, s.window, s.refills = s.head, p.MinWindow, 0
	s.n = 0
	return p.refill(s, a.Len, end)
}

// continues reports whether i lies on the pattern within slack steps of head.
func (s State) continues(i, slack int64) bool {
	d := i - s.head
	return d%s.step == 0 && d/s.step >= -slack && d/s.step <= slack
}

// evenlySpaced reports whether the distinct reads xs, sorted, are evenly
// spaced with a positive step, and returns it with their range.
func evenlySpaced(xs []int64) (step, lo, hi int64, ok bool) {
	if len(xs) < 3 {
		return 0, 0, 0, false
	}
	a, b, c := xs[0], xs[1], xs[2]
	// Sort three values.
	if a > b {
		a, b = b, a
	}
	if b > c {
		b, c = c, b
	}
	if a > b {
		a, b = b, a
	}
	if b-a != c-b || b == a {
		return 0, 0, 0, false
	}
	return b - a, a, c, true
}

// refill tops the plan up to window chunks ahead of head once half of it
// has been consumed, growing the window on every refill but the first; a
// forward plan stays below end, a backward one at or above 0. With
// Backfill the plan may lie behind head: the chunks between are planned
// too.
func (p Policy) refill(s State, n, end int64) (State, Plan) {
	ahead := (s.planned - s.head) / s.step
	if ahead > s.window/2 {
		return s, Plan{}
	}
	if s.refills > 0 && !s.cut {
		s.window = min(2*s.window, p.MaxWindow)
	}
	s.refills++
	s.cut = false
	// room: steps left in the grid beyond planned.
	var room int64
	if s.step > 0 {
		room = (min(n, end) - 1 - s.planned) / s.step
	} else {
		room = s.planned / -s.step
	}
	k := min(s.window-ahead, room)
	if k <= 0 {
		return s, Plan{}
	}
	pl := Plan{From: s.planned + s.step, Step: s.step, N: k}
	s.planned += k * s.step
	return s, pl
}

// Cut tells the policy that the caller prefetched only the first taken
// chunks of pl (the last plan Next returned for s), because the readahead
// budget is full. The rest will be planned again later, and the window
// halves, down to MinWindow.
func (p Policy) Cut(s State, pl Plan, taken int64) State {
	p = p.withDefaults()
	if s.step == 0 || pl.N == 0 || taken >= pl.N || pl.Step != s.step {
		return s
	}
	taken = max(taken, 0)
	s.planned = pl.From + (taken-1)*pl.Step
	s.window = max(s.window/2, p.MinWindow)
	s.cut = true
	return s
}
